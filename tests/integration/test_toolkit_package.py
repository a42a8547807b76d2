"""The toolkit role's package method with the real apt and dpkg, on a Debian 12 tree.

The node is a debootstrap tree (tests/support/apt_node.py) that every module of the role runs in,
apt and dpkg included; the repository is a local, signed one of stand-in packages named and
depending on each other as NVIDIA's do, at two versions. Each run is checked on the node's dpkg
database and files, not on what the role says.
"""

from __future__ import annotations

import json
import os
import shutil

import apt_node
import package_role
import pytest
import toolkit_artifacts
import yaml
from ansible_runner import recap, run_playbook

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("gpg"),
                                reason="needs root (chroot, mount namespaces), unshare and gpg")

OLD, NEW = "1.17.8", "1.18.0"
PACKAGES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
            "libnvidia-container1")
LIST = "etc/apt/sources.list.d/nvidia-container-toolkit.list"
KEYRING = "etc/apt/keyrings/nvidia-container-toolkit.asc"
RECORD = "usr/local/nvidia/toolkit/toolkit-package.json"
CONFIG = "etc/nvidia-container-runtime/config.toml"


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    """``(repo dir, armored key)``: the signed repository with both versions."""
    base = tmp_path_factory.mktemp("nvidia-repo")
    key = apt_node.make_key(base / "gnupg")
    apt_node.build_repo(base / "repo", ["%s" % OLD, NEW], base / "gnupg")
    return base / "repo", key


@pytest.fixture
def node(tmp_path, repository):
    """A fresh Debian node with the repository inside it (at /srv/nvidia-repo) and an inventory."""
    try:
        root = apt_node.copy_node(tmp_path / "node")
    except apt_node.Unavailable as exc:
        pytest.fail("the Debian node tree cannot be built: %s" % exc, pytrace=False)
    shutil.copytree(repository[0], root / apt_node.REPO_DIR)
    python = apt_node.interpreter(root, tmp_path / "node-python")
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("node ansible_connection=local ansible_python_interpreter=%s\n" % python)
    return {"root": root, "inventory": inventory, "key": repository[1], "tmp": tmp_path}


def run_role(node, check=False, **role_vars):
    """The toolkit role on the node; ``(recap totals, toolkit_package_result)``."""
    return package_role.run_role(node, check, role_vars, {"toolkit_package_repo_url": apt_node.REPO_URL,
                                                          "toolkit_package_repo_key": node["key"]})


def toolkit_versions(root):
    return {name: version for name, version in apt_node.dpkg_installed(root).items() if name in PACKAGES}


def runtime_version(root):
    text = (root / "usr/bin/nvidia-container-runtime").read_text()
    return text.split("printf 'version=%s\\n' ", 1)[1].split("\n", 1)[0]


def test_install_pinned_then_no_change_upgrade_downgrade_uninstall(node):
    root = node["root"]
    before = apt_node.dpkg_installed(root)

    totals, result = run_role(node, check=True, toolkit_package_version=OLD + "-1")
    assert totals["changed"] > 0 and totals["failed"] == 0
    assert result["method"] == "package" and result["install"] == list(PACKAGES)
    assert not (root / LIST).exists() and not (root / KEYRING).exists() and not (root / RECORD).exists()
    assert apt_node.dpkg_installed(root) == before

    totals, result = run_role(node, toolkit_package_version=OLD + "-1")
    assert totals["changed"] > 0
    assert toolkit_versions(root) == {name: OLD + "-1" for name in PACKAGES}
    assert runtime_version(root) == OLD
    assert (root / LIST).read_text().splitlines()[-1] == (
        "deb [signed-by=/%s] %s /" % (KEYRING, apt_node.REPO_URL))
    assert (root / KEYRING).read_text() == node["key"].strip() + "\n"
    record = json.loads((root / RECORD).read_text())
    assert record["preexisting"] == {} and record["installed"] == list(PACKAGES)
    # The toolkit's configuration, the packages' own conffile, names the binaries in /usr/bin.
    config = (root / CONFIG).read_text()
    assert 'path = "/usr/bin/nvidia-container-cli"' in config
    assert 'path = "/usr/bin/nvidia-container-runtime-hook"' in config
    assert "environment = []" in config  # the package's own keys are kept
    assert not (root / "usr/local/nvidia/toolkit/nvidia-container-runtime").exists()

    # A second run, and the same in check mode, change nothing.
    snapshot = {p: (root / p).read_bytes() for p in (LIST, KEYRING, RECORD, CONFIG)}
    for check in (False, True):
        totals, result = run_role(node, check=check, toolkit_package_version=OLD + "-1")
        assert totals["changed"] == 0, totals
        assert result["install"] == []
    assert {p: (root / p).read_bytes() for p in snapshot} == snapshot

    # Upgrade, then downgrade, by the pinned version alone; check mode first says so and changes nothing.
    totals, result = run_role(node, check=True, toolkit_package_version=NEW + "-1")
    assert totals["changed"] > 0 and result["install"] == list(PACKAGES)
    assert toolkit_versions(root) == {name: OLD + "-1" for name in PACKAGES}
    totals, _result = run_role(node, toolkit_package_version=NEW + "-1")
    assert totals["changed"] > 0
    assert toolkit_versions(root) == {name: NEW + "-1" for name in PACKAGES}
    assert runtime_version(root) == NEW
    assert 'path = "/usr/bin/nvidia-ctk"' in (root / CONFIG).read_text()
    totals, _result = run_role(node, toolkit_package_version=NEW + "-1")
    assert totals["changed"] == 0
    totals, _result = run_role(node, toolkit_package_version=OLD + "-1")
    assert totals["changed"] > 0
    assert toolkit_versions(root) == {name: OLD + "-1" for name in PACKAGES}

    # Uninstall: check mode first, then for real; then a second time, which changes nothing.
    totals, _result = run_role(node, check=True, toolkit_state="absent")
    assert totals["changed"] > 0
    assert toolkit_versions(root) == {name: OLD + "-1" for name in PACKAGES} and (root / LIST).exists()
    totals, result = run_role(node, toolkit_state="absent")
    assert totals["changed"] > 0
    assert sorted(result["remove"]) == sorted(PACKAGES)
    assert toolkit_versions(root) == {}
    assert apt_node.dpkg_installed(root) == before
    for path in (LIST, KEYRING, RECORD, CONFIG):
        assert not (root / path).exists(), path
    assert not (root / "usr/local/nvidia/toolkit").exists()
    assert (root / "etc/apt/keyrings").is_dir()  # Debian's own directory stays
    totals, _result = run_role(node, toolkit_state="absent")
    assert totals["changed"] == 0


def test_auto_uses_packages_already_installed_and_uninstall_leaves_them(node, tmp_path):
    root = node["root"]
    tree = toolkit_artifacts.build_tree(tmp_path / "tree", version=OLD)
    debs = toolkit_artifacts.build_debs(tree, tmp_path / "debs", version=OLD, repository=True)
    apt_node.dpkg_install(root, debs)
    installed = toolkit_versions(root)
    assert installed == {name: OLD + "-1" for name in PACKAGES}

    totals, result = run_role(node, toolkit_install_method="auto", toolkit_package_repo_key="")
    assert result["method"] == "existing" and "is installed from packages" in result["msg"]
    assert result["bin_dir"] == "/usr/bin"
    # No repository, no record, no second copy: only the packaged config.toml names /usr/bin's binaries.
    assert not (root / LIST).exists() and not (root / RECORD).exists()
    assert not (root / "usr/local/nvidia/toolkit/nvidia-container-runtime").exists()
    assert 'path = "/usr/bin/nvidia-container-cli"' in (root / CONFIG).read_text()
    assert totals["changed"] == 1  # the config.toml
    totals, _result = run_role(node, toolkit_install_method="auto", toolkit_package_repo_key="")
    assert totals["changed"] == 0

    # The package method on the same node upgrades the node's own packages, and its uninstall
    # removes the repository it wrote but not the packages, which were there before it.
    totals, result = run_role(node, toolkit_package_version=NEW + "-1")
    assert toolkit_versions(root) == {name: NEW + "-1" for name in PACKAGES}
    record = json.loads((root / RECORD).read_text())
    assert record["preexisting"] == installed and record["installed"] == []
    totals, result = run_role(node, toolkit_state="absent")
    assert result["remove"] == []
    assert toolkit_versions(root) == {name: NEW + "-1" for name in PACKAGES}
    assert not (root / LIST).exists() and not (root / KEYRING).exists() and not (root / RECORD).exists()
    assert (root / CONFIG).exists()


def run_gpu_node(node, **role_vars):
    """The gpu_node role (no driver: CDI off; containerd, restarts left to the user) on the node."""
    play = [{"hosts": "node", "gather_facts": False, "roles": [{"role": "gpu_node.container_toolkit.gpu_node", "vars": dict({
        "gpu_node_toolkit_install_method": "package",
        "gpu_node_toolkit_package_version": OLD + "-1",
        "gpu_node_toolkit_package_repo_url": apt_node.REPO_URL,
        "gpu_node_toolkit_package_repo_key": node["key"],
        "gpu_node_cdi_enabled": False,
        "gpu_node_container_engines": ["containerd"],
        "gpu_node_containerd_restart_mode": "none",
    }, **role_vars)}]}]
    playbook = node["tmp"] / "site.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    proc = run_playbook(playbook, inventory=str(node["inventory"]), env={"ANSIBLE_PIPELINING": "True"})
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return recap(proc.stdout)["node"]


def test_gpu_node_role_points_containerd_and_the_toolkit_at_the_packages_binaries(node):
    root = node["root"]
    totals = run_gpu_node(node)
    assert totals["changed"] > 0
    assert toolkit_versions(root) == {name: OLD + "-1" for name in PACKAGES}
    containerd = (root / "etc/containerd/config.toml").read_text()
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime"' in containerd
    assert 'BinaryName = "/usr/bin/nvidia-container-runtime.cdi"' in containerd
    assert "/usr/local/nvidia/toolkit/nvidia-container-runtime" not in containerd
    assert 'path = "/usr/bin/nvidia-container-cli"' in (root / CONFIG).read_text()
    assert run_gpu_node(node)["changed"] == 0

    totals = run_gpu_node(node, gpu_node_state="absent")
    assert totals["changed"] > 0
    assert toolkit_versions(root) == {}
    for path in (LIST, KEYRING, RECORD, CONFIG, "etc/containerd/config.toml"):
        assert not (root / path).exists(), path
