# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``docker_runtime``: read ``daemon.json`` and its journal from the node, decide
here (``module_utils/docker_config.py``), write them back atomically."""

from __future__ import annotations

import os
import time

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config as dc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import text_diff
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import (
    NodeFile,
    NodeFiles,
    missing_dirs,
    parent_dirs,
)

# The journal holds a copy of daemon.json: readable by root only.
JOURNAL_MODE = "0600"


class ActionModule(NodeActionBase):
    argument_spec = staticmethod(dc.argument_spec)
    refusals = (dc.ConfigError,)

    def refusal_message(self, exc, args):
        message = str(exc).rstrip("; ")
        if normalize_host_path(args["path"]) not in message and "daemon.json" not in message:
            message = "%s: %s" % (args["path"], message)
        if "left as it was" not in message:
            message += "; the file was left as it was"
        return message

    def converge(self, args, task_vars):
        host_root = args["host_root"] or "/"
        check_mode = self.check_mode
        files = NodeFiles(self, task_vars, args["read_ahead"])
        path = normalize_host_path(args["path"])
        journal_path = dc.journal_path(path)
        present = args["state"] == "present"
        params = {
            "state": args["state"],
            "runtimes": dc.normalize_runtimes(args["runtimes"], args["install_dir"]),
            "set_as_default": args["set_as_default"],
            "enable_cdi": args["enable_cdi"],
        }
        # One round trip: the file, its journal, and (present) which parent directories exist.
        read, existing_dirs, _texts = files.read_many(host_root, [path, journal_path], exist=parent_dirs(path) if present else [])
        config, journal = read
        params["path"] = config.host_path
        params["created_dirs"] = missing_dirs(config.host_path, existing_dirs) if present and not config.exists else []
        plan = dc.plan(
            config.text if config.exists else None,
            params,
            journal.text if journal.exists else None,
            name=config.host_path,
            journal_name=journal.host_path,
        )
        out = {"path": config.host_path, "journal": journal.host_path, "changes": list(plan["changes"])}
        if plan["warnings"]:
            out["warnings"] = list(plan["warnings"])
        note = config.link_note()
        if note:
            out["symlinks"] = [note]
        config_text = config.text if config.exists else None
        journal_text = journal.text if journal.exists else None
        config_changed = plan["text"] != config_text
        journal_changed = plan["journal_text"] != journal_text
        backup_files = {}  # host path -> its backup, or None for a file this run created
        changed = False

        def write_journal():
            if not journal_changed:
                return False
            if plan["journal_text"] is None:
                if args["backup"] and not check_mode:
                    # A rollback of this removal puts the journal back with the file it describes.
                    backup_files[journal.host_path] = self._keep_copy(files, journal)
                return files.remove(journal, check_mode)
            did, backup = files.write(journal, plan["journal_text"], check_mode, backup=args["backup"], mode=JOURNAL_MODE)
            if did and args["backup"] and not check_mode:
                backup_files[journal.host_path] = backup
            return did

        def write_config():
            if not config_changed:
                return False
            if plan["text"] is None:
                # Only a file this module created goes: nothing in it was anyone else's, so no backup.
                return files.remove(config, check_mode)
            did, backup = files.write(config, plan["text"], check_mode, backup=args["backup"])
            if did and args["backup"] and not check_mode:
                backup_files[config.host_path] = backup
            return did

        # The journal is written before the file it describes, and removed after the file is given
        # back: whatever fails half-way, the journal can still undo what the file holds.
        steps = (write_journal, write_config) if present else (write_config, write_journal)
        for step in steps:
            changed = step() or changed
        if plan["remove_dirs"]:
            removed = files.remove_empty_dirs(host_root, plan["remove_dirs"], check_mode, owners=[config.host_path])
            out["removed_dirs"] = removed
            out["changes"].extend(
                "directory %s: created by this module (%s)" % (d, "removed" if d in removed else "removed when empty" if check_mode else "kept: not empty")
                for d in plan["remove_dirs"]
            )
        out["changed"] = changed
        out["restart_required"] = bool(config_changed and plan["restart_required"])
        if backup_files:
            out["backup_files"] = backup_files
            if backup_files.get(config.host_path):
                out["backup_file"] = backup_files[config.host_path]
        if changed and note:
            out["changes"] = [note] + out["changes"]
        if self.diff_mode and config_changed:
            out["diff"] = [text_diff(config.host_path, config_text, config.host_path, plan["text"])]
        if args["remove_backups"] and not present:
            removed, removed_dirs = self._remove_backups(files, config, plan["text"], check_mode)
            if removed:
                out["removed_backups"] = removed
                out["changes"].extend("backup %s: made by this module (removed)" % b for b in removed)
                out["removed_dirs"] = out.get("removed_dirs", []) + removed_dirs
                out["changes"].extend("directory %s: created by this module (removed)" % d for d in removed_dirs)
                out["changed"] = True
        return out

    @staticmethod
    def _keep_copy(files, node_file):
        """Write a timestamped copy of ``node_file`` next to it, named as ``backup`` names them."""
        copy_path = "%s.%d.%s~" % (node_file.host_path, os.getpid(), time.strftime("%Y-%m-%d@%H:%M:%S"))
        files.write(NodeFile(node_file.host_root, copy_path, copy_path, False, None, []), node_file.text, False,
                    mode=JOURNAL_MODE)
        return copy_path

    @staticmethod
    def _remove_backups(files, config, given_back, check_mode):
        """``remove_backups``: the copies ``backup`` made of the file and its journal while they held
        this module's edits go, after the file was given back; then the directories this module
        created for it, when empty."""
        candidates = files.backups_of(config, dc.backup_pattern(config.host_path))
        if not candidates:
            return [], []
        _read, _existing, texts = files.read_many(config.host_root, [], texts=candidates)
        ours, dirs = dc.own_backups(config.host_path, dict(zip(candidates, texts)), given_back)
        for backup in ours:
            files.remove(NodeFile(config.host_root, backup, backup, True, "", []), check_mode)
        removed_dirs = (files.remove_empty_dirs(config.host_root, dirs, check_mode, owners=[config.host_path])
                        if given_back is None else [])
        return ours, removed_dirs
