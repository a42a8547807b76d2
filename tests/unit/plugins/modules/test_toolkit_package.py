# -*- coding: utf-8 -*-
"""toolkit_package over a real host_root tree: its dpkg status file, the repository files, the record."""

from __future__ import annotations

import json

from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_package as tp
from ansible_collections.gpu_node.container_toolkit.plugins.modules import toolkit_package

KEY = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ...\n-----END PGP PUBLIC KEY BLOCK-----\n"
LIST = "etc/apt/sources.list.d/nvidia-container-toolkit.list"
KEYRING = "etc/apt/keyrings/nvidia-container-toolkit.asc"
RECORD = "usr/local/nvidia/toolkit/toolkit-package.json"


def debian(root, installed=None):
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "etc/apt/sources.list.d").mkdir(parents=True)
    set_installed(root, installed or {})
    return root


def set_installed(root, installed):
    (root / tp.DPKG_STATUS.lstrip("/")).write_text("".join(
        "Package: %s\nStatus: install ok installed\nVersion: %s\n\n" % item for item in sorted(installed.items())))


def run(root, check=False, **args):
    return run_module(toolkit_package.main, dict({"host_root": str(root), "repo_key": KEY, "version": "1.17.8-1"},
                                                 **args), check_mode=check, diff=True)


def test_present_writes_the_repository_once_and_asks_for_the_pinned_packages(tmp_path):
    root = debian(tmp_path)
    result, failed = run(root, check=True)
    assert not failed and result["changed"] and result["method"] == "package" and result["manager"] == "apt"
    assert not (root / LIST).exists() and not (root / RECORD).exists()
    result, failed = run(root)
    assert not failed and result["changed"] and result["update_cache"]
    assert result["install"] == list(tp.PACKAGES)
    assert result["packages"] == ["%s=1.17.8-1" % name for name in tp.PACKAGES]
    assert (root / KEYRING).read_text() == KEY
    assert {c["path"] for c in result["changes"]} == {"/" + LIST, "/" + KEYRING, "/" + RECORD}
    record = json.loads((root / RECORD).read_text())
    assert record["created_dirs"] == ["/usr", "/usr/local", "/usr/local/nvidia", "/usr/local/nvidia/toolkit"]
    assert {e["path"]: e["created_dirs"] for e in record["files"]}["/" + KEYRING] == [
        "/etc/apt/keyrings"]
    # The package manager installed them: nothing left to do, nothing written.
    set_installed(root, {name: "1.17.8-1" for name in tp.PACKAGES})
    for check in (True, False):
        result, failed = run(root, check=check)
        assert not failed and not result["changed"] and result["install"] == [] and not result["update_cache"]
    result, _failed = run(root, version="1.18.0-1")
    assert not result["changed"] and result["install"] == list(tp.PACKAGES) and result["update_cache"]
    # Check mode counts the install the package manager cannot preview.
    result, _failed = run(root, check=True, version="1.18.0-1")
    assert result["changed"] and result["install"] == list(tp.PACKAGES)
    assert result["changes"] == [{"path": "%s=1.18.0-1" % name, "action": "installed"} for name in tp.PACKAGES]


def test_absent_removes_its_files_and_keeps_the_record_until_its_packages_are_gone(tmp_path):
    root = debian(tmp_path, {"libnvidia-container1": "1.17.0-1"})
    run(root)
    set_installed(root, {name: "1.17.8-1" for name in tp.PACKAGES})
    result, failed = run(root, state="absent")
    assert not failed and result["changed"]
    assert result["remove"] == ["nvidia-container-toolkit", "nvidia-container-toolkit-base",
                                "libnvidia-container-tools"]
    assert not (root / LIST).exists() and not (root / KEYRING).exists()
    assert not (root / "etc/apt/keyrings").exists()  # made for the key, so it goes with it
    assert (root / "etc/apt/sources.list.d").is_dir()
    assert json.loads((root / RECORD).read_text())["files"] == []
    set_installed(root, {"libnvidia-container1": "1.17.8-1"})
    result, failed = run(root, state="absent")
    assert not failed and result["changed"] and result["remove"] == []
    assert not (root / "usr/local/nvidia").exists()
    result, failed = run(root, state="absent")
    assert not failed and not result["changed"]


def test_a_repository_file_changed_by_hand_is_kept_with_a_warning(tmp_path):
    root = debian(tmp_path)
    run(root)
    (root / LIST).write_text("deb http://elsewhere /\n")
    result, failed = run(root, state="absent")
    assert not failed and (root / LIST).exists() and not (root / KEYRING).exists()
    assert {"path": "/" + LIST, "action": "kept", "reason": "changed since this module wrote it"} in result["changes"]
    assert any("changed since" in w for w in result.get("warnings", []))


def test_auto_finds_an_install_from_packages_and_writes_nothing(tmp_path):
    root = debian(tmp_path, {"nvidia-container-toolkit": "1.16.2-1"})
    result, failed = run(root, method="auto", repo_key="")
    assert not failed and not result["changed"] and result["method"] == "existing"
    assert result["bin_dir"] == "/usr/bin" and "1.16.2-1" in result["msg"]
    assert not (root / "etc/apt/keyrings").exists() and not (root / RECORD).exists()
    set_installed(root, {})
    result, failed = run(root, method="auto", repo_key="")
    assert not failed and result["method"] == "files" and "bin_dir" not in result


def test_dnf_nodes_get_the_dnf_backend_of_their_dnf_command(tmp_path):
    # The dnf action's own pick is the pkg_mgr fact, apt on a Debian node that has dnf too.
    bin_dir = tmp_path / "usr/bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "dnf5").write_text("#!/bin/sh\n")
    (bin_dir / "dnf").symlink_to("dnf5")
    result, failed = run(tmp_path, manager="dnf", check=True)
    assert not failed and result["manager"] == "dnf" and result["dnf_backend"] == "dnf5"
    (bin_dir / "dnf").unlink()
    (bin_dir / "dnf-3").write_text("#!/bin/sh\n")
    (bin_dir / "dnf").symlink_to("/usr/bin/dnf-3")  # absolute: resolved inside host_root
    result, failed = run(tmp_path, manager="dnf", check=True)
    assert not failed and result["dnf_backend"] == "dnf4"
    result, failed = run(debian(tmp_path / "debian"), check=True)
    assert not failed and result["manager"] == "apt" and "dnf_backend" not in result


def test_a_bad_key_fails_before_anything_is_written(tmp_path):
    root = debian(tmp_path)
    result, failed = run(root, repo_key="ssh-rsa AAAA")
    assert failed and "ASCII-armored" in result["msg"] and "nothing was changed" in result["msg"]
    assert not (root / LIST).exists() and not (root / "usr").exists()
