# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``engine_restart``: after a restart the engine did not come back from (or a
check after it refused), put its files back from their backups, restart it again and fail naming
both. What to put back and what to say is decided in ``module_utils.engine_restart``."""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import engine_restart as er
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import NodeFileError, NodeFiles


class ActionModule(NodeActionBase):
    argument_spec = staticmethod(argument_specs.engine_restart)

    def converge(self, args, task_vars):
        if self.check_mode:
            # As the restart itself (ansible.builtin.raw): nothing restarted, nothing to roll back.
            return {"skipped": True, "changed": False, "msg": "check mode: %s is not restarted" % args["engine"]}
        restart = args["restart"] or {}
        if args["rollback_because"]:
            error = args["rollback_because"]
        elif restart.get("rc") is None or restart.get("skipped"):
            return {"failed": True, "changed": False,
                    "msg": "restart (the restart's registered result) or rollback_because is required"}
        elif restart["rc"] == 0:
            return {"changed": False, "msg": "%s answers: nothing to roll back" % args["engine"]}
        else:
            error = er.output_line(restart.get("stdout"))
        files = NodeFiles(self, task_vars)
        backup_files = {normalize_host_path(path): (None if copy is None else normalize_host_path(copy))
                        for path, copy in args["backup_files"].items()}
        rolled_back, problems = self._roll_back(files, args["host_root"], backup_files)
        # The restart after the rollback is rare: it runs through the command module.
        rc, stdout = files.run(["/bin/sh", "-c", args["restart_script"]])
        return {
            "failed": True,
            "changed": True,
            "rc": rc,
            "stdout": stdout,
            "rolled_back": rolled_back,
            "msg": er.rollback_message(args["engine"], error, args["timeout"], rolled_back, rc == 0,
                                       er.output_line(stdout), problems),
        }

    @staticmethod
    def _roll_back(files, host_root, backup_files):
        """Put each file back from its backup and remove those the run created. Returns what was
        done (as ``backup_files``) and a sentence for each file that could not be."""
        restore, remove = er.rollback_steps(backup_files)
        done, problems = set(), []
        for path, copy in restore:
            try:
                (current,), _existing, (text,) = files.read_many(host_root, [path], texts=[copy])
                if text is None:
                    problems.append("%s, whose backup %s cannot be read" % (path, copy))
                    continue
                files.write(current, text, False)
                done.add(path)
            except NodeFileError as exc:
                problems.append(str(exc))
        for path in remove:
            try:
                (current,), _existing, _texts = files.read_many(host_root, [path])
                files.remove(current, False)
                done.add(path)
            except NodeFileError as exc:
                problems.append(str(exc))
        # In the order given: the message lists them as the editing module named them.
        return {path: copy for path, copy in backup_files.items() if path in done}, problems
