# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``containerd_runtime``: read the config from the node, edit it here, write it back."""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import (
    node_argument_spec,
    node_path,
    normalize_host_path,
)
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import (
    NodeFileError,
    NodeFiles,
    diff_entry,
)
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlEditError

ARGUMENT_SPEC = dict(
    node_argument_spec(),
    path={"type": "str", "default": cc.DEFAULT_PATH},
    install_dir={"type": "str", "default": cc.DEFAULT_INSTALL_DIR},
    runtimes={
        "type": "list",
        "elements": "dict",
        "options": {"name": {"type": "str", "required": True}, "binary": {"type": "str", "required": True}},
    },
    runtime_type={"type": "str", "default": cc.DEFAULT_RUNTIME_TYPE},
    set_as_default={"type": "bool", "default": False},
    enable_cdi={"type": "bool"},
    cdi_spec_dirs={"type": "list", "elements": "str"},
    container_annotations={"type": "list", "elements": "str", "default": list(cc.DEFAULT_CONTAINER_ANNOTATIONS)},
    config_version={"type": "str", "default": "auto", "choices": ["auto", "1", "2", "3", "4"]},
    drop_in={"type": "str"},
    state={"type": "str", "default": "present", "choices": ["present", "absent"]},
    backup={"type": "bool", "default": False},
    validate={"type": "str"},
)


class ActionModule(NodeActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        del validation
        try:
            result.update(self._run(args, task_vars or {}))
        except (cc.ConfigError, TomlEditError) as exc:
            message = str(exc)
            if args["path"] not in message:
                message = "%s: %s" % (args["path"], message)
            result.update(failed=True, changed=False, msg="%s; the file was left as it was" % message.rstrip("; "))
        except NodeFileError as exc:
            result.update(failed=True, changed=False, msg=str(exc))
        return result

    def _containerd_version(self, files, host_root):
        for candidate in files.existing(host_root, list(cc.CONTAINERD_BINARIES)):
            rc, stdout = files.run([node_path(host_root, candidate), "--version"])
            if rc == 0:
                return stdout
        return None

    def _run(self, args, task_vars):
        host_root = args["host_root"] or "/"
        check_mode = self.check_mode
        files = NodeFiles(self, task_vars)
        path = normalize_host_path(args["path"])
        drop_in = normalize_host_path(args["drop_in"]) if args["drop_in"] else None
        validate = args["validate"]
        if validate and "%s" not in validate:
            raise cc.ConfigError("validate must contain %%s (the new file's path), got %r" % validate)
        params = {
            "state": args["state"],
            "runtimes": cc.normalize_runtimes(args["runtimes"], args["install_dir"]),
            "runtime_type": args["runtime_type"],
            "set_as_default": args["set_as_default"],
            "enable_cdi": args["enable_cdi"],
            "cdi_spec_dirs": args["cdi_spec_dirs"],
            "container_annotations": args["container_annotations"],
            "config_version": args["config_version"],
            "drop_in": drop_in,
            "path": path,
        }
        root = files.read(host_root, path)
        drop = files.read(host_root, drop_in) if drop_in else None
        containerd_output = None
        if not (root.text or "").strip() and args["config_version"] == "auto" and args["state"] == "present":
            containerd_output = self._containerd_version(files, host_root)
        if args["state"] == "absent" and not root.exists and not (drop and drop.exists):
            return {"changed": False, "restart_required": False, "path": root.host_path, "changes": [],
                    "msg": "%s does not exist; nothing to remove" % root.host_path}
        plan = ct.edit(root.text, params, containerd_output=containerd_output,
                       drop_in_text=drop.text if drop else None, name=root.host_path)
        out = {
            "path": root.host_path,
            "config_version": plan["version"],
            "config_version_source": plan["version_source"],
            "changes": list(plan["changes"]),
            "restart_required": False,
        }
        warnings = list(plan["warnings"])
        if args["enable_cdi"] and plan["changes"] and plan["version"] <= 2:
            # Asked only when the file changes: a no-op run costs no extra round trip.
            release = cc.containerd_release(containerd_output or self._containerd_version(files, host_root))
            if release and release < cc.FIRST_CDI_RELEASE:
                warnings.append("containerd %d.%d on the node has no CDI support (it came with %d.%d): enable_cdi is "
                                "written but has no effect until containerd is upgraded"
                                % (release + cc.FIRST_CDI_RELEASE))
        if warnings:
            out["warnings"] = warnings
        notes = [n for n in (root.link_note(), drop.link_note() if drop else None) if n]
        if notes:
            out["symlinks"] = notes
        diffs = []
        changed = False
        backup_files = []
        root_changed = plan["text"] != (root.text if root.exists else None)
        if drop is not None:
            drop_changed = plan["drop_in_text"] != drop.text
            out["drop_in"] = drop.host_path
        else:
            drop_changed = False
        # Present: the drop-in exists before the root imports it. Absent: the root lets go first.
        steps = [("drop", drop_changed), ("root", root_changed)]
        if args["state"] == "absent":
            steps.reverse()
        for which, needed in steps:
            if not needed:
                continue
            if which == "root":
                did, backup_file = files.write(root, plan["text"], check_mode, backup=args["backup"], validate=validate)
                diffs.append(diff_entry(root.host_path, root.text, root.host_path, plan["text"]))
            elif plan["drop_in_text"] is None:
                did, backup_file = files.remove(drop, check_mode), None
                diffs.append(diff_entry(drop.host_path, drop.text, drop.host_path, None))
            else:
                did, backup_file = files.write(drop, plan["drop_in_text"], check_mode, backup=args["backup"],
                                               validate=validate)
                diffs.append(diff_entry(drop.host_path, drop.text, drop.host_path, plan["drop_in_text"]))
            changed = changed or did
            if backup_file:
                backup_files.append(backup_file)
        out["changed"] = changed
        out["restart_required"] = bool(changed and plan["restart_required"])
        if backup_files:
            out["backup_file"] = backup_files[-1] if len(backup_files) == 1 else backup_files[0]
            if len(backup_files) > 1:
                out["backup_files"] = backup_files
        if changed and notes:
            out["changes"] = notes + out["changes"]
        if self.diff_mode and diffs:
            out["diff"] = diffs
        return out
