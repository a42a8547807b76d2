"""A user's own role and molecule scenario, as the README's "Try it on simulated nodes" shows them
(docs/examples/gpu_workers): copied out of the checkout, run with ``molecule test`` against the
installed collection (ANSIBLE_COLLECTIONS_PATH), the node built by the collection's
``simulated_node`` playbook, checked by its ``verify`` playbook."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from ansible_runner import REPO, ansible_env

EXAMPLE = REPO / "docs" / "examples" / "gpu_workers"


def test_a_users_own_molecule_scenario_passes_as_the_readme_shows_it(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the simulated node's device nodes are made with mknod: root is needed")
    role = tmp_path / "gpu_workers"
    shutil.copytree(EXAMPLE, role)
    proc = subprocess.run(["molecule", "test"], cwd=role, env=ansible_env(NO_COLOR="1", PY_COLORS="0"),
                          capture_output=True, text=True, timeout=900, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    # Every step of the user's sequence ran and passed: the check-mode converge, the converge, a
    # second converge that changed nothing, and verify.
    for step in ("prepare", "check", "converge", "idempotence", "verify"):
        assert re.search(r"default (>|➜) %s(:|\]) Executed: Successful" % step, output), (step, output[-4000:])
    assert "successful=8" in output and "failed=0" in output
    # verify's table had the node, clean.
    assert re.search(r'"sim-gpu-1 +cos +535\.104\.12 +ok +ok +ok +ok +ok +none"', output), output[-6000:]
