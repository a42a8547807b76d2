# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``docker_runtime``: read ``daemon.json`` and its journal from the node, decide
here (``module_utils/docker_config.py``), write them back atomically."""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config as dc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.runtimes import ConfigError, normalize_runtimes
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.engine import BackupSet, EngineAction, EnginePlan, FileStep
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import NodeFiles, missing_dirs, parent_dirs

# The journal holds a copy of daemon.json: readable by root only.
JOURNAL_MODE = "0600"


class ActionModule(EngineAction):
    argument_spec = staticmethod(argument_specs.docker_runtime)
    refusals = (ConfigError,)

    def refusal_message(self, exc, args):
        message = str(exc).rstrip("; ")
        if normalize_host_path(args["path"]) not in message and "daemon.json" not in message:
            message = "%s: %s" % (args["path"], message)
        if "left as it was" not in message:
            message += "; the file was left as it was"
        return message

    def converge(self, args, task_vars):
        host_root = args["host_root"] or "/"
        files = NodeFiles(self, task_vars, args["read_ahead"])
        path = normalize_host_path(args["path"])
        present = args["state"] == "present"
        params = {
            "state": args["state"],
            "runtimes": normalize_runtimes(args["runtimes"], args["install_dir"], dc.RESERVED_RUNTIME_NAMES),
            "set_as_default": args["set_as_default"],
            "enable_cdi": args["enable_cdi"],
        }
        # One round trip: the file, its journal, and (present) which parent directories exist.
        read, existing_dirs, _texts = files.read_many(host_root, [path, dc.journal_path(path)],
                                                      exist=parent_dirs(path) if present else [])
        config, journal = read
        params["path"] = config.host_path
        params["created_dirs"] = missing_dirs(config.host_path, existing_dirs) if present and not config.exists else []
        decided = dc.plan(config.text if config.exists else None, params, journal.text if journal.exists else None,
                          name=config.host_path, journal_name=journal.host_path)
        # The journal is written before the file it describes, and removed after the file is given
        # back: whatever fails half-way, the journal can still undo what the file holds.
        steps = [FileStep(journal, decided["journal_text"], mode=JOURNAL_MODE, copy_on_remove=True,
                          read_by_engine=False, diff=False),
                 FileStep(config, decided["text"])]
        if not present:
            steps.reverse()

        def judge(texts):
            return dc.own_backups(config.host_path, texts, decided["text"])

        plan = EnginePlan(steps, decided["remove_dirs"], decided["changes"], decided["warnings"],
                          decided["restart_required"], {"path": config.host_path, "journal": journal.host_path},
                          backups=[BackupSet(config, dc.backup_pattern(config.host_path), judge,
                                             gone=decided["text"] is None)],
                          notes=[config.link_note()])
        return self.carry_out(files, host_root, plan, backup=args["backup"],
                              remove_backups=args["remove_backups"] and not present)
