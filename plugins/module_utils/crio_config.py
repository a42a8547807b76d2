# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What CRI-O's drop-in for the nvidia runtimes holds. Pure: parsed files in, data out.

CRI-O reads ``crio.conf`` first, then every regular file under its drop-in directory
(``crio.conf.d``, walked recursively in lexical order, whatever the file names), decoding each
into the configuration the earlier ones left (crio.conf.d(5); CRI-O's ``Config.UpdateFromPath``).
A key outside the runtime tables, such as ``crio.runtime.default_runtime``, takes the value of the
last file that sets it. A ``[crio.runtime.runtimes.<handler>]`` table does not merge key by key:
the runtimes are a Go map, and CRI-O's TOML decoder (BurntSushi/toml) builds a fresh value for
every key of a map it decodes, so the last file that defines a handler gives its whole table and
the keys only earlier definitions set are gone. The drop-in this module describes is entirely
this collection's: each runtime starts from the table CRI-O uses for the node's low-level runtime
handler (``default_runtime``, else ``crun``, else ``runc``), and then points ``runtime_path`` at
the toolkit's wrapper with ``runtime_type = "oci"`` (``"pod"`` when the low-level runtime runs
under conmon-rs), as NVIDIA's ``nvidia-ctk runtime configure --runtime=crio`` does.
"""

from __future__ import annotations

import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership, runtimes
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.runtimes import ConfigError

DEFAULT_PATH = "/etc/crio/crio.conf.d/99-nvidia.toml"
DEFAULT_CONFIG = "/etc/crio/crio.conf"
MARK = "# Written by gpu_node.container_toolkit crio_runtime. Do not edit: run the module (state=absent removes it)."
# CRI-O's built-in choice when no file sets crio.runtime.default_runtime: crun from CRI-O 1.31,
# runc before; the first of these the files define is the one the runtimes start from.
PREFERRED_RUNTIMES = ("crun", "runc")

# The keys of a [crio.runtime.runtimes.<handler>] table and their TOML types, from the comments
# CRI-O's own `crio config` template writes for a runtime handler (cri-o/cri-o,
# internal/config/template.go, templateStringCrioRuntimeRuntimesRuntimeHandler) and crio.conf(5).
# A copied key of another type would make crio refuse to start: it is refused here instead.
HANDLER_KEY_TYPES = {
    "runtime_path": str,
    "runtime_type": str,
    "runtime_root": str,
    "runtime_config_path": str,
    "inherit_default_runtime": bool,
    "privileged_without_host_devices": bool,
    "allowed_annotations": list,
    "monitor_path": str,
    "monitor_cgroup": str,
    "monitor_exec_cgroup": str,
    "monitor_env": list,
    "platform_runtime_paths": dict,
    "container_min_memory": str,
    "no_sync_log": bool,
    "default_annotations": dict,
    "stream_websockets": bool,
}
RUNTIME_TYPES = ("oci", "vm", "pod")
# Not copied from the low-level runtime: replaced (path, type), or meaning something else for a
# wrapper. inherit_default_runtime = true would make CRI-O replace runtime_path with the default
# runtime's at load time, so the wrapper would never run; runtime_config_path is for vm runtimes.
NOT_INHERITED = ("runtime_path", "runtime_type", "inherit_default_runtime", "runtime_config_path")


def drop_in_dir(path):
    """The directory CRI-O reads the drop-in from (the parent of ``path``)."""
    return posixpath.dirname(normalize_host_path(path))


def read_order(config_path, drop_ins):
    """The files CRI-O reads, in its order: ``config_path``, then ``drop_ins`` (host paths found
    under the drop-in directory, at any depth) sorted as Go's ``filepath.Walk`` visits them."""
    return [normalize_host_path(config_path)] + sorted(normalize_host_path(p) for p in drop_ins)


def check_handler_types(name, table, where):
    """Refuse a runtime handler table CRI-O's TOML decoder would refuse: not a table, or a key of
    the wrong type. The decoder reads every file, so this holds for a table a later file replaces."""
    if not isinstance(table, dict):
        raise ConfigError("%s: crio.runtime.runtimes.%s is a %s, not a table; CRI-O would refuse it"
                          % (where, name, type(table).__name__))
    for key, value in table.items():
        expected = HANDLER_KEY_TYPES.get(key)
        if expected is not None and not (isinstance(value, expected) and not (expected is not bool and isinstance(value, bool))):
            raise ConfigError("%s: crio.runtime.runtimes.%s.%s is %r, where CRI-O takes a %s" % (
                where, name, key, value, {str: "string", bool: "boolean", list: "list", dict: "table"}[expected]))


def check_runtime_type(name, table, where):
    """Refuse a runtime handler whose runtime_type CRI-O does not know. CRI-O checks this once
    every file is read, so only on the table in effect: one a later file replaced is never checked."""
    if table.get("runtime_type", "oci") not in RUNTIME_TYPES:
        raise ConfigError("%s: crio.runtime.runtimes.%s.runtime_type is %r, not one of %s" % (
            where, name, table["runtime_type"], ", ".join(RUNTIME_TYPES)))


def check_handler(name, table, where):
    """Refuse a runtime handler table CRI-O would refuse (a key of the wrong type, an unknown runtime_type)."""
    check_handler_types(name, table, where)
    check_runtime_type(name, table, where)


def merge(files):
    """CRI-O's view of the runtime settings: ``files`` is ``[(host path, data)]`` in read order.

    Returns ``(default_runtime or None, {handler: table in effect}, {handler: host paths defining it})``.
    ``default_runtime`` is the value the last file setting it gives; an empty one unsets it, as in
    CRI-O, which then falls back to its built-in choice. A handler's table is the one the
    last file defining it holds, whole: a later definition replaces an earlier one, keys and all
    (see the module's docstring). Its sources therefore name that one file: the earlier
    definitions contribute nothing CRI-O uses, and naming them would point whoever reads the
    drop-in's header at settings that have no effect.
    """
    default, handlers, sources = None, {}, {}
    for where, data in files:
        runtime = (data.get("crio") or {}).get("runtime") or {}
        if not isinstance(runtime, dict):
            raise ConfigError("%s: crio.runtime is not a table" % where)
        if "default_runtime" in runtime:
            if not isinstance(runtime["default_runtime"], str):
                raise ConfigError("%s: crio.runtime.default_runtime is %r, not a string" % (where, runtime["default_runtime"]))
            default = runtime["default_runtime"]
        tables = runtime.get("runtimes", {})
        if not isinstance(tables, dict):
            raise ConfigError("%s: crio.runtime.runtimes is not a table" % where)
        for name, table in tables.items():
            check_handler_types(name, table, where)
            handlers[name] = dict(table)
            sources[name] = [where]
    for name, table in handlers.items():
        check_runtime_type(name, table, sources[name][0])
    return default or None, handlers, sources


def base_runtime(default, handlers, own_names):
    """The handler the nvidia runtimes start from: the default runtime, unless it is one of ours
    (set_as_default made it so), else crun, else runc. ``(name, settings)``; settings are ``{}``
    when the files do not define the handler (CRI-O then builds it from its built-in defaults)."""
    candidates = [default] + list(PREFERRED_RUNTIMES)
    name = runtimes.base_runtime(candidates, handlers, own_names)
    if name is None or name in own_names:
        # CRI-O builds a handler the files do not define from its built-in defaults.
        name = next(n for n in candidates if n and n not in own_names)
        return name, handlers.get(name, {})
    return name, handlers[name]


def plan(files, params):
    """The drop-in's data, or None for ``state=absent``.

    ``files``: ``[(host path, parsed data)]`` CRI-O reads besides the drop-in, in its order.
    ``params``: ``runtimes`` (``[{name, binary}]``), ``set_as_default``, ``state``.
    Returns ``{"data", "base", "base_sources", "default_runtime", "notes"}``.
    """
    if params["state"] == "absent":
        return {"data": None, "base": None, "base_sources": [], "default_runtime": None, "notes": []}
    names = [r["name"] for r in params["runtimes"]]
    default, handlers, sources = merge(files)
    base_name, base = base_runtime(default, handlers, names)
    inherited = {k: v for k, v in base.items() if k not in NOT_INHERITED}
    notes = []
    # "pod" runs the OCI runtime under conmon-rs (its monitor_path): the wrapper runs there the same way.
    runtime_type = "pod" if base.get("runtime_type") == "pod" else "oci"
    if base.get("runtime_type", "oci") not in ("oci", "pod"):
        raise ConfigError("the low-level runtime %s (%s) is of runtime_type %r: the nvidia runtimes wrap an OCI runtime "
                          "(runc or crun); set crio.runtime.default_runtime to one"
                          % (base_name, ", ".join(sources[base_name]), base["runtime_type"]))
    if base_name not in handlers:
        notes.append("%s is not defined in %s: the runtimes start from CRI-O's built-in settings"
                     % (base_name, ", ".join(p for p, _d in files) or "any file"))
    elif not base:
        notes.append("%s is defined with no keys in %s: the runtimes start from CRI-O's built-in settings"
                     % (base_name, ", ".join(sources[base_name])))
    runtimes = {}
    for runtime in params["runtimes"]:
        table = {"runtime_path": runtime["binary"], "runtime_type": runtime_type}
        table.update(inherited)
        runtimes[runtime["name"]] = table
    runtime_section = {}
    if params["set_as_default"]:
        runtime_section["default_runtime"] = names[0]
    runtime_section["runtimes"] = runtimes
    return {
        "data": {"crio": {"runtime": runtime_section}},
        "base": base_name,
        "base_sources": sources.get(base_name, []),
        "default_runtime": default,
        "notes": notes,
    }


def is_ours(text):
    """Whether the file at the drop-in's path is one this module wrote (its first line is MARK)."""
    return text is not None and text.split("\n", 1)[0].rstrip("\r") == MARK


def header(base, sources, created_dirs):
    """The drop-in's first lines: MARK, where its settings come from, and the directories writing
    it created (``state=absent`` removes them again when empty)."""
    lines = [MARK, "# The runtimes start from the settings of %s (%s)." % (base, ", ".join(sources) or "CRI-O's built-in")]
    if created_dirs:
        lines.append(ownership.created_line(created_dirs, ownership.REMOVES_OWNED))
    return "\n".join(lines) + "\n"


def render(base, sources, created_dirs, body):
    """The drop-in's text: :func:`header`, the digest of ``body`` (the TOML), then ``body``."""
    return ownership.signed(header(base, sources, created_dirs), "\n" + body)


def created_dirs_of(text):
    """The directories :func:`header` recorded in a drop-in's text (an earlier release's form too)."""
    return ownership.dirs_in_text(text, ownership.LEGACY_CRIO)
