"""Every module says clearly, and before touching anything, that the node's Python is too old."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import old_python
import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_python

PLUGINS = os.path.join(os.path.dirname(os.path.abspath(node_python.__file__)), os.pardir)
MODULES = sorted(glob.glob(os.path.join(PLUGINS, "modules", "*.py")))
GUARD = "import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python"
PYTHON36 = old_python.find(6)
needs_python36 = pytest.mark.skipif(PYTHON36 is None, reason="no Python 3.6 here (pyenv builds it on CI machines)")


def test_the_message_names_the_interpreter_and_what_to_set():
    message = node_python.too_old_message("/usr/libexec/platform-python", "3.6.8")
    assert "Python 3.8 or later" in message
    assert "/usr/libexec/platform-python (Python 3.6.8)" in message
    assert "ansible_python_interpreter" in message and "Nothing was changed" in message


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_every_module_checks_before_its_other_collection_imports(path):
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    ours = [i for i, line in enumerate(lines) if "ansible_collections.gpu_node" in line and line.startswith(("from ", "import "))]
    assert ours and lines[ours[0]].startswith(GUARD), "%s: the first collection import must be node_python" % path


@needs_python36
@pytest.mark.parametrize("path", MODULES + [node_python.__file__], ids=os.path.basename)
def test_the_modules_parse_on_python_3_6(path):
    proc = subprocess.run([PYTHON36, "-c", "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')", path],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@needs_python36
def test_python_3_6_gets_one_failure_naming_it():
    proc = subprocess.run([PYTHON36, node_python.__file__], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and not proc.stderr
    result = json.loads(proc.stdout)
    assert result["failed"] is True and result["changed"] is False
    assert "ran with %s (Python 3.6." % PYTHON36 in result["msg"], result


def test_a_supported_python_passes_through():
    proc = subprocess.run([sys.executable, node_python.__file__], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout
