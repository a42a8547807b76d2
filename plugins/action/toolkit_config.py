# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``toolkit_config``: write the toolkit's config.toml, edited on the controller."""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_config as tc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import (
    node_argument_spec,
    normalize_host_path,
)
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toolkit_toml as tt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import (
    NodeFileError,
    NodeFiles,
    diff_entry,
)
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlEditError

ARGUMENT_SPEC = dict(
    node_argument_spec(),
    path={"type": "str"},
    install_dir={"type": "str", "default": tc.DEFAULT_INSTALL_DIR},
    driver_root={"type": "str", "default": "/"},
    ldconfig={"type": "str", "default": "auto"},
    mode={"type": "str", "default": "auto", "choices": list(tc.MODES)},
    runtimes={"type": "list", "elements": "str"},
    containerd_config={"type": "str", "default": "/etc/containerd/config.toml"},
    default_kind={"type": "str"},
    annotation_prefixes={"type": "list", "elements": "str"},
    spec_dirs={"type": "list", "elements": "str"},
    settings={"type": "dict", "default": {}},
    state={"type": "str", "default": "present", "choices": ["present", "absent"]},
    backup={"type": "bool", "default": False},
)


class ActionModule(NodeActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        del validation
        try:
            result.update(self._run(args, task_vars or {}))
        except (tc.ToolkitConfigError, TomlEditError, NodeFileError) as exc:
            result.update(failed=True, changed=False, msg=str(exc))
        return result

    def _run(self, args, task_vars):
        host_root = args["host_root"] or "/"
        check_mode = self.check_mode
        files = NodeFiles(self, task_vars)
        path = normalize_host_path(args["path"] or tc.default_path(args["install_dir"]))
        node_file = files.read(host_root, path)
        out = {"path": node_file.host_path, "changes": []}
        if node_file.link_note():
            out["symlinks"] = [node_file.link_note()]
        if args["state"] == "absent":
            changed = files.remove(node_file, check_mode)
            out.update(changed=changed, changes=["%s: present (removed)" % node_file.host_path] if changed else [])
            if changed and self.diff_mode:
                out["diff"] = [diff_entry(node_file.host_path, node_file.text, node_file.host_path, None)]
            return out
        existing = files.existing(host_root, tc.ldconfig_candidates(args["driver_root"]))
        ldconfig, ldconfig_source = tc.choose_ldconfig(args["ldconfig"], args["driver_root"], existing)
        runc_binary = None
        if not args["runtimes"]:
            runc_binary = tt.runtime_binary(files.read_text(host_root, args["containerd_config"]))
        wanted = tc.wanted_settings(
            install_dir=args["install_dir"],
            driver_root=args["driver_root"],
            ldconfig=ldconfig,
            mode=args["mode"],
            runtimes=tc.low_level_runtimes(args["runtimes"], runc_binary),
            default_kind=args["default_kind"],
            annotation_prefixes=args["annotation_prefixes"],
            spec_dirs=args["spec_dirs"],
            settings=args["settings"],
        )
        plan = tt.edit(node_file.text, wanted, name=node_file.host_path)
        changed, backup_file = files.write(node_file, plan["text"], check_mode, backup=args["backup"], mode="0644")
        out.update(changed=changed, changes=plan["changes"], ldconfig=ldconfig, ldconfig_source=ldconfig_source,
                   settings=plan["settings"])
        if backup_file:
            out["backup_file"] = backup_file
        if changed and self.diff_mode:
            out["diff"] = [diff_entry(node_file.host_path, node_file.text, node_file.host_path, plan["text"])]
        return out
