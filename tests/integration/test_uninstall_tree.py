"""uninstall.yml leaves a node as site.yml found it: the whole node tree, listed before and after.

Each fake node (cos, ubuntu, driver-container; each with and without a containerd config of its
own) is listed before ``site.yml`` and after ``uninstall.yml``: every path with its type, mode,
owner, size and sha256 (regular files), link target (links) and device numbers (device nodes).
The listings must be equal. Where the operator asked for backups (``gpu_node_containerd_backup:
true``) the backup copies of containerd's config are the only difference, and exactly the ones
expected. All nodes go through the same playbook runs (one inventory, local connection, each
node's settings as host variables), as a fleet does.
"""

from __future__ import annotations

import json
import os
import re
import sys

import pytest
import toolkit_artifacts
from ansible_runner import REPO, recap, run_playbook
from node_tree import differences, listing

PLAYBOOKS = REPO / "playbooks"
FIXTURES = REPO / "tests" / "fixtures" / "containerd"
CONFIG = "/etc/containerd/config.toml"
# containerd's config as Debian 12's package ships it, for the nodes that bring their own.
DEBIAN_CONFIG = (FIXTURES / "debian-12-package.toml").read_text()
BACKUP_RE = re.compile(r"^etc/containerd/config\.toml\.[0-9]+\.[0-9]{4}-[0-9]{2}-[0-9]{2}@[0-9:]{8}~$")
JOURNAL = "gpu_node.container_toolkit:"

# name -> (layout, containerd config: "own" keeps/writes one, "none" has none at all)
NODES = {
    "cos-own-config": ("cos", "own"),
    "cos-no-config": ("cos", "none"),
    "ubuntu-own-config": ("ubuntu", "own"),
    "ubuntu-no-config": ("ubuntu", "none"),
    "driver-container-own-config": ("driver-container", "own"),
    "driver-container-no-config": ("driver-container", "none"),
}
# Nodes whose operator asked for backups (gpu_node_containerd_backup: true).
BACKUP_NODES = {
    "backups-cos-own-config": ("cos", "own"),
    "backups-ubuntu-no-config": ("ubuntu", "none"),
}
# A COS node whose driver did not make /dev/nvidiactl.
NVIDIACTL_NODE = "cos-missing-nvidiactl"


def build(factory, layout, config, **options):
    node = factory(layout, **options)
    path = node.node_path(CONFIG)
    if config == "none" and path.exists():
        path.unlink()
        path.parent.rmdir()
    elif config == "own" and not path.exists():
        path.parent.mkdir(parents=True)
        path.write_text(DEBIAN_CONFIG)
    return node


def inventory(tmp_path, nodes, host_vars):
    """One host per node, local connection, each with its own gpu_node_host_root."""
    hosts = {name: dict(host_vars.get(name, {}), gpu_node_host_root=str(node.root)) for name, node in nodes.items()}
    data = {"gpu_nodes": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
        "gpu_node_containerd_restart_mode": "none"}}}
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(data))
    return str(path)


def play(name, inventory_path, **kwargs):
    proc = run_playbook(PLAYBOOKS / name, inventory=inventory_path, extra_args=("--forks", "8"), **kwargs)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return recap(proc.stdout)


def provision_and_uninstall(tmp_path, nodes, host_vars):
    """site.yml, uninstall.yml --check (changes nothing), uninstall.yml, uninstall.yml again (no
    change); the listings before site.yml and after uninstall.yml."""
    before = {name: listing(node.root) for name, node in nodes.items()}
    path = inventory(tmp_path, nodes, host_vars)
    first = play("site.yml", path)
    assert all(first[name]["changed"] > 0 for name in nodes), first
    provisioned = {}
    for name, node in nodes.items():  # really provisioned, or the comparison proves nothing
        assert "nvidia-container-runtime" in node.node_path(CONFIG).read_text(), name
        provisioned[name] = listing(node.root)
        assert provisioned[name] != before[name]
    previewed = play("uninstall.yml", path, check=True)
    assert all(previewed[name]["changed"] > 0 for name in nodes), previewed
    for name, node in nodes.items():  # --check: every removal previewed, nothing touched
        assert differences(provisioned[name], listing(node.root)) == ([], [], []), name
    removed = play("uninstall.yml", path)
    assert all(removed[name]["changed"] > 0 and removed[name]["failed"] == 0 for name in nodes), removed
    again = play("uninstall.yml", path)
    assert all(again[name]["changed"] == 0 for name in nodes), again
    return before, {name: listing(node.root) for name, node in nodes.items()}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Every node of this file, provisioned and uninstalled by the same playbook runs; module-scoped
    (about three minutes on two cores). Returns (nodes, listings before, listings after)."""
    if os.geteuid() != 0:
        pytest.skip("fake nodes need root: device nodes are made with mknod")
    from fakenode import build_node

    tmp_path = tmp_path_factory.mktemp("fleet")

    def factory(layout, **options):
        return build_node(tmp_path / ("node%d-%s" % (len(list(tmp_path.iterdir())), layout)), layout, **options)

    nodes = {name: build(factory, layout, config) for name, (layout, config) in dict(NODES, **BACKUP_NODES).items()}
    nodes[NVIDIACTL_NODE] = build(factory, "cos", "own", missing=("nvidiactl",))
    originals = {name: node.node_path(CONFIG).read_bytes() for name, node in nodes.items()
                 if node.node_path(CONFIG).exists()}
    host_vars = {name: {"gpu_node_containerd_backup": True} for name in BACKUP_NODES}
    before, after = provision_and_uninstall(tmp_path, nodes, host_vars)
    return nodes, originals, before, after


@pytest.mark.parametrize("name", sorted(NODES))
def test_uninstall_leaves_the_node_tree_as_site_found_it(fleet, name):
    _nodes, _originals, before, after = fleet
    only_before, only_after, changed = differences(before[name], after[name])
    assert (only_before, only_after, changed) == ([], [], []), (
        "%s: gone %s, left behind %s, changed %s" % (name, only_before, only_after, changed))
    assert len(before[name]) > 50  # the whole tree: driver files, /proc, /dev, os-release...
    has_config = "etc/containerd/config.toml" in before[name]
    assert has_config == (NODES[name][1] == "own")


def test_with_backups_asked_for_the_backups_are_the_only_difference(fleet):
    """gpu_node_containerd_backup: true. Where the node had its own config there are two copies,
    made by site.yml (the original's bytes) and by uninstall.yml (the provisioned file, with this
    collection's comments); where it had none, there was nothing of the operator's to back up."""
    nodes, originals, before, after = fleet
    name = "backups-cos-own-config"
    only_before, only_after, changed = differences(before[name], after[name])
    assert only_before == [] and changed == []
    assert len(only_after) == 2 and all(BACKUP_RE.match(p) for p in only_after), only_after
    copies = [nodes[name].node_path("/" + p).read_bytes() for p in only_after]
    assert sorted(copy == originals[name] for copy in copies) == [False, True]
    provisioned = next(copy for copy in copies if copy != originals[name]).decode()
    assert JOURNAL in provisioned and "nvidia-container-runtime" in provisioned
    assert differences(before["backups-ubuntu-no-config"], after["backups-ubuntu-no-config"]) == ([], [], [])


def test_a_control_device_node_site_made_is_the_only_thing_left(fleet):
    """A COS node whose driver did not make /dev/nvidiactl: site.yml creates it (major 195, minor
    255) and uninstall leaves it, on purpose: it is the kernel driver's own interface, the same node
    nvidia-modprobe makes, which the host's own GPU tools use too (and /dev is rebuilt at boot)."""
    _nodes, _originals, before, after = fleet
    only_before, only_after, changed = differences(before[NVIDIACTL_NODE], after[NVIDIACTL_NODE])
    assert (only_before, changed) == ([], [])
    assert only_after == ["dev/nvidiactl"]
    assert after[NVIDIACTL_NODE]["dev/nvidiactl"][0] == "char"
    assert after[NVIDIACTL_NODE]["dev/nvidiactl"][7] == (195, 255)
