"""The toolkit role's package method with the real dnf and rpm, on a Debian 12 tree that has them.

The node is a debootstrap tree with Debian's own dnf, python3-dnf and rpm (tests/support/dnf_node.py)
that every module of the role runs in, ``ansible.builtin.dnf`` and rpm included; the repository is a
local one indexed by createrepo_c, its metadata signed (the role's ``.repo`` file has
``repo_gpgcheck=1``), of stand-in RPMs named and requiring each other as NVIDIA's do, at two versions.
Each run is checked on the node's rpm database (``rpm --root NODE``) and files, not on what the role
says. The tree also has apt-get, so the role is given ``toolkit_package_manager: dnf``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import apt_node
import dnf_node
import package_role
import pytest

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(tool) for tool in ("unshare", "gpg", "rpm", "rpmbuild", "createrepo_c")),
    reason="needs root (chroot, mount namespaces), unshare, gpg, rpm, rpmbuild and createrepo_c")

OLD, NEW = "1.17.8-1", "1.18.0-1"
PACKAGES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
            "libnvidia-container1")
REPO_FILE = "etc/yum.repos.d/nvidia-container-toolkit.repo"
KEY = "etc/pki/rpm-gpg/nvidia-container-toolkit.asc"
RECORD = "usr/local/nvidia/toolkit/toolkit-package.json"
CONFIG = "etc/nvidia-container-runtime/config.toml"


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    """``(repo dir, armored key)``: the signed repository with both versions."""
    base = tmp_path_factory.mktemp("nvidia-rpm-repo")
    key = apt_node.make_key(base / "gnupg")
    dnf_node.build_repo(base / "repo", [OLD.split("-", maxsplit=1)[0], NEW.split("-", maxsplit=1)[0]], base / "gnupg")
    return base / "repo", key


@pytest.fixture
def node(tmp_path, repository):
    """A fresh node with dnf and the repository inside it (at /srv/nvidia-repo), and an inventory."""
    try:
        root = dnf_node.copy_node(tmp_path / "node")
    except dnf_node.Unavailable as exc:
        pytest.fail("the node tree with dnf cannot be built: %s" % exc, pytrace=False)
    shutil.copytree(repository[0], root / dnf_node.REPO_DIR)
    python = apt_node.interpreter(root, tmp_path / "node-python")
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("node ansible_connection=local ansible_python_interpreter=%s\n" % python)
    return {"root": root, "inventory": inventory, "key": repository[1], "tmp": tmp_path}


def settings(node):
    return {"toolkit_package_manager": "dnf", "toolkit_package_repo_url": dnf_node.REPO_URL,
            "toolkit_package_repo_key": node["key"]}


def run_role(node, check=False, **role_vars):
    """The toolkit role on the node with dnf; ``(recap totals, the toolkit_package step's result)``."""
    return package_role.run_role(node, check, role_vars, settings(node))


def toolkit_versions(root):
    return {name: version for name, version in dnf_node.rpm_installed(root).items() if name in PACKAGES}


def runtime_version(root):
    text = (root / "usr/bin/nvidia-container-runtime").read_text()
    return text.split("printf 'version=%s\\n' ", 1)[1].split("\n", 1)[0]


def node_files(root):
    """The node's files as ``{path: (mode, size, mtime)}``, but for the caches and logs dnf keeps,
    /tmp, and the rpm database (Debian's rpm keeps it in ~/.rpmdb; reading it touches its shared
    memory file, and :func:`toolkit_versions` compares what it lists)."""
    found = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel == "tmp" or rel.startswith(("proc/", "var/cache/", "var/log/", "var/lib/dnf/", "tmp/", "root/.rpmdb/")):
            continue
        stat = path.lstat()
        found[rel] = (stat.st_mode, stat.st_size, stat.st_mtime_ns)
    return found


def test_install_pinned_then_no_change_upgrade_downgrade_uninstall(node):
    root = node["root"]
    before = dnf_node.rpm_installed(root)
    files_before = node_files(root)

    # Check mode says what it would install and writes nothing.
    totals, result = run_role(node, check=True, toolkit_package_version=OLD)
    assert totals["changed"] > 0 and totals["failed"] == 0
    assert result["manager"] == "dnf" and result["install"] == list(PACKAGES)
    assert result["packages"] == ["%s-%s" % (name, OLD) for name in PACKAGES]
    assert dnf_node.rpm_installed(root) == before
    assert node_files(root) == files_before

    totals, result = run_role(node, toolkit_package_version=OLD)
    assert totals["changed"] > 0
    assert toolkit_versions(root) == {name: OLD for name in PACKAGES}
    assert runtime_version(root) == OLD.split("-", maxsplit=1)[0]
    repo_text = (root / REPO_FILE).read_text()
    assert "baseurl=%s\n" % dnf_node.REPO_URL in repo_text
    assert "repo_gpgcheck=1\n" in repo_text and "gpgkey=file:///%s\n" % KEY in repo_text
    assert (root / KEY).read_text() == node["key"].strip() + "\n"
    record = json.loads((root / RECORD).read_text())
    assert record["preexisting"] == {} and record["installed"] == list(PACKAGES)
    # The toolkit's configuration, the base package's %config file, names the binaries in /usr/bin.
    config = (root / CONFIG).read_text()
    assert 'path = "/usr/bin/nvidia-container-cli"' in config
    assert "environment = []" in config  # the package's own keys are kept
    assert not (root / "usr/local/nvidia/toolkit/nvidia-container-runtime").exists()

    # A second run, and the same in check mode, change nothing.
    snapshot = {p: (root / p).read_bytes() for p in (REPO_FILE, KEY, RECORD, CONFIG)}
    for check in (False, True):
        totals, result = run_role(node, check=check, toolkit_package_version=OLD)
        assert totals["changed"] == 0, totals
        assert result["install"] == []
    assert {p: (root / p).read_bytes() for p in snapshot} == snapshot

    # Upgrade, then downgrade, by the pinned version alone; check mode first says so and changes nothing.
    totals, result = run_role(node, check=True, toolkit_package_version=NEW)
    assert totals["changed"] > 0 and result["install"] == list(PACKAGES)
    assert toolkit_versions(root) == {name: OLD for name in PACKAGES}
    totals, _result = run_role(node, toolkit_package_version=NEW)
    assert totals["changed"] > 0
    assert toolkit_versions(root) == {name: NEW for name in PACKAGES}
    assert runtime_version(root) == NEW.split("-", maxsplit=1)[0]
    totals, _result = run_role(node, toolkit_package_version=NEW)
    assert totals["changed"] == 0
    totals, _result = run_role(node, toolkit_package_version=OLD)
    assert totals["changed"] > 0
    assert toolkit_versions(root) == {name: OLD for name in PACKAGES}
    assert runtime_version(root) == OLD.split("-", maxsplit=1)[0]

    # Uninstall: check mode first, then for real; then a second time, which changes nothing.
    totals, _result = run_role(node, check=True, toolkit_state="absent")
    assert totals["changed"] > 0
    assert toolkit_versions(root) == {name: OLD for name in PACKAGES} and (root / REPO_FILE).exists()
    totals, result = run_role(node, toolkit_state="absent")
    assert totals["changed"] > 0
    assert sorted(result["remove"]) == sorted(PACKAGES)
    assert toolkit_versions(root) == {}
    assert dnf_node.rpm_installed(root) == before
    for path in (REPO_FILE, KEY, RECORD, CONFIG):
        assert not (root / path).exists(), path
    assert not (root / "usr/local/nvidia/toolkit").exists()
    assert not (root / "usr/bin/nvidia-container-runtime").exists()
    # Unlike apt's purge, rpm keeps a %config file changed since its install (the role's settings
    # are in it) beside where it was, as rpm does on every RPM node; nothing else is left.
    assert 'path = "/usr/bin/nvidia-container-cli"' in (root / (CONFIG + ".rpmsave")).read_text()
    assert sorted(set(node_files(root)) - set(files_before)) == [
        "etc/nvidia-container-runtime", "etc/nvidia-container-runtime/config.toml.rpmsave"]
    totals, _result = run_role(node, toolkit_state="absent")
    assert totals["changed"] == 0


def test_a_repository_signed_by_another_key_installs_nothing(node, tmp_path):
    # The key the role writes is the one dnf checks repomd.xml.asc with (repo_gpgcheck=1).
    other_key = apt_node.make_key(tmp_path / "other-gnupg")
    proc, _out = package_role.play_role(node, False, {"toolkit_package_version": OLD},
                                        dict(settings(node), toolkit_package_repo_key=other_key))
    assert proc.returncode != 0
    assert "repomd.xml GPG signature verification error: Bad GPG signature" in proc.stdout, proc.stdout[-4000:]
    assert toolkit_versions(node["root"]) == {}


def test_auto_uses_packages_already_installed_and_uninstall_leaves_them(node, repository):
    root = node["root"]
    # Installed with the node's own rpm from the repository's files, as a node whose toolkit came from elsewhere.
    subprocess.run(["chroot", str(root), "rpm", "-i"]
                   + ["/%s/%s-%s.x86_64.rpm" % (dnf_node.REPO_DIR, name, OLD) for name in PACKAGES],
                   check=True, capture_output=True)
    installed = toolkit_versions(root)
    assert installed == {name: OLD for name in PACKAGES}

    totals, result = run_role(node, toolkit_install_method="auto", toolkit_package_repo_key="")
    assert result["method"] == "existing" and "is installed from packages" in result["msg"]
    assert result["bin_dir"] == "/usr/bin"
    assert not (root / REPO_FILE).exists() and not (root / RECORD).exists()
    assert 'path = "/usr/bin/nvidia-container-cli"' in (root / CONFIG).read_text()
    assert totals["changed"] == 1  # the config.toml
    totals, _result = run_role(node, toolkit_install_method="auto", toolkit_package_repo_key="")
    assert totals["changed"] == 0

    # The package method on the same node upgrades the node's own packages, and its uninstall
    # removes the repository it wrote but not the packages, which were there before it.
    totals, result = run_role(node, toolkit_package_version=NEW)
    assert toolkit_versions(root) == {name: NEW for name in PACKAGES}
    record = json.loads((root / RECORD).read_text())
    assert record["preexisting"] == installed and record["installed"] == []
    totals, result = run_role(node, toolkit_state="absent")
    assert result["remove"] == []
    assert toolkit_versions(root) == {name: NEW for name in PACKAGES}
    assert not (root / REPO_FILE).exists() and not (root / KEY).exists() and not (root / RECORD).exists()
    assert (root / CONFIG).exists()
