"""site.yml, verify.yml and uninstall.yml under Mitogen for Ansible (issue 32).

Mitogen replaces how Ansible runs modules and moves files (its strategies ``mitogen_linear`` and
``mitogen_free`` wrap every action plugin); a collection that reaches into Ansible's private API
fails there. Each playbook runs on one simulated COS node with ``linear`` and on an identical one
with a Mitogen strategy, and every task must end the same way on both (ok, changed or skipped),
with the same files on the node; over SSH, a converge and a no-op run under ``mitogen_linear``.
"""

from __future__ import annotations

import os
import re

import ansible_mitogen
import toolkit_artifacts
from ansible_runner import REPO, recap, run_playbook
from snapshots import snapshot
from sshd import ssh_env

PLAYBOOKS = REPO / "playbooks"
STRATEGIES = os.path.join(os.path.dirname(ansible_mitogen.__file__), "plugins", "strategy")
TASK = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(.*)\] \*+$")
OUTCOME = re.compile(r"^(ok|changed|skipping|included|fatal|failed): \[([^\]]+)\]")


def strategy_env(strategy):
    return {} if strategy == "linear" else {"ANSIBLE_STRATEGY_PLUGINS": STRATEGIES, "ANSIBLE_STRATEGY": strategy}


def outcomes(stdout):
    """``[(task, host, outcome)]`` in the order the default callback printed them."""
    found, task = [], None
    for line in stdout.splitlines():
        heading = TASK.match(line)
        if heading:
            task = heading.group(1)
            continue
        outcome = OUTCOME.match(line)
        if outcome and task is not None:
            found.append((task, outcome.group(2), outcome.group(1)))
    return found


BACKUP_STAMP = re.compile(r"\.\d+\.\d{4}-\d\d-\d\d@\d\d:\d\d:\d\d~$")


RECORD = "/.gpu-node/provisioned.json"


def node_files(node):
    """The node's entries without their times (in backup names too), and the run's record without its
    digests (of this node's look, under its own host_root): two nodes provisioned apart must still match."""
    return {BACKUP_STAMP.sub(".<pid>.<time>~", path): entry[:5] + entry[6:-1 if path.endswith(RECORD) else None]
            for path, entry in snapshot(node.root).items()}


def run(playbook, node, artifacts, strategy):
    proc = run_playbook(PLAYBOOKS / playbook, env=strategy_env(strategy), extra_vars={
        "gpu_node_hosts": "localhost", "gpu_node_host_root": str(node.root), "gpu_node_toolkit_src": str(artifacts),
        "gpu_node_containerd_restart_mode": "none"})
    # A strategy Ansible cannot find fails the run ("Invalid play strategy"), so a pass ran under it.
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    return outcomes(proc.stdout), recap(proc.stdout)["localhost"]


def test_site_verify_uninstall_end_the_same_under_mitogen(fake_node_factory, tmp_path):
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    nodes = {strategy: fake_node_factory("cos", missing=("nvidiactl",))
             for strategy in ("linear", "mitogen_linear", "mitogen_free")}
    assert node_files(nodes["mitogen_linear"]) == node_files(nodes["linear"])
    changed = []
    for playbook in ("site.yml", "site.yml", "verify.yml", "uninstall.yml"):
        expected, expected_totals = run(playbook, nodes["linear"], artifacts, "linear")
        changed.append(expected_totals["changed"])
        for strategy in ("mitogen_linear", "mitogen_free"):
            got, totals = run(playbook, nodes[strategy], artifacts, strategy)
            assert got == expected, (playbook, strategy)
            assert totals == expected_totals, (playbook, strategy)
            assert node_files(nodes[strategy]) == node_files(nodes["linear"]), (playbook, strategy)
    # Not vacuous: the converge and the removal changed the node, the no-op and verify did not.
    assert [count > 0 for count in changed] == [True, False, False, True], changed


def test_converge_and_no_op_over_ssh_under_mitogen(ssh_server, ssh_control_dir, fake_node_factory, tmp_path):
    nodes = [fake_node_factory("cos", missing=("nvidiactl",)) for _index in range(2)]
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    logs = tmp_path / "restarts"
    logs.mkdir()
    inventory = ssh_server.write_inventory(tmp_path / "inventory.yml", [node.root for node in nodes], group_vars={
        "gpu_node_toolkit_src": str(artifacts),
        "gpu_node_containerd_restart_mode": "command",
        "gpu_node_containerd_restart_command": "echo restart >> %s/restarts-{{ inventory_hostname }}" % logs,
        "containerd_health_command": "true %s",
    })
    env = dict(ssh_env(ssh_control_dir, True), **strategy_env("mitogen_linear"))
    hosts = ["node000", "node001"]
    totals = []
    for _run in range(2):
        proc = run_playbook(PLAYBOOKS / "site.yml", inventory=str(inventory), env=env)
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
        totals.append(recap(proc.stdout))
    assert [totals[0][host]["changed"] > 0 for host in hosts] == [True, True], totals[0]
    assert [totals[1][host]["changed"] for host in hosts] == [0, 0], totals[1]
    for host, node in zip(hosts, nodes):
        assert (logs / ("restarts-" + host)).read_text().splitlines() == ["restart"]
        assert os.access(node.node_path("/home/kubernetes/bin/nvidia/toolkit/nvidia-container-runtime"), os.X_OK)
        assert "management.nvidia.com/gpu" in node.node_path("/var/run/cdi/management.nvidia.com-gpu.yaml").read_text()
