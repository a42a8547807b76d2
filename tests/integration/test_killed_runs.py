"""A converge killed at any point (SIGKILL to ansible-playbook's whole process group, modules on the
node included) leaves every file old or new: the next site.yml run succeeds and leaves no temporary
file behind, the one after changes nothing, and uninstall.yml still gives containerd's config back
byte for byte (issue 14)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
import toolkit_artifacts
from ansible_runner import REPO, ansible_env, recap, run_playbook

PLAYBOOKS = REPO / "playbooks"
CONFIG = "/etc/containerd/config.toml"
# Left by a write or a staged install that did not finish (module_utils/node_fs).
TEMP_MARKS = (".gpn-tmp.", ".gpn-stage.")
# Which task's start the kill follows, and how long after it: early (discovery), mid-install,
# the toolkit config, the CDI spec, containerd's config, the files kept for COS.
KILL_POINTS = [(2, 0.0), (5, 0.15), (6, 0.05), (8, 0.1), (9, 0.05), (10, 0.2)]


def temporaries(root):
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if any(m in path.name for m in TEMP_MARKS))


def killed_converge(extra, task_number, delay):
    """Start site.yml and SIGKILL its process group ``delay`` s after the ``task_number``-th task
    starts; returns the output up to then and how many tasks had started."""
    cmd = ["ansible-playbook", "-i", "localhost,", "-c", "local", str(PLAYBOOKS / "site.yml"), "-e", json.dumps(extra)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ansible_env(),
                            cwd=str(REPO), start_new_session=True)
    seen, lines = 0, []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("TASK ["):
                seen += 1
                if seen == task_number:
                    time.sleep(delay)
                    break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    return "".join(lines), seen


@pytest.mark.parametrize("task_number, delay", KILL_POINTS)
def test_a_killed_converge_is_finished_by_the_next_run(fake_node_factory, tmp_path, task_number, delay):
    node = fake_node_factory("cos", missing=("nvidiactl",))
    original = node.node_path(CONFIG).read_bytes()
    extra = {"gpu_node_hosts": "localhost", "gpu_node_host_root": str(node.root),
             "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
             "gpu_node_containerd_restart_mode": "none"}
    output, seen = killed_converge(extra, task_number, delay)
    assert seen == task_number, output  # killed where it was meant to be, not after the run ended
    assert "PLAY RECAP" not in output

    proc = run_playbook(PLAYBOOKS / "site.yml", extra_vars=extra)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert temporaries(node.root) == []
    again = run_playbook(PLAYBOOKS / "site.yml", extra_vars=extra)
    assert again.returncode == 0 and recap(again.stdout)["localhost"]["changed"] == 0, again.stdout[-4000:]

    removed = run_playbook(PLAYBOOKS / "uninstall.yml", extra_vars=extra)
    assert removed.returncode == 0, removed.stdout[-4000:]
    assert node.node_path(CONFIG).read_bytes() == original
    assert temporaries(node.root) == []
