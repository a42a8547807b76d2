# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``containerd_runtime``: read the config from the node, edit it here, write it back."""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs, edit_journal, ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import (
    node_path,
    normalize_host_path,
)
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.runtimes import normalize_runtimes
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.engine import BackupSet, EngineAction, EnginePlan, FileStep
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import (
    NodeFiles,
    missing_dirs,
    parent_dirs,
)
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlEditError

# A binary under a host_root other than / belongs to a node this machine sees mounted (Ansible in a
# container beside it): run here, it would run with this machine's rights, so it is never run.
NOT_RUN = "host_root is not /: the node's containerd binary is not run from here; set config_version to choose"


class ActionModule(EngineAction):
    argument_spec = staticmethod(argument_specs.containerd_runtime)
    refusals = (cc.ConfigError, TomlEditError)

    def refusal_message(self, exc, args):
        message = str(exc)
        if args["path"] not in message:
            message = "%s: %s" % (args["path"], message)
        return "%s; the file was left as it was" % message.rstrip("; ")

    def _containerd_version(self, files, host_root):
        if normalize_host_path(host_root) != "/":
            return None  # see NOT_RUN
        for candidate in files.existing(host_root, list(cc.CONTAINERD_BINARIES)):
            rc, stdout = files.run([node_path(host_root, candidate), "--version"])
            if rc == 0:
                return stdout
        return None

    @staticmethod
    def _backups(node_file, after):
        """The copies ``backup`` made of ``node_file`` while it held this module's edits: those that
        hold the journal, or the text the file is given back (the copy the first edit made of the
        original). ``after``: the file's text after this run, None when it is gone."""
        def judge(texts):
            ours = [c for c, text in texts.items() if text is not None
                    and (edit_journal.has_journal(text) or (after is not None and text == after))]
            dirs = [d for c in ours for d in ownership.dirs_in_text(texts[c])]
            return ours, dirs
        return BackupSet(node_file, ownership.backup_pattern(node_file.host_path), judge, gone=after is None)

    def converge(self, args, task_vars):
        host_root = args["host_root"] or "/"
        files = NodeFiles(self, task_vars, args["read_ahead"])
        path = normalize_host_path(args["path"])
        drop_in = normalize_host_path(args["drop_in"]) if args["drop_in"] else None
        present = args["state"] == "present"
        validate = args["validate"]
        if validate and "%s" not in validate:
            raise cc.ConfigError("validate must contain %%s (the new file's path), got %r" % validate)
        params = {
            "state": args["state"],
            "runtimes": normalize_runtimes(args["runtimes"], args["install_dir"]),
            "runtime_type": args["runtime_type"],
            "set_as_default": args["set_as_default"],
            "enable_cdi": args["enable_cdi"],
            "enable_cri": args["enable_cri"],
            "cdi_spec_dirs": args["cdi_spec_dirs"],
            "container_annotations": args["container_annotations"],
            "config_version": args["config_version"],
            "drop_in": drop_in,
            "path": path,
        }
        wanted = [path, drop_in] if drop_in else [path]
        # The parent directories ride along on the same read: those missing are what a write creates.
        parents = [d for p in wanted for d in parent_dirs(p)] if present else []
        read, existing_dirs, _texts = files.read_many(host_root, wanted, exist=parents)
        root, drop = read[0], (read[1] if drop_in else None)
        kept = [f for f in (root, drop) if f]
        if not present and not any(f.exists for f in kept):
            plan = EnginePlan(result={"path": root.host_path, "msg": "%s does not exist; nothing to remove" % root.host_path},
                              backups=[self._backups(f, None) for f in kept])
            return self.carry_out(files, host_root, plan, remove_backups=args["remove_backups"])
        if present:
            params["created_dirs"] = missing_dirs(path, existing_dirs) if not root.exists else []
            params["drop_in_created_dirs"] = missing_dirs(drop_in, existing_dirs) if drop and not drop.exists else []
        containerd_output = None
        if not (root.text or "").strip() and args["config_version"] == "auto" and present:
            containerd_output = self._containerd_version(files, host_root)
        edit = ct.edit(root.text, params, containerd_output=containerd_output,
                       drop_in_text=drop.text if drop else None, name=root.host_path,
                       containerd_not_asked=NOT_RUN if normalize_host_path(host_root) != "/" else None)
        warnings = list(edit["warnings"])
        if args["enable_cdi"] and edit["changes"] and edit["version"] <= 2:
            # Asked only when the file changes: a no-op run costs no extra round trip.
            release = cc.containerd_release(containerd_output or self._containerd_version(files, host_root))
            if release and release < cc.FIRST_CDI_RELEASE:
                warnings.append("containerd %d.%d on the node has no CDI support (it came with %d.%d): enable_cdi is "
                                "written but has no effect until containerd is upgraded"
                                % (release + cc.FIRST_CDI_RELEASE))
        # Present: the drop-in exists before the root imports it. Absent: the root lets go first.
        steps = [FileStep(drop, edit["drop_in_text"], validate=validate)] if drop else []
        steps.append(FileStep(root, edit["text"], validate=validate))
        if not present:
            steps.reverse()
        result = {"path": root.host_path, "config_version": edit["version"], "config_version_source": edit["version_source"]}
        if present:
            result["cri_disabled_by"] = edit["cri_disabled_by"]
        if drop:
            result["drop_in"] = drop.host_path
        plan = EnginePlan(steps, edit["remove_dirs"], edit["changes"], warnings, edit["restart_required"], result,
                          backups=[self._backups(f, t) for f, t in ((root, edit["text"]), (drop, edit["drop_in_text"])) if f],
                          notes=[root.link_note(), drop.link_note() if drop else None])
        return self.carry_out(files, host_root, plan, backup=args["backup"],
                              remove_backups=args["remove_backups"] and not present)
