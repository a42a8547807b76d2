"""playbooks/site.yml and uninstall.yml over real SSH (issue 12), against three simulated COS nodes.

Each node is a fake COS node directory reached through OpenSSH's sshd at its own loopback address
(``ansible_host: 127.0.0.N``, see tests/support/sshd.py), with pipelining on and off: modules then
travel as pipelined stdin or as files copied over SFTP, and the toolkit files go from the controller
to the node through the connection, paths a local connection never takes.
"""

from __future__ import annotations

import os
import re

import pytest
import toolkit_artifacts
from ansible_runner import REPO, recap, run_playbook
from fakenode import GKE_CONTAINERD_CONFIG
from snapshots import snapshot
from sshd import ssh_env

PLAYBOOKS = REPO / "playbooks"
CONFIG = "/etc/containerd/config.toml"
TOOLKIT = "/home/kubernetes/bin/nvidia/toolkit"
SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"


def _restarts(log_dir, host):
    log = log_dir / ("restarts-" + host)
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.parametrize("pipelining", [True, False], ids=["pipelining", "no-pipelining"])
def test_site_check_converge_idempotence_uninstall_over_ssh(ssh_server, ssh_control_dir, fake_node_factory, tmp_path, pipelining):
    nodes = [fake_node_factory("cos", missing=("nvidiactl",)) for _index in range(3)]
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    logs = tmp_path / "restarts"
    logs.mkdir()
    inventory = ssh_server.write_inventory(tmp_path / "inventory.yml", [node.root for node in nodes], group_vars={
        "gpu_node_toolkit_src": str(artifacts),
        "gpu_node_containerd_restart_mode": "command",
        "gpu_node_containerd_restart_command": "echo restart >> %s/restarts-{{ inventory_hostname }}" % logs,
        "containerd_health_command": "true %s",
    })
    hosts = ["node%03d" % index for index in range(3)]
    remote_tmp = tmp_path / "remote-tmp"
    env = dict(ssh_env(ssh_control_dir, pipelining), ANSIBLE_REMOTE_TEMP=str(remote_tmp))
    transfers = []

    def play(name, check=False):
        proc = run_playbook(PLAYBOOKS / name, inventory=str(inventory), check=check, env=env,
                            extra_args=["-f", "25", "-vvv"])
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
        totals = recap(proc.stdout)
        # localhost: the playbooks' first play, which checks the inventory matches, runs on the controller.
        assert sorted(totals) == sorted(hosts + ["localhost"]) and totals["localhost"]["failed"] == 0
        assert all(totals[host]["failed"] == 0 and totals[host]["unreachable"] == 0 for host in hosts), totals
        # Every temp dir a task made on a node is gone after it.
        assert not remote_tmp.exists() or os.listdir(remote_tmp) == [], os.listdir(remote_tmp)
        transfers.append(len(re.findall(r"^<127\.0\.0\.\d+> PUT .* TO ", proc.stdout, re.MULTILINE)))
        return totals

    before = [snapshot(node.root) for node in nodes]
    checked = play("site.yml", check=True)
    assert all(checked[host]["changed"] > 0 for host in hosts), checked
    assert [snapshot(node.root) for node in nodes] == before, "check mode changed a node"
    # One ControlPersist master per node: each went over its own SSH connection to 127.0.0.N.
    assert len(list(ssh_control_dir.iterdir())) == 3

    converged = play("site.yml")
    assert all(converged[host]["changed"] > 0 for host in hosts), converged
    for host, node in zip(hosts, nodes):
        text = node.node_path(CONFIG).read_text()
        assert 'BinaryName = "%s/nvidia-container-runtime"' % TOOLKIT in text
        assert str(node.root) not in text
        assert os.access(node.node_path(TOOLKIT + "/nvidia-container-runtime"), os.X_OK)
        assert "management.nvidia.com/gpu" in node.node_path(SPEC).read_text()
        ctl = os.stat(node.node_path("/dev/nvidiactl"))
        assert (os.major(ctl.st_rdev), os.minor(ctl.st_rdev)) == (195, 255)
        assert _restarts(logs, host) == 1

    if pipelining:
        # Modules, and the toolkit's files in toolkit_install's arguments, travel on the command's
        # standard input: no SFTP.
        assert transfers == [0, 0], transfers
    else:
        assert transfers[1] > 0, transfers  # the module files (the toolkit's inside one), over SFTP

    provisioned = [snapshot(node.root) for node in nodes]
    again = play("site.yml")
    assert [again[host]["changed"] for host in hosts] == [0, 0, 0], again
    assert [_restarts(logs, host) for host in hosts] == [1, 1, 1]
    assert [snapshot(node.root) for node in nodes] == provisioned

    removed = play("uninstall.yml")
    assert all(removed[host]["changed"] > 0 for host in hosts), removed
    for node in nodes:
        assert node.node_path(CONFIG).read_bytes() == GKE_CONTAINERD_CONFIG.encode()
        assert not node.node_path(SPEC).exists()


def test_failed_restart_over_ssh_is_rolled_back_and_named(ssh_server, ssh_control_dir, fake_node_factory, tmp_path):
    # The restart runs as raw over SSH, on a terminal: what the failing command printed must still
    # reach the error, and the config go back byte for byte.
    node = fake_node_factory("cos")
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    inventory = ssh_server.write_inventory(tmp_path / "inventory.yml", [node.root], group_vars={
        "gpu_node_toolkit_src": str(artifacts),
        "gpu_node_containerd_restart_mode": "command",
        "gpu_node_containerd_restart_command": "echo 'containerd: invalid config' >&2; exit 3",
        "containerd_health_command": "true %s",
    })
    proc = run_playbook(PLAYBOOKS / "site.yml", inventory=str(inventory), env=ssh_env(ssh_control_dir, True))
    assert proc.returncode != 0
    assert recap(proc.stdout)["node000"]["failed"] == 1
    assert ("containerd did not come back after its configuration changed (containerd: invalid config; "
            "the restart exited with 3)") in proc.stdout
    assert "restored %s from" % CONFIG in proc.stdout
    assert node.node_path(CONFIG).read_bytes() == GKE_CONTAINERD_CONFIG.encode()
