"""The engines the gpu_node role configures: site.yml, verify.yml and uninstall.yml on a Docker GPU
host, checked by a real dockerd (Debian's docker.io, 20.10) that the playbooks restart themselves;
a CRI-O node (no CRI-O daemon here: its drop-in is checked by tests/integration/test_crio_runtime.py);
and which engines auto finds.

The fake node has Docker's ``daemon.json`` and no containerd configuration, so
``gpu_node_container_engines: auto`` configures Docker only. dockerd runs on the node's own
``daemon.json`` (tests/support/dockerd.py: data, exec root, pid file and socket under a temp dir);
the role restarts it with ``gpu_node_docker_restart_mode: command`` through ``restart.py`` below,
which stops the running dockerd by its pid file, starts a new one with the same arguments and
counts the restarts, and asks it whether it is back with ``health.sh``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import dockerd
import pytest
import toolkit_artifacts
from ansible_runner import REPO, recap, run_playbook, verify_output
from node_tree import differences, listing

PLAYBOOKS = REPO / "playbooks"
FIXTURES = REPO / "tests" / "fixtures" / "docker"
CONFIG = "/etc/docker/daemon.json"
TOOLKIT = "/usr/local/nvidia/toolkit"

pytestmark = pytest.mark.skipif(dockerd.missing_prerequisite() is not None, reason=str(dockerd.missing_prerequisite()))

RESTART = r'''
import os, signal, subprocess, sys, time
argv, pidfile, log, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
with open(count, "a") as handle:
    handle.write("restart\n")
try:
    pid = int(open(pidfile).read().strip())
except (OSError, ValueError):
    pid = None
if pid:
    try:
        os.kill(pid, signal.SIGTERM)
        for _ in range(200):
            os.kill(pid, 0)
            time.sleep(0.1)
    except ProcessLookupError:
        pass
# Detached, as a service manager would start it; the role's health check says whether it came up.
with open(log, "ab") as out:
    subprocess.Popen(open(argv).read().split("\0"), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
'''


class DockerNode:
    """A fake ubuntu node with Docker's daemon.json, a dockerd running on it, and an inventory."""

    def __init__(self, factory, tmp_path, daemon_json, dockerd_args=()):
        self.node = factory("ubuntu")
        assert not self.node.node_path("/etc/containerd").exists()
        self.config = self.node.node_path(CONFIG)
        self.config.parent.mkdir(parents=True)
        self.config.write_text(daemon_json)
        self.original = daemon_json
        self.tmp_path = tmp_path
        self.engine = dockerd.Dockerd(self.config)
        self.work = self.engine.workdir
        argv = self.work / "argv"
        argv.write_text("\0".join(self.engine.argv(dockerd_args)))
        (self.work / "restart.py").write_text(RESTART)
        self.count = self.work / "restarts"
        health = self.work / "health.sh"
        health.write_text('#!/bin/sh\nexec %s -H unix://%s version >/dev/null\n' % (dockerd.docker_cli(), self.engine.sock))
        health.chmod(0o755)
        self.variables = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "gpu_node_host_root": str(self.node.root),
            "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
            "gpu_node_containerd_restart_mode": "none",
            "gpu_node_docker_restart_mode": "command",
            "gpu_node_docker_restart_command": "%s %s %s %s %s %s" % (
                sys.executable, self.work / "restart.py", argv, self.work / "pid", self.engine.log, self.count),
            "docker_health_command": "%s %%s" % health,
            "docker_restart_timeout": 6,
        }
        self.engine.start(dockerd_args)

    def inventory(self, **overrides):
        path = self.tmp_path / "inventory.json"
        path.write_text(json.dumps({"gpu_nodes": {"hosts": {"docker-node": dict(self.variables, **overrides)}}}))
        return str(path)

    def play(self, name, ok=True, **kwargs):
        proc = run_playbook(PLAYBOOKS / name, inventory=self.inventory(), **kwargs)
        if ok:
            assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
        return proc, recap(proc.stdout)["docker-node"]

    def restarts(self):
        return len(self.count.read_text().splitlines()) if self.count.exists() else 0

    def runtimes(self):
        return self.engine.runtimes()

    def stop(self):
        """End whichever dockerd runs now (restart.py started it, not self.engine)."""
        try:
            pid = int((self.work / "pid").read_text().strip())
            os.kill(pid, signal.SIGTERM)
            for _attempt in range(200):
                os.kill(pid, 0)
                time.sleep(0.1)
        except (OSError, ValueError):
            pass
        self.engine.cleanup()


@pytest.fixture
def docker_node(fake_node_factory, tmp_path):
    made = []

    def make(daemon_json, dockerd_args=()):
        made.append(DockerNode(fake_node_factory, tmp_path, daemon_json, dockerd_args))
        return made[-1]

    yield make
    for one in made:
        one.stop()


def test_docker_host_provisioned_verified_and_given_back(docker_node):
    host = docker_node((FIXTURES / "docker-docs-logging.json").read_text())
    before = listing(host.node.root)
    assert set(host.runtimes()) == {"runc", "io.containerd.runc.v2", "io.containerd.runtime.v1.linux"}

    _proc, checked = host.play("site.yml", check=True)
    assert checked["changed"] > 0 and differences(before, listing(host.node.root)) == ([], [], [])
    assert host.restarts() == 0

    _proc, first = host.play("site.yml")
    assert first["changed"] > 0 and host.restarts() == 1
    runtimes = host.runtimes()  # the dockerd the role restarted loaded them
    assert runtimes["nvidia"]["path"] == TOOLKIT + "/nvidia-container-runtime"
    assert runtimes["nvidia-cdi"]["path"] == TOOLKIT + "/nvidia-container-runtime.cdi"
    assert runtimes["nvidia-legacy"]["path"] == TOOLKIT + "/nvidia-container-runtime.legacy"
    assert json.loads(host.config.read_text())["features"] == {"cdi": True}
    # Docker only: no containerd configuration was made on a node that had none.
    assert not host.node.node_path("/etc/containerd").exists()

    _proc, again = host.play("site.yml")
    assert again["changed"] == 0 and host.restarts() == 1

    proc, verified = host.play("verify.yml")
    assert verified["failed"] == 0 and host.restarts() == 1
    table, details = verify_output(proc.stdout)
    row = [line for line in table if line.startswith("docker-node ")]
    assert len(row) == 1 and row[0].split()[-6:] == ["ok", "ok", "ok", "ok", "-", "none"], proc.stdout[-3000:]
    assert details == [] and verified["changed"] == 0

    _proc, removed = host.play("uninstall.yml")
    assert removed["changed"] > 0 and host.restarts() == 2
    assert host.config.read_text() == host.original
    assert "nvidia" not in host.runtimes()
    assert differences(before, listing(host.node.root)) == ([], [], [])


def test_verify_reports_a_docker_host_that_lost_its_runtimes(docker_node):
    host = docker_node('{\n    "log-level": "warn"\n}\n')
    host.play("site.yml")
    host.config.write_text(host.original)  # someone put the old file back
    proc, verified = host.play("verify.yml", ok=False)
    assert proc.returncode != 0 and verified["failed"] == 1
    assert "Docker runtimes: would change" in proc.stdout, proc.stdout[-3000:]
    assert host.config.read_text() == host.original and host.restarts() == 1


def test_dockerd_refusing_the_edit_is_rolled_back(docker_node):
    """dockerd started with --default-runtime refuses a daemon.json that sets it too: the handler
    puts the file and the journal back, restarts dockerd again and fails the host, naming both."""
    host = docker_node('{\n  "log-level": "warn"\n}\n', dockerd_args=("--default-runtime", "runc"))
    before = listing(host.node.root)
    proc = run_playbook(PLAYBOOKS / "site.yml", inventory=host.inventory(gpu_node_set_as_default=True))
    assert proc.returncode != 0
    assert "dockerd did not come back after its configuration changed" in proc.stdout
    assert "then restarted dockerd, which answers again" in proc.stdout, proc.stdout[-4000:]
    assert host.restarts() == 2
    assert host.config.read_text() == host.original and "nvidia" not in host.runtimes()
    # What is left beside the original: the copy made for the rollback, and nothing of the journal.
    removed, added, changed = differences(before, listing(host.node.root))
    assert removed == [] and changed == []
    assert all(path.startswith("etc/docker/daemon.json.") for path in added if path.startswith("etc/docker")), added
    assert not any(".gpu_node.container_toolkit.json" in path for path in added), added


def test_engines_found_on_the_node_are_the_ones_configured(fake_node_factory, tmp_path):
    """auto: containerd only where only containerd is found, both where both are, Docker alone where
    only it is; a node with nothing gets containerd, as before."""
    nodes = {
        "both": fake_node_factory("cos"),
        "docker-only": fake_node_factory("ubuntu"),
        "nothing": fake_node_factory("ubuntu"),
        "explicit": fake_node_factory("cos"),
    }
    for name in ("both", "docker-only"):
        path = nodes[name].node_path(CONFIG)
        path.parent.mkdir(parents=True)
        path.write_text("{}\n")
    hosts = {name: {"gpu_node_host_root": str(node.root)} for name, node in nodes.items()}
    hosts["explicit"]["gpu_node_container_engines"] = "docker"  # one engine may be given as a string
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"gpu_nodes": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
        "gpu_node_containerd_restart_mode": "none", "gpu_node_docker_restart_mode": "none"}}}))
    proc = run_playbook(PLAYBOOKS / "site.yml", inventory=str(inventory))
    assert proc.returncode == 0, proc.stdout[-6000:]

    def configured(node):
        containerd = node.node_path("/etc/containerd/config.toml")
        docker = node.node_path(CONFIG)
        return (containerd.exists() and "nvidia-container-runtime" in containerd.read_text(),
                docker.exists() and "nvidia-container-runtime" in docker.read_text())

    assert configured(nodes["both"]) == (True, True)
    assert configured(nodes["docker-only"]) == (False, True)
    assert configured(nodes["nothing"]) == (True, False)
    # Explicit: Docker only, although the node has a containerd config (left as it was).
    assert configured(nodes["explicit"]) == (False, True)


def test_a_cri_o_node_gets_the_drop_in_only_and_an_unknown_engine_fails_up_front(fake_node_factory, tmp_path):
    crio_node = fake_node_factory("ubuntu")
    crio_node.node_path("/etc/crio/crio.conf.d").mkdir(parents=True)
    wrong = fake_node_factory("ubuntu")
    before = listing(wrong.root)
    inventory = tmp_path / "inventory.json"
    common = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
              "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
              "gpu_node_containerd_restart_mode": "none", "gpu_node_crio_restart_mode": "none"}
    inventory.write_text(json.dumps({"gpu_nodes": {"vars": common, "hosts": {
        "crio-node": {"gpu_node_host_root": str(crio_node.root)},
        "wrong-node": {"gpu_node_host_root": str(wrong.root), "gpu_node_container_engines": ["containerd", "podman"]},
    }}}))
    # One node failing must not stop the other (the playbook's default stops the whole batch).
    proc = run_playbook(PLAYBOOKS / "site.yml", inventory=str(inventory), extra_vars={"gpu_node_max_fail_percentage": 100})
    totals = recap(proc.stdout)
    assert totals["crio-node"]["failed"] == 0 and totals["wrong-node"]["failed"] == 1, proc.stdout[-4000:]
    drop_in = crio_node.node_path("/etc/crio/crio.conf.d/99-nvidia.toml").read_text()
    assert 'runtime_path = "/usr/local/nvidia/toolkit/nvidia-container-runtime"' in drop_in
    assert not crio_node.node_path("/etc/containerd").exists() and not crio_node.node_path(CONFIG).exists()
    assert "gpu_node_container_engines names 'podman', which is not one of containerd, docker, crio." in proc.stdout, proc.stdout[-3000:]
    assert differences(before, listing(wrong.root)) == ([], [], [])


def test_a_cri_o_node_is_left_as_found_by_uninstall(fake_node_factory, tmp_path):
    node = fake_node_factory("ubuntu")
    node.node_path("/usr/bin").mkdir(parents=True, exist_ok=True)
    node.node_path("/usr/bin/crio").write_text("#!/bin/sh\n")  # CRI-O found by its binary alone
    before = listing(node.root)
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"gpu_nodes": {"hosts": {"crio-node": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpu_node_host_root": str(node.root),
        "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
        "gpu_node_crio_restart_mode": "none"}}}}))
    for playbook, changed in (("site.yml", True), ("site.yml", False), ("uninstall.yml", True), ("uninstall.yml", False)):
        proc = run_playbook(PLAYBOOKS / playbook, inventory=str(inventory))
        assert proc.returncode == 0, proc.stdout[-4000:]
        assert (recap(proc.stdout)["crio-node"]["changed"] > 0) is changed, (playbook, proc.stdout[-3000:])
        if playbook == "site.yml":
            assert node.node_path("/etc/crio/crio.conf.d/99-nvidia.toml").is_file()
    assert differences(before, listing(node.root)) == ([], [], [])
