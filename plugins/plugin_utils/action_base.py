# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base of this collection's action plugins (controller side).

It gives :class:`~.node_files.NodeFiles` what it needs from a running action, a module run on the
node and the task's check and diff modes, as public methods, so that no other code reaches into
the action's protected attributes; and it validates the task's arguments against the module's
spec (:mod:`...module_utils.argument_specs`, the spec the module's documentation is checked
against), so every action plugin rejects a wrong argument the way a module would.
"""

from __future__ import annotations

import os

from ansible.plugins.action import ActionBase

from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import NodeFileError


class NodeActionBase(ActionBase):
    # No remote temp dir up front: it costs two round trips (mkdir, rm) per task and host, and a
    # task that answers from read_ahead makes none. _execute_module makes one when it needs it (no
    # pipelining); toolkit_install makes its own for the payload.
    TRANSFERS_FILES = False
    _requires_connection = True
    # staticmethod(a function of module_utils.argument_specs): the module's argument spec.
    argument_spec = None
    # The errors that mean "this file cannot be edited safely": the task fails with
    # refusal_message(exc, args) and nothing is written. A NodeFileError always fails it too.
    refusals = ()

    def run(self, tmp=None, task_vars=None):
        """Validate the arguments, run :meth:`converge` and turn a refusal into a failed result."""
        result = super().run(tmp, task_vars)
        del tmp
        args = self.task_args()
        try:
            result.update(self.converge(args, task_vars or {}))
        except self.refusals as exc:
            result.update(failed=True, changed=False, msg=self.refusal_message(exc, args))
        except NodeFileError as exc:
            result.update(failed=True, changed=False, msg=str(exc))
        return result

    def converge(self, args, task_vars):
        """The task's work on validated ``args``: the result dict."""
        raise NotImplementedError

    def refusal_message(self, exc, args):
        """What a failed task says for one of :attr:`refusals`."""
        return str(exc)

    def task_args(self):
        """The task's arguments, validated against :attr:`argument_spec`, with defaults filled in.
        Raises AnsibleActionFail naming every wrong argument."""
        _validation, args = self.validate_argument_spec(argument_spec=self.argument_spec())
        return args

    def controller_file(self, src):
        """``src`` on the controller: as given when absolute, else searched as the copy module
        searches (the role's and playbook's ``files/`` folders, then beside them). Raises
        AnsibleFileNotFound."""
        return self._loader.path_dwim_relative_stack(self._task.get_search_path(), "files", os.path.expanduser(src))

    def run_module(self, name, args, task_vars):
        """Run the module ``name`` on the node with ``args``; its result dict."""
        return self._execute_module(module_name=name, module_args=args, task_vars=task_vars)

    @property
    def check_mode(self):
        return bool(self._task.check_mode)

    @property
    def diff_mode(self):
        return bool(self._task.diff)
