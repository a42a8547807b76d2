# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions about a containerd configuration, as pure functions (no I/O, standard library only).

The TOML document itself is edited on the controller (``plugin_utils/containerd_toml.py``);
everything here takes and returns plain values so both sides and the unit tests can use it.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re

DEFAULT_PATH = "/etc/containerd/config.toml"
DEFAULT_INSTALL_DIR = "/usr/local/nvidia/toolkit"
DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
FALLBACK_VERSION = 2

# config version -> keys of the CRI table that holds ``containerd.runtimes``.
CRI_TABLES = {
    1: ("plugins", "cri"),
    2: ("plugins", "io.containerd.grpc.v1.cri"),
    3: ("plugins", "io.containerd.cri.v1.runtime"),
    4: ("plugins", "io.containerd.cri.v1.runtime"),
}
KNOWN_VERSIONS = tuple(sorted(CRI_TABLES))

# Where containerd's binary may be on a node, asked for ``--version`` when the file has no version.
CONTAINERD_BINARIES = (
    "/usr/bin/containerd",
    "/usr/local/bin/containerd",
    "/usr/sbin/containerd",
    "/bin/containerd",
    "/home/kubernetes/bin/containerd",
)

UNSET = "(unset)"
# The key was unset in a table that had a header of its own but no keys: ``absent`` keeps the header.
UNSET_HEADER_KEPT = "(unset; header kept)"
# Inline comment on a value this module replaced: the old value (as written) follows it.
PREVIOUS_MARKER = "gpu_node.container_toolkit previous value:"
# Inline comment on keys and tables this module created only to keep the config working
# (``version`` of an empty file, ``imports``, a ``runc`` entry); ``state: absent`` removes them.
ADDED_MARKER = "added by gpu_node.container_toolkit.containerd_runtime"

RUNTIME_SUFFIXES = (("nvidia", ""), ("nvidia-cdi", ".cdi"), ("nvidia-legacy", ".legacy"))


class ConfigError(ValueError):
    """The configuration cannot be edited as asked; the message says why and what to set."""


def cri_table(version):
    """Keys of the CRI table for config ``version``."""
    try:
        return CRI_TABLES[version]
    except (KeyError, TypeError):
        raise ConfigError(
            "containerd config version %r is not supported by this module (known: %s)"
            % (version, ", ".join(str(v) for v in KNOWN_VERSIONS))
        ) from None


def dotted(keys):
    """``plugins."io.containerd.grpc.v1.cri".containerd`` for messages."""
    return ".".join(k if re.match(r"^[A-Za-z0-9_-]+$", k) else '"%s"' % k for k in keys)


def containerd_table(version):
    return cri_table(version) + ("containerd",)


def runtimes_table(version):
    return containerd_table(version) + ("runtimes",)


def file_version(value):
    """The config version a parsed file declares: no ``version`` key (None) means 1."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError("containerd config 'version' must be an integer, got %r" % (value,))
    cri_table(value)
    return value


_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)")


def containerd_release(output):
    """(major, minor) from ``containerd --version`` output, or None when it cannot be read.

    ``containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3`` -> (1, 6);
    ``containerd github.com/containerd/containerd/v2 v2.0.11 <sha>`` -> (2, 0).
    """
    if not output or not output.strip():
        return None
    for word in output.strip().splitlines()[0].split()[1:]:
        if "/" in word:
            continue
        match = _VERSION_RE.match(word)
        if match:
            return int(match.group(1)), int(match.group(2))
    return None


def version_for_release(release):
    """Config version containerd ``release`` writes: 1.x -> 2, 2.0-2.2 -> 3, 2.3+ -> 4."""
    major, minor = release
    if major < 2:
        return 2
    if major == 2 and minor < 3:
        return 3
    return 4


def choose_version(requested, declared, file_empty, containerd_output=None):
    """The config version to edit, and where it came from.

    ``requested``: the option (``auto`` or 1-4). ``declared``: the file's ``version`` value
    (None when absent). ``file_empty``: the file is missing or blank, so its version can be
    chosen. ``containerd_output``: ``containerd --version`` on the node, if any.
    """
    if not file_empty:
        version = file_version(declared)
        if requested not in (None, "auto") and int(requested) != version:
            raise ConfigError(
                "config_version %s was asked for but the file declares version %s; "
                "this module does not migrate configs (use config_version: auto)" % (requested, version)
            )
        return version, "file" if declared is not None else "file (no version key means 1)"
    if requested not in (None, "auto"):
        version = int(requested)
        cri_table(version)
        return version, "config_version option"
    release = containerd_release(containerd_output)
    if release:
        return version_for_release(release), "containerd %d.%d on the node" % release
    return FALLBACK_VERSION, "default (containerd not found on the node)"


def default_runtimes(install_dir):
    """The runtimes registered by default: nvidia, nvidia-cdi, nvidia-legacy in ``install_dir``."""
    base = posixpath.join(install_dir, "nvidia-container-runtime")
    return [{"name": name, "binary": base + suffix} for name, suffix in RUNTIME_SUFFIXES]


def normalize_runtimes(runtimes, install_dir):
    """Validate the ``runtimes`` option; empty -> the defaults."""
    if not runtimes:
        return default_runtimes(install_dir)
    result = []
    seen = set()
    for entry in runtimes:
        name = entry.get("name")
        binary = entry.get("binary")
        if not name or not binary:
            raise ConfigError("each entry of runtimes needs 'name' and 'binary', got %r" % (entry,))
        if name in seen:
            raise ConfigError("runtime %r is listed twice in runtimes" % name)
        seen.add(name)
        result.append({"name": name, "binary": binary})
    return result


def choose_template(existing, default_runtime_name, managed):
    """The runtime a new runtime starts as a copy of, or None.

    The existing default runtime when it is not one of ours, else ``runc``, else ``crun``:
    ``SystemdCgroup`` and other options are inherited that way.
    """
    if default_runtime_name and default_runtime_name in existing and default_runtime_name not in managed:
        return default_runtime_name
    for name in ("runc", "crun"):
        if name in existing and name not in managed:
            return name
    return None


def needs_default_entry(existing, default_runtime_name, managed):
    """True when adding runtimes would make containerd's built-in ``runc`` vanish.

    A ``runtimes`` table in the file replaces containerd's built-in one. When the default
    runtime is (implicitly) ``runc`` and the file has no entry for it, an explicit ``runc``
    entry is needed; any other missing default is the user's business and is left alone.
    """
    default = default_runtime_name or "runc"
    return default == "runc" and "runc" not in existing and "runc" not in managed


def import_covered(imports, drop_in):
    """True when an entry of ``imports`` already names ``drop_in`` (exactly or by a glob)."""
    return any(entry == drop_in or fnmatch.fnmatch(drop_in, entry) for entry in imports or ())


def check_drop_in(path, drop_in, imports=()):
    """Refuse a drop-in that is the root file itself or that an import glob would make the root."""
    if posixpath.normpath(path) == posixpath.normpath(drop_in):
        raise ConfigError("drop_in %s is the root config itself; set drop_in to another path" % drop_in)


def drop_in_carries_cri_table(version):
    """Whether the drop-in must hold the whole CRI table.

    containerd before 2.1 replaces, rather than merges, a plugin's table from ``imports``
    (seen with 1.6.20: a drop-in holding only ``runtimes.nvidia`` loses ``runc``, the
    ``sandbox_image`` and the CNI ``bin_dir``). Versions 1-3 may be read by such a containerd;
    version 4 (containerd 2.3 and later) merges.
    """
    return version < 4


def _table(data, keys):
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data if isinstance(data, dict) else None


def already_done(data, text, params):
    """True when the parsed root config ``data`` (plain data) needs no edit for ``params``.

    A fast, conservative check for the common re-run: it answers True only when nothing can
    change; anything it is unsure about (drop-in mode, recorded values to restore, a version
    to choose, a ``runc`` entry that may be needed) is left to the full edit.
    """
    if params.get("drop_in") or not data or params.get("config_version") not in (None, "auto"):
        return False
    try:
        version = file_version(data.get("version"))
    except ConfigError:
        return False
    cri = _table(data, cri_table(version))
    containerd = _table(cri, ("containerd",)) if cri is not None else None
    runtimes = _table(containerd, ("runtimes",)) if containerd is not None else None
    names = [r["name"] for r in params["runtimes"]]
    if params.get("state") == "absent":
        return PREVIOUS_MARKER not in text and ADDED_MARKER not in text and \
            not any(name in (runtimes or {}) for name in names)
    if runtimes is None:
        return False
    for entry in params["runtimes"]:
        runtime = runtimes.get(entry["name"])
        options = runtime.get("options") if isinstance(runtime, dict) else None
        if not isinstance(options, dict) or runtime.get("runtime_type") != params["runtime_type"]:
            return False
        keys = ("BinaryName", "Runtime") if version == 1 else ("BinaryName",)
        if any(options.get(key) != entry["binary"] for key in keys):
            return False
    for key in ("enable_cdi", "cdi_spec_dirs"):
        wanted = params.get(key)
        if wanted is not None and (key not in cri or cri[key] != wanted or type(cri[key]) is not type(wanted)):
            return False
    default = containerd.get("default_runtime_name")
    if params.get("set_as_default"):
        if default != names[0]:
            return False
    elif re.search(r"(?m)^[ \t]*default_runtime_name[ \t]*=.*#.*" + re.escape(PREVIOUS_MARKER), text):
        return False
    existing = [k for k, v in runtimes.items() if isinstance(v, dict)]
    return not needs_default_entry(existing, default, names)
