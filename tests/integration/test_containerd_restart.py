"""The containerd role's restart handler against a real containerd 1.6: restart only on change,
confirm it answers, and roll back when it does not come back.

The node's config is the GKE one with its daemon paths moved to a short temp dir, so the
real containerd can run on it. The restart command kills the running daemon and starts a new one
on the node's config. To get "a containerd that refuses the new config", the restart command in
the rollback test refuses to start on a config that names a runtime binary missing on this
machine, as a stricter containerd would; the rollback, the second restart and the health check
all run against the real daemon.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import cri
import pytest
import toolkit_artifacts
from ansible_runner import REPO, recap, run_playbook
from fakenode import GKE_CONTAINERD_CONFIG

pytestmark = pytest.mark.skipif(shutil.which("containerd") is None or shutil.which("ctr") is None,
                                reason="needs Debian's containerd (apt-get install containerd)")

RESTART = """\
#!/bin/sh
# Restart the test's containerd: stop the running one, start a new one on the node's config.
set -eu
work={work}
if [ -f "$work/pid" ]; then kill "$(cat "$work/pid")" 2>/dev/null || true; sleep 0.2; fi
echo restart >> "$work/restarts"
{refuse}
setsid containerd --config {config} > "$work/containerd.log" 2>&1 < /dev/null &
echo $! > "$work/pid"
"""
REFUSE = """\
for binary in $(sed -n 's/^ *BinaryName = "\\(.*\\)"/\\1/p' {config}); do
  [ -x "$binary" ] || {{ echo "refusing: $binary missing" >> "$work/containerd.log"; {exit}; }}
done
"""
# What the restart command does on a config containerd refuses: return as if it had restarted (the
# daemon is simply not there afterwards), or fail the way `systemctl restart` does when a
# Type=notify unit exits during start-up.
QUIET = "exit 0"
LIKE_SYSTEMCTL = ('echo "Job for containerd.service failed because the control process exited with error code." >&2; '
                  "exit 1")


@pytest.fixture
def node_with_containerd(fake_node_factory):
    node = fake_node_factory("cos")
    # containerd's sockets need short paths (unix sockets: ~104 bytes), so its state lives in /tmp.
    work = Path(tempfile.mkdtemp(prefix="ctd-", dir="/tmp"))
    text, sock = cri.isolate(GKE_CONTAINERD_CONFIG, work)
    config = node.node_path("/etc/containerd/config.toml")
    config.write_text(text)
    health = work / "health"
    health.write_text("#!/bin/sh\nexec ctr --connect-timeout 1s --address %s version\n" % sock)
    health.chmod(0o755)
    yield node, work, config, sock
    pid_file = work / "pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(work, ignore_errors=True)


def _restart_script(work, config, refuse, refusal=QUIET):
    script = work / "restart.sh"
    script.write_text(RESTART.format(work=work, config=config,
                                     refuse=textwrap.dedent(REFUSE.format(config=config, exit=refusal)) if refuse else ""))
    script.chmod(0o755)
    return script


def _converge(node, work, socket, script, state="present", toolkit_src=None):
    if toolkit_src is None:
        # gpu_node refuses to register runtimes whose binaries are not installed. The refusing
        # restart script still finds them missing: it looks at their host paths on this machine.
        toolkit_src = toolkit_artifacts.build_tree(work / "artifacts")
    extra = {
        "gpu_node_toolkit_src": str(toolkit_src),
        "gpu_node_hosts": "localhost", "gpu_node_host_root": str(node.root), "gpu_node_state": state,
        "gpu_node_containerd_restart_mode": "command", "gpu_node_containerd_restart_command": str(script),
        "gpu_node_cdi_enabled": False, "containerd_health_command": "%s %%s" % (work / "health"),
        "containerd_restart_timeout": 10,
    }
    return run_playbook(REPO / "playbooks" / "site.yml", extra_vars=extra)


def _restarts(work):
    path = work / "restarts"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _wait_answering(node, socket):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if subprocess.run(["ctr", "--address", str(socket), "version"], capture_output=True, check=False).returncode == 0:
            return True
        time.sleep(0.1)
    return False


def test_restart_once_on_change_never_on_no_change(node_with_containerd):
    node, work, config, socket = node_with_containerd
    script = _restart_script(work, config, refuse=False)
    subprocess.run([str(script)], check=True)
    assert _wait_answering(node, socket)
    baseline = _restarts(work)

    proc = _converge(node, work, socket, script)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert _restarts(work) == baseline + 1
    handlers = cri.status(socket)["info"]["config"]["containerd"]["runtimes"]
    assert {"nvidia", "nvidia-cdi", "nvidia-legacy", "runc"} <= set(handlers)

    proc = _converge(node, work, socket, script)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert recap(proc.stdout)["localhost"]["changed"] == 0
    assert _restarts(work) == baseline + 1


def test_toolkit_upgrade_restarts_once_with_the_config_unchanged(node_with_containerd, tmp_path):
    node, work, config, socket = node_with_containerd
    script = _restart_script(work, config, refuse=False)
    subprocess.run([str(script)], check=True)
    assert _wait_answering(node, socket)
    old = toolkit_artifacts.build_tree(tmp_path / "1.14.3", version="1.14.3")
    new = toolkit_artifacts.build_tree(tmp_path / "1.14.4", version="1.14.4")

    proc = _converge(node, work, socket, script, toolkit_src=old)
    assert proc.returncode == 0, proc.stdout[-4000:]
    baseline, provisioned = _restarts(work), config.read_bytes()
    proc = _converge(node, work, socket, script, toolkit_src=old)
    assert recap(proc.stdout)["localhost"]["changed"] == 0
    assert _restarts(work) == baseline

    proc = _converge(node, work, socket, script, toolkit_src=new)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert config.read_bytes() == provisioned
    assert _restarts(work) == baseline + 1
    assert _wait_answering(node, socket)
    proc = _converge(node, work, socket, script, toolkit_src=new)
    assert recap(proc.stdout)["localhost"]["changed"] == 0
    assert _restarts(work) == baseline + 1


@pytest.mark.parametrize("refusal", [QUIET, LIKE_SYSTEMCTL], ids=["no-answer", "restart-fails"])
def test_containerd_refusing_the_new_config_is_rolled_back(node_with_containerd, refusal):
    node, work, config, socket = node_with_containerd
    original = config.read_bytes()
    script = _restart_script(work, config, refuse=True, refusal=refusal)
    subprocess.run([str(script)], check=True)
    assert _wait_answering(node, socket)

    proc = _converge(node, work, socket, script)
    assert proc.returncode != 0
    assert "containerd did not come back after its configuration changed" in proc.stdout, proc.stdout[-3000:]
    if refusal == LIKE_SYSTEMCTL:
        # The error named is the restart's own, not a health check that timed out after it.
        assert "Job for containerd.service failed" in proc.stdout and "; the restart exited with 1)" in proc.stdout
    assert "Rolled back to" in proc.stdout
    assert config.read_bytes() == original
    assert _wait_answering(node, socket), "containerd is not answering after the rollback"
    handlers = cri.status(socket)["info"]["config"]["containerd"]["runtimes"]
    assert "nvidia" not in handlers and "runc" in handlers
    assert "refusing:" in (work / "containerd.log").read_text() or _restarts(work) >= 3
