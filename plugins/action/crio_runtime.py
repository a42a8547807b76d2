# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``crio_runtime``: read CRI-O's configuration from the node, decide here
(``module_utils/crio_config.py``), write the drop-in back atomically."""

from __future__ import annotations

import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs, ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import crio_config as crio
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change, file_action
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.runtimes import ConfigError, normalize_runtimes
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toml_edit
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.engine import BackupSet, EngineAction, EnginePlan, FileStep
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import NodeFiles, missing_dirs, parent_dirs


class ActionModule(EngineAction):
    argument_spec = staticmethod(argument_specs.crio_runtime)
    refusals = (ConfigError, toml_edit.TomlEditError)

    def refusal_message(self, exc, args):
        return "%s; nothing was written" % exc

    def converge(self, args, task_vars):
        host_root = args["host_root"] or "/"
        files = NodeFiles(self, task_vars, args["read_ahead"])
        path = normalize_host_path(args["path"])
        config_path = normalize_host_path(args["config_path"])
        present = args["state"] == "present"
        params = {"state": args["state"], "set_as_default": args["set_as_default"],
                  "runtimes": normalize_runtimes(args["runtimes"], args["install_dir"])}
        others = [p for p in files.files_under(host_root, crio.drop_in_dir(path)) if p != path] if present else []
        order = crio.read_order(config_path, others)
        read, existing, texts = files.read_many(host_root, [path], exist=parent_dirs(path) + order, texts=order)
        drop_in = read[0]
        current = drop_in.text if drop_in.exists else None
        if current is not None and not crio.is_ours(current):
            raise ConfigError("%s was not written by this module (its first line is not %r); it is left as it "
                              "is: choose another path" % (drop_in.host_path, crio.MARK))
        result = {"path": drop_in.host_path}
        remove_dirs = []
        if present:
            parsed = []
            for where, text in zip(order, texts):
                if text is None:
                    if where in existing:
                        raise ConfigError("%s cannot be read as UTF-8 text, so CRI-O's settings cannot be "
                                          "known" % where)
                    continue
                parsed.append((where, toml_edit.load(text, where)))
            decided = crio.plan(parsed, params)
            created = (crio.created_dirs_of(current) if current is not None
                       else missing_dirs(drop_in.host_path, existing))
            text = crio.render(decided["base"], decided["base_sources"], created, toml_edit.document_text(decided["data"]))
            self._check_written(text, decided["data"], drop_in.host_path)
            if ownership.same_but_record(current, text, ownership.LEGACY_CRIO):
                text = current  # an earlier release's record of the same directories: no rewrite, no restart
            result.update(base_runtime=decided["base"], base_sources=decided["base_sources"],
                          default_runtime=decided["default_runtime"], read=[p for p, _d in parsed])
            if decided["notes"]:
                result["notes"] = decided["notes"]
        else:
            text = None
            if current is not None:
                remove_dirs.append((drop_in.host_path, crio.created_dirs_of(current)))
        changes = [change(drop_in.host_path, file_action(current, text))] if text != current else []
        # A copy never goes into the drop-in directory: CRI-O reads every file there, a copy too.
        copy_dir = posixpath.dirname(crio.drop_in_dir(drop_in.host_path))
        hand_changed = current is not None and text != current and ownership.changed_since_written(current)
        step = FileStep(drop_in, text, mode="0644", copy_dir=copy_dir, copy_on_remove=True,
                        keep_copy_because="changed by hand since this module wrote it" if hand_changed else None)

        def judge(texts):
            # A copy that holds someone's hand edits is theirs now: remove_backups leaves it.
            ours = [c for c, t in texts.items() if crio.is_ours(t) and not ownership.changed_since_written(t)]
            return ours, [d for c in ours for d in crio.created_dirs_of(texts[c])]

        backups = BackupSet(drop_in, ownership.backup_pattern(drop_in.host_path, hidden=True), judge,
                            gone=current is None, directory=copy_dir)
        plan = EnginePlan([step], remove_dirs, changes, restart_required=True, result=result, backups=[backups])
        return self.carry_out(files, host_root, plan, backup=args["backup"],
                              remove_backups=args["remove_backups"] and not present)

    @staticmethod
    def _check_written(text, data, where):
        """The text must read back as exactly the data, and as handlers CRI-O accepts."""
        if toml_edit.load(text, where) != data:
            raise ConfigError("%s: the text rendered does not read back as the settings meant" % where)
        for name, table in data["crio"]["runtime"]["runtimes"].items():
            crio.check_handler(name, table, where)
