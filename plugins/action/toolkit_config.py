# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``toolkit_config``: write the toolkit's config.toml, edited on the controller."""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs, edit_journal
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_config as tc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import text_diff
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toolkit_toml as tt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import (
    NodeFiles,
    missing_dirs,
    parent_dirs,
)
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlEditError


class ActionModule(NodeActionBase):
    argument_spec = staticmethod(argument_specs.toolkit_config)
    refusals = (tc.ToolkitConfigError, TomlEditError)

    def converge(self, args, task_vars):
        host_root = args["host_root"] or "/"
        check_mode = self.check_mode
        files = NodeFiles(self, task_vars, args["read_ahead"])
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
            changed = files.remove(node_file, check_mode)
            out.update(changed=changed, changes=["%s: present (removed)" % node_file.host_path] if changed else [])
            # The directories the first write made for it go too, each only when it is empty.
            record = edit_journal.created_record(node_file.text) if changed else None
            if record is not None:
                dirs = sorted(record[1], key=lambda d: (-d.count("/"), d))
                out["removed_dirs"] = files.remove_empty_dirs(host_root, dirs, check_mode)
                out["changes"].extend("directory %s: created by this module (%s)" % (
                    d, "removed" if d in out["removed_dirs"] else "removed when empty" if check_mode else "kept: not empty")
                    for d in dirs)
            if changed and self.diff_mode:
                out["diff"] = [text_diff(node_file.host_path, node_file.text, node_file.host_path, None)]
            return out
        driver_root, driver_root_source = tc.choose_driver_root(args["driver_root"], existing)
        ldconfig, ldconfig_source = tc.choose_ldconfig(args["ldconfig"], driver_root, existing)
        runc_binary = None
        if not args["runtimes"]:
            runc_binary = tt.runtime_binary(texts[0])
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
        plan = tt.edit(node_file.text, wanted, name=node_file.host_path)
        if not node_file.exists:
            plan["text"] = edit_journal.created_line(missing_dirs(path, existing)) + "\n" + plan["text"]
        changed, backup_file = files.write(node_file, plan["text"], check_mode, backup=args["backup"], mode="0644")
        out.update(changed=changed, changes=plan["changes"], ldconfig=ldconfig, ldconfig_source=ldconfig_source,
                   driver_root=driver_root, driver_root_source=driver_root_source,
                   settings=plan["settings"])
        if backup_file:
            out["backup_file"] = backup_file
        if changed and self.diff_mode:
            out["diff"] = [text_diff(node_file.host_path, node_file.text, node_file.host_path, plan["text"])]
        return out
