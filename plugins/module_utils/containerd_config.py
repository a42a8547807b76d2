# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions about a containerd configuration, as pure functions (no I/O, standard library only).

The TOML document itself is edited on the controller (``plugin_utils/containerd_toml.py``);
everything here takes and returns plain values so both sides and the unit tests can use it.
"""

from __future__ import annotations

import copy
import fnmatch
import posixpath
import re

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.runtimes import (
    LOW_LEVEL_RUNTIMES,
    ConfigError,
    base_runtime,
)

DEFAULT_PATH = "/etc/containerd/config.toml"
DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
FALLBACK_VERSION = 2
# containerd's CRI plugin reads enable_cdi from 1.7 on.
FIRST_CDI_RELEASE = (1, 7)

# config version -> keys of the CRI table that holds ``containerd.runtimes``.
CRI_TABLES = {
    1: ("plugins", "cri"),
    2: ("plugins", "io.containerd.grpc.v1.cri"),
    3: ("plugins", "io.containerd.cri.v1.runtime"),
    4: ("plugins", "io.containerd.cri.v1.runtime"),
}
KNOWN_VERSIONS = tuple(sorted(CRI_TABLES))

# config version -> the names in ``disabled_plugins`` that leave containerd without CRI. Version 1
# matches a plugin's ID, later versions its full name (containerd 1.6 refuses to start on "cri" in
# a version 2 file, and loads CRI with "io.containerd.grpc.v1.cri" in a version 1 file; measured).
# containerd 2.x splits CRI in three: without either cri.v1 plugin the gRPC service does not load.
CRI_PLUGINS = {
    1: ("cri",),
    2: ("io.containerd.grpc.v1.cri",),
    3: ("io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images"),
    4: ("io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images"),
}

# Where containerd's binary may be on a node, asked for ``--version`` when the file has no version.
CONTAINERD_BINARIES = (
    "/usr/bin/containerd",
    "/usr/local/bin/containerd",
    "/usr/sbin/containerd",
    "/bin/containerd",
    "/home/kubernetes/bin/containerd",
)

# First lines of files that their owner writes anew at every start (k3s and RKE2 write
# config.toml from config.toml.tmpl): an edit there would vanish at the next restart.
REGENERATED_MARKERS = ("DO NOT EDIT",)


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


def choose_version(requested, declared, file_empty, containerd_output=None, not_asked=None):
    """The config version to edit, and where it came from.

    ``requested``: the option (``auto`` or 1-4). ``declared``: the file's ``version`` value
    (None when absent). ``file_empty``: the file is missing or blank, so its version can be
    chosen. ``containerd_output``: ``containerd --version`` on the node, if any; ``not_asked``:
    why the node's containerd was not asked, when it was not.
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
    return FALLBACK_VERSION, "default (%s)" % (not_asked or "containerd not found on the node")


# runtime_type values of runtimes that run OCI containers with runc (or a runc-compatible binary).
RUNC_COMPATIBLE_TYPES = ("io.containerd.runc.v2", "io.containerd.runc.v1", "io.containerd.runtime.v1.linux")
DEFAULT_CONTAINER_ANNOTATIONS = ("cdi.k8s.io/*",)
# A legacy (version 1) file may name its default runtime by a table instead of default_runtime_name;
# containerd 1.x then registers it as the runtime "default" and makes that the default.
LEGACY_DEFAULT_RUNTIME = "default"


def _runc_compatible(name, table):
    kind = table.get("runtime_type")
    if kind is None:
        return name in ("runc", "crun")
    return kind in RUNC_COMPATIBLE_TYPES


def choose_template(runtimes, default_runtime_name, managed):
    """The runtime a new runtime starts as a copy of, or None.

    The first runc-compatible runtime (by ``runtime_type``) of: the default runtime, ``runc``,
    ``crun``, the file's other runtimes in order, and last the runtimes of ``managed`` that the
    file already has (an existing ``nvidia`` default on a node without ``runc``). A default such
    as ``kata-qemu`` is passed over: its options are not runc's. ``SystemdCgroup`` and the other
    runc options are inherited that way.
    """
    tables = {name: table for name, table in (runtimes or {}).items() if isinstance(table, dict)}
    return base_runtime([default_runtime_name] + list(LOW_LEVEL_RUNTIMES) + list(tables), tables, managed,
                        usable=lambda name: _runc_compatible(name, tables[name]))


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


def legacy_default_table(data, version):
    """The ``[plugins.cri.containerd.default_runtime]`` table of a version 1 file when containerd
    uses it (it has a ``runtime_type``), else None."""
    if version != 1:
        return None
    table = _table(data, containerd_table(1) + ("default_runtime",))
    return table if table and table.get("runtime_type") else None


def cri_disabled_by(data, version):
    """The entries of ``disabled_plugins`` that turn containerd's CRI plugin off (Docker's
    ``containerd.io`` package ships ``disabled_plugins = ["cri"]``): then no runtime in the file is
    used by the kubelet or crictl. Empty when CRI loads."""
    disabled = data.get("disabled_plugins")
    if not isinstance(disabled, list):
        return []
    return [name for name in disabled if name in CRI_PLUGINS.get(version, ())]


def cri_disabled_message(name, disabled_by):
    return ("%s: disabled_plugins lists %s, so containerd loads no CRI plugin and the runtimes registered here are "
            "not used by the kubelet or crictl (Docker's containerd.io package ships it so). Where Docker is the "
            "engine, register the runtimes in Docker; to use them through CRI, set enable_cri=true (the containerd "
            "role's containerd_enable_cri, gpu_node's gpu_node_containerd_enable_cri), which takes %s out of "
            "disabled_plugins (state=absent puts it back)"
            % (name, ", ".join(repr(n) for n in disabled_by), "it" if len(disabled_by) == 1 else "them"))


def ignored_cri_tables(data, version):
    """CRI tables in ``data`` that containerd does not read for a file of ``version``."""
    read = cri_table(version)
    plugins = data.get("plugins") if isinstance(data.get("plugins"), dict) else {}
    return [("plugins", name) for name in sorted({t[1] for t in CRI_TABLES.values()})
            if name != read[1] and isinstance(plugins.get(name), dict) and "containerd" in plugins[name]]


def _runtime_settings(entry, version, params):
    options = {"BinaryName": entry["binary"]}
    if version == 1:
        options["Runtime"] = entry["binary"]
    wanted = {"runtime_type": params["runtime_type"]}
    annotations = params.get("container_annotations")
    if annotations:
        wanted["container_annotations"] = list(annotations)
    wanted["options"] = options
    return wanted


def _differences(current, wanted, path):
    """("set", path, value) for each leaf of ``wanted`` that ``current`` lacks or holds otherwise."""
    ops = []
    for key, value in wanted.items():
        have = current.get(key) if isinstance(current, dict) else None
        if isinstance(value, dict):
            ops.extend(_differences(have, value, path + (key,)))
        elif have != value or type(have) is not type(value):
            ops.append(("set", path + (key,), value))
    return ops


def plan_present(data, version, params, source=None):
    """What ``state: present`` changes in the parsed config ``data``, as a list of operations.

    ``("table", path, content, after, template)``: add the table ``path`` holding ``content``
    (placed after the table ``after`` when that exists; ``template``: the runtime it copies); ``("set", path, value)``: set one key. An empty
    list means the file already says what ``params`` asks: the same decision serves the no-op
    check and the edit. ``source``: the parsed config whose runtimes new ones are copied from
    and whose default runtime counts (the root config, when ``data`` is a drop-in).
    """
    source = data if source is None else source
    runtimes_path = runtimes_table(version)
    for depth in range(1, len(runtimes_path) + 1):
        for where in (data, source):
            found = where
            for key in runtimes_path[:depth]:
                found = found.get(key) if isinstance(found, dict) else None
            if found is not None and not isinstance(found, dict):
                raise ConfigError("%s must be a table, but it is a %s (%r)" % (
                    dotted(runtimes_path[:depth]), type(found).__name__, found))
    here = _table(data, runtimes_path) or {}
    source_containerd = _table(source, containerd_table(version)) or {}
    source_runtimes = _table(source, runtimes_path)
    legacy = legacy_default_table(source, version)
    default_name = LEGACY_DEFAULT_RUNTIME if legacy else source_containerd.get("default_runtime_name")
    pool = dict(source_runtimes or {})
    if legacy:
        pool = dict({LEGACY_DEFAULT_RUNTIME: legacy}, **pool)
    names = [entry["name"] for entry in params["runtimes"]]
    ops = []
    if source_runtimes is None and needs_default_entry([], default_name, names) and \
            not legacy and any(name not in here for name in names):
        # A runtimes table replaces containerd's built-in one: without this entry the default
        # runtime would vanish ("no corresponding runtime configured").
        ops.append(("table", runtimes_path + ("runc",), {"runtime_type": DEFAULT_RUNTIME_TYPE}, None, None))
    template = choose_template(pool, default_name, names)
    after = runtimes_path + (template,) if template in here else None
    for entry in params["runtimes"]:
        wanted = _runtime_settings(entry, version, params)
        current = here.get(entry["name"])
        path = runtimes_path + (entry["name"],)
        if current is None:
            content = copy.deepcopy(pool[template]) if template else {}
            if not isinstance(content.get("options", {}), dict):
                del content["options"]
            for key, value in wanted.items():
                if isinstance(value, dict):
                    content.setdefault(key, {}).update(value)
                else:
                    content[key] = value
            ops.append(("table", path, content, after, template))
            after = path
        elif not isinstance(current, dict):
            raise ConfigError("%s must be a table, but it holds %r" % (dotted(path), current))
        else:
            ops.extend(_differences(current, wanted, path))
            after = path
    cri = _table(data, cri_table(version)) or {}
    for key in ("enable_cdi", "cdi_spec_dirs"):
        wanted = params.get(key)
        if wanted is not None:
            wanted = bool(wanted) if key == "enable_cdi" else list(wanted)
            ops.extend(_differences(cri, {key: wanted}, cri_table(version)))
    if params.get("set_as_default"):
        first = params["runtimes"][0]
        if legacy:
            wanted = _runtime_settings(first, version, params)
            ops.extend(_differences(legacy, wanted, containerd_table(version) + ("default_runtime",)))
        else:
            containerd = _table(data, containerd_table(version)) or {}
            ops.extend(_differences(containerd, {"default_runtime_name": names[0]}, containerd_table(version)))
    return ops


def apply_ops(data, ops):
    """``data`` with ``ops`` (from :func:`plan_present`) applied, as new plain data."""
    result = copy.deepcopy(data)
    for op in ops:
        value = copy.deepcopy(op[2])
        table = result
        for key in op[1][:-1]:
            table = table.setdefault(key, {})
        table[op[1][-1]] = value
    return result
