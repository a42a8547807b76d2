# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit the toolkit's ``config.toml`` (controller side), keeping what users added.

Only the keys in the wanted settings are set; every other key, table and comment is left as
it is. The decisions come from ``module_utils/toolkit_config.py``; the lines are edited by
``plugin_utils/toml_edit.py``. :func:`converge` is the ``toolkit_config`` task, which
``toolkit_install`` also runs for its ``config`` option (its write then goes in the install's run).
"""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_config as tc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import DifferenceTracker, change
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import text_diff
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import missing_dirs, parent_dirs
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import (
    TomlDocument,
    TomlEditError,
    get_path,
    load,
)

# What makes the file one this task cannot edit safely: the task fails and nothing is written.
REFUSALS = (tc.ToolkitConfigError, TomlEditError)


def edit(text, wanted, name="config.toml"):
    """Apply ``wanted`` (nested dict) to the TOML ``text`` (None when missing).

    Returns ``{"text", "changes", "settings"}``; ``settings`` is the whole file as plain data.
    Raises TomlEditError naming ``name`` when the file cannot be edited safely.
    """
    doc = TomlDocument(text or "", name)
    tracker = DifferenceTracker()
    for keys, value in tc.flatten(wanted):
        current = get_path(doc.data, keys)
        if doc.set(keys, value):
            # (type, value): 1 and true are equal in Python but not in TOML.
            reason = "%r -> %r" % (current, value) if current is not None else "unset -> %r" % (value,)
            tracker.add(".".join(keys), (type(current).__name__, current), (type(value).__name__, value), reason=reason)
    return {"text": doc.text, "changes": tracker.changes(name, created=text is None),
            "settings": doc.data}


def runtime_binary(text, name="runc"):
    """``options.BinaryName`` of runtime ``name`` in a containerd config, or None when unknown."""
    if not text:
        return None
    try:
        data = load(text, "containerd config")
        binary = get_path(data, cc.runtimes_table(cc.file_version(data.get("version"))) + (name, "options", "BinaryName"))
    except (TomlEditError, cc.ConfigError):
        return None
    return binary if isinstance(binary, str) and binary else None


def why_kept(node_file, settings):
    """Why state=absent leaves the file alone, or None when it may go: only a file this module
    created, holding nothing but what it sets, is removed."""
    if not node_file.exists:
        return None
    if ownership.record_in_text(node_file.text) is None:
        return ("this module did not create it (it only set keys in it), so it stays, with them; "
                "remove it or the keys by hand if they must go")
    try:
        foreign = tc.foreign_keys(load(node_file.text, node_file.host_path), settings)
    except TomlEditError as exc:
        return "it cannot be read as TOML (%s)" % exc
    if foreign:
        return "it holds keys this module does not set (%s), added since it was created" % ", ".join(foreign[:5])
    return None


def converge(files, args, check_mode, diff_mode):
    """The toolkit_config task on validated ``args``, reading and writing through ``files`` (a
    :class:`~.node_files.NodeFiles`): its result."""
    host_root = args["host_root"] or "/"
    path = normalize_host_path(args["path"] or tc.default_path(args["install_dir"]))
    # Everything this task reads, in one round trip: the file, containerd's config, ldconfig's candidates.
    present = args["state"] == "present"
    read, existing, texts = files.read_many(
        # The parent directories too: the missing ones are what a new file's write creates.
        host_root, [path],
        exist=(tc.driver_root_probes(args["driver_root"]) + tc.ldconfig_candidates(args["driver_root"])
               + parent_dirs(path)) if present else [],
        texts=[args["containerd_config"]] if present and not args["runtimes"] else [])
    node_file = read[0]
    out = {"path": node_file.host_path, "changes": []}
    if node_file.link_note():
        out["symlinks"] = [node_file.link_note()]
    if args["state"] == "absent":
        kept = why_kept(node_file, args.get("settings"))
        if kept:
            out.update(changed=False, kept=kept, changes=[change(node_file.host_path, "kept", kept)])
            return out
        changed = files.remove(node_file, check_mode)
        out.update(changed=changed, changes=[change(node_file.host_path, "removed")] if changed else [])
        # The directories the first write made for it go too, each only when it is empty.
        record = ownership.record_in_text(node_file.text) if changed else None
        if record is not None:
            out["removed_dirs"], dir_changes = files.remove_created_dirs(
                host_root, [(node_file.host_path, record[1])], check_mode)
            out["changes"].extend(dir_changes)
        if changed and diff_mode:
            out["diff"] = [text_diff(node_file.host_path, node_file.text, node_file.host_path, None)]
        return out
    driver_root, driver_root_source = tc.choose_driver_root(args["driver_root"], existing)
    ldconfig, ldconfig_source = tc.choose_ldconfig(args["ldconfig"], driver_root, existing)
    runc_binary = None
    if not args["runtimes"]:
        runc_binary = runtime_binary(texts[0])
    wanted = tc.wanted_settings(
        install_dir=args["install_dir"],
        driver_root=driver_root,
        ldconfig=ldconfig,
        mode=args["runtime_mode"],
        runtimes=tc.low_level_runtimes(args["runtimes"], runc_binary),
        default_kind=args["default_kind"],
        annotation_prefixes=args["annotation_prefixes"],
        spec_dirs=args["spec_dirs"],
        settings=args["settings"],
    )
    plan = edit(node_file.text, wanted, name=node_file.host_path)
    if not node_file.exists:
        plan["text"] = ownership.created_line(missing_dirs(path, existing)) + "\n" + plan["text"]
    changed, backup_file = files.write(node_file, plan["text"], check_mode, backup=args["backup"], mode="0644")
    out.update(changed=changed, changes=plan["changes"], ldconfig=ldconfig, ldconfig_source=ldconfig_source,
               driver_root=driver_root, driver_root_source=driver_root_source,
               settings=plan["settings"])
    if backup_file:
        out["backup_file"] = backup_file
    if changed and diff_mode:
        out["diff"] = [text_diff(node_file.host_path, node_file.text, node_file.host_path, plan["text"])]
    return out
