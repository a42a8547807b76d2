# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``crio_runtime``: read CRI-O's configuration from the node, decide here
(``module_utils/crio_config.py``), write the drop-in back atomically."""

from __future__ import annotations

import os
import posixpath
import re
import time

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import crio_config as crio
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import text_diff
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toml_edit
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import (
    NodeFile,
    NodeFiles,
    missing_dirs,
    parent_dirs,
)


class ActionModule(NodeActionBase):
    argument_spec = staticmethod(crio.argument_spec)
    refusals = (crio.ConfigError, toml_edit.TomlEditError)

    def refusal_message(self, exc, args):
        return "%s; nothing was written" % exc

    def converge(self, args, task_vars):
        host_root = args["host_root"] or "/"
        check_mode = self.check_mode
        files = NodeFiles(self, task_vars, args["read_ahead"])
        path = normalize_host_path(args["path"])
        config_path = normalize_host_path(args["config_path"])
        present = args["state"] == "present"
        params = {"state": args["state"], "set_as_default": args["set_as_default"],
                  "runtimes": crio.normalize_runtimes(args["runtimes"], args["install_dir"])}
        others = [p for p in files.files_under(host_root, crio.drop_in_dir(path)) if p != path] if present else []
        order = crio.read_order(config_path, others)
        read, existing, texts = files.read_many(host_root, [path], exist=parent_dirs(path) + order, texts=order)
        drop_in = read[0]
        current = drop_in.text if drop_in.exists else None
        if current is not None and not crio.is_ours(current):
            raise crio.ConfigError("%s was not written by this module (its first line is not %r); it is left as it "
                                   "is: choose another path" % (drop_in.host_path, crio.MARK))
        out = {"path": drop_in.host_path, "changes": [], "backup_files": {}}
        if present:
            parsed = []
            for where, text in zip(order, texts):
                if text is None:
                    if where in existing:
                        raise crio.ConfigError("%s cannot be read as UTF-8 text, so CRI-O's settings cannot be "
                                               "known" % where)
                    continue
                parsed.append((where, toml_edit.load(text, where)))
            plan = crio.plan(parsed, params)
            created = (crio.created_dirs_of(current) if current is not None
                       else missing_dirs(drop_in.host_path, existing))
            text = crio.header(plan["base"], plan["base_sources"], created) + "\n" + toml_edit.document_text(plan["data"])
            self._check_written(text, plan["data"], drop_in.host_path)
            out.update(base_runtime=plan["base"], base_sources=plan["base_sources"],
                       default_runtime=plan["default_runtime"], read=[p for p, _d in parsed])
            if plan["notes"]:
                out["notes"] = plan["notes"]
            changed = text != current
            if changed:
                out["changes"].append("%s: %s" % (drop_in.host_path, "updated" if current is not None else "created"))
                if args["backup"] and current is not None and not check_mode:
                    out["backup_files"][drop_in.host_path] = self._keep_copy(files, drop_in)
                elif args["backup"] and not check_mode:
                    out["backup_files"][drop_in.host_path] = None
                files.write(drop_in, text, check_mode, mode="0644")
        else:
            text = None
            changed = current is not None
            if changed:
                out["changes"].append("%s: removed" % drop_in.host_path)
                if args["backup"] and not check_mode:
                    out["backup_files"][drop_in.host_path] = self._keep_copy(files, drop_in)
                files.remove(drop_in, check_mode)
                dirs = crio.created_dirs_of(current)
                if dirs and not check_mode:
                    out["removed_dirs"] = files.remove_empty_dirs(host_root, dirs, check_mode, owners=[drop_in.host_path])
            if args["remove_backups"]:
                self._remove_backups(files, drop_in, current, check_mode, out)
        out["changed"] = bool(out["changes"])
        out["restart_required"] = changed
        if not out["backup_files"]:
            del out["backup_files"]
        if self.diff_mode and changed:
            out["diff"] = [text_diff(drop_in.host_path, current, drop_in.host_path, text)]
        return out

    @staticmethod
    def _check_written(text, data, where):
        """The text must read back as exactly the data, and as handlers CRI-O accepts."""
        if toml_edit.load(text, where) != data:
            raise crio.ConfigError("%s: the text rendered does not read back as the settings meant" % where)
        for name, table in data["crio"]["runtime"]["runtimes"].items():
            crio.check_handler(name, table, where)

    @staticmethod
    def _copy_path(drop_in):
        """Where a copy of the drop-in goes: beside the drop-in directory, hidden. Never inside it:
        CRI-O reads every file there, a copy included."""
        directory = posixpath.dirname(posixpath.dirname(drop_in.host_path))
        name = ".%s.%d.%s~" % (posixpath.basename(drop_in.host_path), os.getpid(), time.strftime("%Y-%m-%d@%H:%M:%S"))
        return posixpath.join(directory, name)

    def _keep_copy(self, files, drop_in):
        copy_path = self._copy_path(drop_in)
        files.write(NodeFile(drop_in.host_root, copy_path, copy_path, False, None, []), drop_in.text, False, mode="0644")
        return copy_path

    @staticmethod
    def _remove_backups(files, drop_in, current, check_mode, out):
        """``remove_backups``: the copies ``backup`` made of the drop-in (they carry its first line)."""
        pattern = r"^\.%s\.[0-9]+\.[0-9]{4}-[0-9]{2}-[0-9]{2}@[0-9]{2}:[0-9]{2}:[0-9]{2}~$" % re.escape(
            posixpath.basename(drop_in.host_path))
        anchor = NodeFile(drop_in.host_root, crio.drop_in_dir(drop_in.host_path), None, False, None, [])
        candidates = files.backups_of(anchor, pattern)
        if not candidates:
            return
        _read, _existing, texts = files.read_many(drop_in.host_root, [], texts=candidates)
        removed = [c for c, t in zip(candidates, texts) if crio.is_ours(t)]
        dirs = []
        for copy_path, text in zip(candidates, texts):
            if copy_path in removed:
                files.remove(NodeFile(drop_in.host_root, copy_path, copy_path, True, text, []), check_mode)
                dirs.extend(crio.created_dirs_of(text))
        out["removed_backups"] = removed
        out["changes"].extend("backup %s: made by this module (removed)" % c for c in removed)
        if current is None and dirs and not check_mode:
            out["removed_dirs"] = files.remove_empty_dirs(
                drop_in.host_root, sorted(set(dirs), key=lambda d: (-d.count("/"), d)), check_mode,
                owners=[drop_in.host_path])
