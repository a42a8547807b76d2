"""gpu_node_cdi_refresh on a systemd host: gpu-node-cdi, its settings and the two units, as site.yml
writes them on a simulated Ubuntu node, checked by ``systemd-analyze verify`` against the node's own
tree; the units' ExecStart, run as systemd would run it, follows a driver upgrade; uninstall.yml
leaves the node as it was found.

This machine has no systemd as PID 1, so the role writes the units and leaves enabling them to a
systemd that runs the node (``gpu_node_cdi_refresh: true``; ``auto`` would choose it there).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import toolkit_artifacts
from ansible_runner import REPO, recap, run_playbook
from fakenode import upgrade_driver
from node_tree import differences, listing

PLAYBOOKS = REPO / "playbooks"
KEPT = "/usr/local/nvidia/toolkit/.gpu-node"
UNITS = ("gpu-node-cdi-refresh.service", "gpu-node-cdi-refresh.path")
SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"
SYSTEM_UNITS = Path("/usr/lib/systemd/system")


@pytest.fixture
def systemd_node(fake_node_factory, tmp_path):
    node = fake_node_factory("ubuntu")
    node.node_path("/etc/systemd/system").mkdir(parents=True)
    # systemd's own units (sysinit.target, ...), which systemd-analyze verify --root resolves against.
    shutil.copytree(SYSTEM_UNITS, node.node_path(str(SYSTEM_UNITS)), symlinks=True)
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"gpu_nodes": {"hosts": {"node": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpu_node_host_root": str(node.root),
        "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
        "gpu_node_containerd_restart_mode": "none", "gpu_node_cdi_refresh": True,
        "gpu_node_dev_char_links": True}}}}))
    return node, str(inventory)


def play(name, inventory, **kwargs):
    proc = run_playbook(PLAYBOOKS / name, inventory=inventory, **kwargs)
    assert proc.returncode == 0, proc.stdout[-5000:]
    return recap(proc.stdout)["node"]


def exec_start(node):
    """The service's ExecStart as argv, from the unit file site.yml wrote."""
    unit = node.node_path("/etc/systemd/system/gpu-node-cdi-refresh.service").read_text()
    line = next(text for text in unit.splitlines() if text.startswith("ExecStart="))
    return shlex.split(line[len("ExecStart="):])


def test_units_verified_run_as_systemd_would_and_removed_again(systemd_node, fake_node_factory):
    node, inventory = systemd_node
    before = listing(node.root)
    assert play("site.yml", inventory, check=True)["changed"] > 0
    assert differences(before, listing(node.root)) == ([], [], [])
    assert play("site.yml", inventory)["changed"] > 0
    assert play("site.yml", inventory)["changed"] == 0

    for unit in UNITS:
        assert node.node_path("/etc/systemd/system/" + unit).is_file()
    path_unit = node.node_path("/etc/systemd/system/gpu-node-cdi-refresh.path").read_text()
    watched = [line.split("=", 1)[1] for line in path_unit.splitlines() if line.startswith("PathChanged=")]
    assert watched == ["/lib/modules/%v"] and "Unit=gpu-node-cdi-refresh.service" in path_unit
    argv = exec_start(node)
    assert argv == [KEPT + "/gpu-node-cdi", "generate", "--config", KEPT + "/cdi-refresh.json"]
    service = node.node_path("/etc/systemd/system/gpu-node-cdi-refresh.service").read_text()
    assert "Before=containerd.service docker.service crio.service" in service
    proc = subprocess.run(["systemd-analyze", "verify", "--man=no", "--root=%s" % node.root]
                          + ["/etc/systemd/system/" + unit for unit in UNITS], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr

    links = {p.name: os.readlink(p) for p in node.node_path("/dev/char").iterdir()}
    assert links == {"%d:%d" % (n["major"], n["minor"]): "../" + n["path"][len("/dev/"):] for n in node.device_nodes}
    assert json.loads(node.node_path(KEPT + "/cdi-refresh.json").read_text())["char_links"] == {"dev_root": "/"}

    # A boot: /dev is new, without the links udev does not make; the boot service makes them again.
    shutil.rmtree(node.node_path("/dev/char"))
    program = str(node.node_path(argv[0]))
    run = subprocess.run(["/usr/bin/python3", "-I", program] + argv[1:3] + [str(node.node_path(argv[3])),
                         "--host-root", str(node.root)], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "/dev/char: linked" in run.stdout, run.stdout + run.stderr
    assert {p.name: os.readlink(p) for p in node.node_path("/dev/char").iterdir()} == links

    # What systemd runs after the driver package is upgraded (the path unit fires on depmod):
    # the program under the node's root, with the node's root given, as the unit would on the node.
    upgrade_driver(node, "550.54.15")
    run = subprocess.run(["/usr/bin/python3", "-I", program] + argv[1:3] + [str(node.node_path(argv[3])),
                         "--host-root", str(node.root)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert "-> 550.54.15" in run.stdout and "550.54.15" in node.node_path(SPEC).read_text()
    # The next playbook run agrees with what the node made.
    assert play("site.yml", inventory)["changed"] == 0

    assert play("uninstall.yml", inventory)["changed"] > 0
    assert play("uninstall.yml", inventory)["changed"] == 0
    # The links stay, as the device nodes do (the driver's interface; /dev is new at every boot).
    assert {p.name: os.readlink(p) for p in node.node_path("/dev/char").iterdir()} == links
    shutil.rmtree(node.node_path("/dev/char"))
    # What the driver upgrade itself changed, shown on a twin node upgraded alone, is the only
    # difference left.
    twin = fake_node_factory("ubuntu")
    twin_before = listing(twin.root)
    upgrade_driver(twin, "550.54.15")
    assert differences(before, listing(node.root)) == differences(twin_before, listing(twin.root))


def test_a_node_without_etc_systemd_system_fails_naming_it(fake_node_factory, tmp_path):
    node = fake_node_factory("ubuntu")
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"gpu_nodes": {"hosts": {"node": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpu_node_host_root": str(node.root),
        "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
        "gpu_node_containerd_restart_mode": "none", "gpu_node_cdi_refresh": True}}}}))
    proc = run_playbook(PLAYBOOKS / "site.yml", inventory=str(inventory))
    assert proc.returncode != 0
    assert "the directory of /etc/systemd/system/gpu-node-cdi-refresh.service does not exist" in proc.stdout


def test_auto_leaves_refresh_off_where_systemd_is_not_pid_1(fake_node_factory, tmp_path):
    node = fake_node_factory("ubuntu")
    node.node_path("/etc/systemd/system").mkdir(parents=True)
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"gpu_nodes": {"hosts": {"node": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpu_node_host_root": str(node.root),
        "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
        "gpu_node_containerd_restart_mode": "none"}}}}))
    assert play("site.yml", str(inventory))["failed"] == 0
    assert list(node.node_path("/etc/systemd/system").iterdir()) == []
    # Nothing kept for a refresh; only the record of the run.
    assert [path.name for path in node.node_path(KEPT).iterdir()] == ["provisioned.json"]
