"""Run a module's ``main()`` in-process with given arguments and return its result dict.

Works with ansible-core 2.16 and later: uses ``patch_module_args`` where it exists (2.19+),
else the older ``_ANSIBLE_ARGS`` hook.
"""

from __future__ import annotations

import contextlib
import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.common.text.converters import to_bytes

try:
    from ansible.module_utils import _internal as ansible_internal
except ImportError:  # ansible-core < 2.19
    ansible_internal = None


class ModuleExit(Exception):
    def __init__(self, result, failed):
        super().__init__(result.get("msg"))
        self.result = result
        self.failed = failed


@contextlib.contextmanager
def _module_args(args):
    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:  # ansible-core < 2.19
        payload = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        old = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = payload
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = old
    else:
        with patch_module_args(args):
            yield


def run_module(main, args, check_mode=False, diff=False, monkeypatch=None):
    """Call ``main`` with ``args``; return ``(result, failed)``."""
    args = dict(args)
    if check_mode:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True

    def exit_json(self, **kwargs):
        raise ModuleExit(kwargs, False)

    def fail_json(self, msg, **kwargs):
        kwargs["msg"] = msg
        raise ModuleExit(kwargs, True)

    ansible_warnings._global_warnings.clear()
    mp = monkeypatch or pytest.MonkeyPatch()
    mp.setattr(basic.AnsibleModule, "exit_json", exit_json)
    # ansible-core 2.19 sends a module's warnings to the controller's display, not into its result,
    # once anything in the test process has imported controller code; a module runs on the node.
    if hasattr(ansible_internal, "is_controller"):
        mp.setattr(ansible_internal, "is_controller", False)
    mp.setattr(basic.AnsibleModule, "fail_json", fail_json)
    try:
        with _module_args(args), pytest.raises(ModuleExit) as caught:
            main()
    finally:
        if monkeypatch is None:
            mp.undo()
    result = caught.value.result
    messages = list(ansible_warnings.get_warning_messages())
    ansible_warnings._global_warnings.clear()
    if messages:
        result["warnings"] = messages
    return result, caught.value.failed
