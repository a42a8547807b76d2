# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Commands an action plugin runs on the controller, in the shape module_utils asks for.

:mod:`module_utils.toolkit_source` takes a ``run_tool(name, argv, data)``; on the node the module
passes ``AnsibleModule.run_command``, here it is this, with the same answers.
"""

from __future__ import annotations

import shutil
import subprocess


def run_tool(name, argv, data=None):
    """``(rc, stdout, stderr)`` of the command ``name`` found on PATH, or None when there is none."""
    tool = shutil.which(name)
    if not tool:
        return None
    proc = subprocess.run([tool, *argv], input=data, capture_output=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr
