# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``containerd_runtime``: read the config from the node, edit it here, write it back."""

from __future__ import annotations

import posixpath
import re

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs, edit_journal
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import text_diff
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import (
    node_path,
    normalize_host_path,
)
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import (
    NodeFile,
    NodeFiles,
    missing_dirs,
    parent_dirs,
)
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlEditError

# A binary under a host_root other than / belongs to a node this machine sees mounted (Ansible in a
# container beside it): run here, it would run with this machine's rights, so it is never run.
NOT_RUN = "host_root is not /: the node's containerd binary is not run from here; set config_version to choose"


class ActionModule(NodeActionBase):
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

    def _remove_backups(self, files, host_root, given_back, check_mode):
        """``remove_backups``: the copies ``backup`` made while the files held this module's edits
        go. ``given_back``: (NodeFile, its text after this run, None when it is gone). A copy is one
        of ours when it is named as Ansible names backups and holds the journal, or holds the text
        the file is given back (the copy the first edit made of the original)."""
        removed, changes, dirs = [], [], []
        for node_file, after in given_back:
            pattern = r"^%s\.[0-9]+\.[0-9]{4}-[0-9]{2}-[0-9]{2}@[0-9]{2}:[0-9]{2}:[0-9]{2}~$" % re.escape(
                posixpath.basename(node_file.host_path))
            candidates = files.backups_of(node_file, pattern)
            if not candidates:
                continue
            _read, _existing, texts = files.read_many(host_root, [], texts=candidates)
            for backup, text in zip(candidates, texts):
                if text is None:
                    continue
                if not (edit_journal.has_journal(text) or (after is not None and text == after)):
                    continue
                record = edit_journal.created_record(text)
                if record is not None and after is None:
                    dirs.extend(record[1])
                files.remove(NodeFile(host_root, backup, backup, True, text, []), check_mode)
                removed.append(backup)
                changes.append("backup %s: made by this module (removed)" % backup)
        removed_dirs = files.remove_empty_dirs(host_root, sorted(set(dirs), key=lambda d: (-d.count("/"), d)),
                                               check_mode, owners=[node_file.host_path for node_file, _after in given_back])
        changes.extend("directory %s: created by this module (removed)" % d for d in removed_dirs)
        return {"removed": removed, "changes": changes, "removed_dirs": removed_dirs}

    def converge(self, args, task_vars):
        host_root = args["host_root"] or "/"
        check_mode = self.check_mode
        files = NodeFiles(self, task_vars, args["read_ahead"])
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
        wanted = [path, drop_in] if drop_in else [path]
        # The parent directories ride along on the same read: those missing are what a write creates.
        parents = [d for p in wanted for d in parent_dirs(p)] if args["state"] == "present" else []
        read, existing_dirs, _texts = files.read_many(host_root, wanted, exist=parents)
        root, drop = read[0], (read[1] if drop_in else None)
        if args["state"] == "present":
            params["created_dirs"] = missing_dirs(path, existing_dirs) if not root.exists else []
            params["drop_in_created_dirs"] = missing_dirs(drop_in, existing_dirs) if drop and not drop.exists else []
        cleanup = None
        containerd_output = None
        if not (root.text or "").strip() and args["config_version"] == "auto" and args["state"] == "present":
            containerd_output = self._containerd_version(files, host_root)
        if args["state"] == "absent" and not root.exists and not (drop and drop.exists):
            if args["remove_backups"]:
                cleanup = self._remove_backups(files, host_root, [(f, None) for f in (root, drop) if f], check_mode)
            out = {"changed": False, "restart_required": False, "path": root.host_path, "changes": [],
                   "msg": "%s does not exist; nothing to remove" % root.host_path}
            if cleanup:
                out.update(changed=bool(cleanup["changes"]), changes=cleanup["changes"],
                           removed_backups=cleanup["removed"], removed_dirs=cleanup["removed_dirs"])
            return out
        plan = ct.edit(root.text, params, containerd_output=containerd_output,
                       drop_in_text=drop.text if drop else None, name=root.host_path,
                       containerd_not_asked=NOT_RUN if normalize_host_path(host_root) != "/" else None)
        if args["state"] == "absent" and args["remove_backups"]:
            # Before this run writes: a backup it makes itself (backup=true) is kept.
            given_back = [(root, plan["text"])] + ([(drop, plan["drop_in_text"])] if drop else [])
            cleanup = self._remove_backups(files, host_root, given_back, check_mode)
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
        backup_files = {}  # host path -> its backup, or None for a file this run created
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
            if which == "root" and plan["text"] is None:
                # state=absent on a file this module created: nothing of anyone else's is in it,
                # so nothing needs a backup either.
                did, backup_file = files.remove(root, check_mode), None
                diffs.append(text_diff(root.host_path, root.text, root.host_path, None))
            elif which == "root":
                did, backup_file = files.write(root, plan["text"], check_mode, backup=args["backup"], validate=validate)
                diffs.append(text_diff(root.host_path, root.text, root.host_path, plan["text"]))
            elif plan["drop_in_text"] is None:
                did, backup_file = files.remove(drop, check_mode), None
                diffs.append(text_diff(drop.host_path, drop.text, drop.host_path, None))
            else:
                did, backup_file = files.write(drop, plan["drop_in_text"], check_mode, backup=args["backup"],
                                               validate=validate)
                diffs.append(text_diff(drop.host_path, drop.text, drop.host_path, plan["drop_in_text"]))
            changed = changed or did
            if did and args["backup"] and not check_mode:
                target = root if which == "root" else drop
                if backup_file or not target.exists:
                    backup_files[target.host_path] = backup_file
        if plan["remove_dirs"]:
            # The directories the removed files' writes created, each only when it is empty now.
            removed_dirs = files.remove_empty_dirs(host_root, plan["remove_dirs"], check_mode,
                                                   owners=[f.host_path for f in (root, drop) if f])
            out["removed_dirs"] = removed_dirs
            out["changes"].extend("directory %s: created by this module (%s)" % (
                d, "removed" if d in removed_dirs else "removed when empty" if check_mode else "kept: not empty")
                for d in plan["remove_dirs"])
        if cleanup:
            changed = changed or bool(cleanup["changes"])
            out["changes"].extend(cleanup["changes"])
            out["removed_backups"] = cleanup["removed"]
            out.setdefault("removed_dirs", []).extend(cleanup["removed_dirs"])
        out["changed"] = changed
        out["restart_required"] = bool(changed and plan["restart_required"])
        if backup_files:
            # Each backup named with its file: a rollback restores each file from its own backup.
            out["backup_files"] = backup_files
            if backup_files.get(root.host_path):
                out["backup_file"] = backup_files[root.host_path]
        if changed and notes:
            out["changes"] = notes + out["changes"]
        if self.diff_mode and diffs:
            out["diff"] = diffs
        return out
