"""The collection's code uses Ansible's public interface only.

Mitogen for Ansible replaces ActionBase's transfer and pipelining methods (some with an
``assert False``), and new ansible-core releases change private attributes without notice. So no
code under plugins/ may reach a ``_``-prefixed method of ActionBase, an attribute of a
connection or shell, or a ``_``-prefixed attribute of AnsibleModule. The one exception is
``ActionBase._execute_module``, which Ansible's developer guide names as the way an action plugin
runs a module (and Mitogen implements), called from one place.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.parameters import PASS_VARS
from ansible.plugins.action import ActionBase

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"
ALLOWED = {("plugin_utils/action_base.py", "_execute_module")}
CONNECTION_ATTRIBUTES = {"_connection", "_shell", "_play_context"}


def _private_names():
    action = {name for name in dir(ActionBase) if name.startswith("_") and not name.startswith("__")}
    # ActionBase's own instance attributes other than the ones every action plugin reads
    # (_task, _loader, _templar), and AnsibleModule's private attributes.
    module = set(re.findall(r"self\.(_[a-z][a-z_]*) =", inspect.getsource(basic.AnsibleModule)))
    module |= {name for name, _default in PASS_VARS.values() if name.startswith("_")}
    return action | module | CONNECTION_ATTRIBUTES


def _uses(tree, names):
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            yield node.lineno, node.attr
        # getattr(obj, "_name") reaches the same attribute.
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr", "hasattr")
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in names):
            yield node.lineno, node.args[1].value


def test_the_private_names_are_known():
    # The check below can only fail if it knows what to look for.
    names = _private_names()
    assert {"_is_pipelining_enabled", "_low_level_execute_command", "_transfer_file", "_find_needle",
            "_tmpdir", "_keep_remote_files", "_connection"} <= names


@pytest.mark.parametrize("path", sorted(PLUGINS.rglob("*.py")), ids=lambda p: str(p.relative_to(PLUGINS)))
def test_no_private_ansible_api(path):
    relative = str(path.relative_to(PLUGINS))
    found = [(line, name) for line, name in _uses(ast.parse(path.read_text(encoding="utf-8")), _private_names())
             if (relative, name) not in ALLOWED]
    assert not found, "%s reaches Ansible's private API: %s" % (relative, ", ".join("%s (line %d)" % (name, line) for line, name in found))


def test_a_private_call_is_caught():
    tree = ast.parse("self._is_pipelining_enabled('new')\nx = getattr(module, '_tmpdir', None)\nself._connection._shell.tmpdir = 1\n")
    assert sorted(name for _line, name in _uses(tree, _private_names())) == [
        "_connection", "_is_pipelining_enabled", "_shell", "_tmpdir"]
