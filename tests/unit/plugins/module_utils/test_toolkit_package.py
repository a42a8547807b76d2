# -*- coding: utf-8 -*-
"""toolkit_package's decisions: the package database, the repository files, the record."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_package as tp

KEY = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ...\n-----END PGP PUBLIC KEY BLOCK-----"
STATUS = """Package: libnvidia-container1
Status: install ok installed
Priority: optional
Version: 1.17.8-1
Description: stand-in
 a continuation line: Version: 9.9.9

Package: nvidia-container-toolkit-base
Status: deinstall ok config-files
Version: 1.17.8-1

Package: nvidia-container-toolkit
Status: hold ok installed
Version: 1.17.8-1
Conffiles:
 /etc/x 0123
"""


def test_dpkg_status_lists_installed_and_held_packages_only():
    assert tp.parse_dpkg_status(STATUS) == {"libnvidia-container1": "1.17.8-1", "nvidia-container-toolkit": "1.17.8-1"}
    assert tp.parse_dpkg_status("") == {}


def test_rpm_query_output():
    out = ("nvidia-container-toolkit 0:1.17.8-1\nlibnvidia-container1 2:1.17.8-1\n"
           "package nvidia-container-toolkit-base is not installed\n")
    assert tp.parse_rpm_query(out) == {"nvidia-container-toolkit": "1.17.8-1", "libnvidia-container1": "2:1.17.8-1"}


def test_the_dnf_backend_is_dnf5_only_where_the_dnf_command_is_dnf5():
    assert tp.dnf_backend(["/usr/bin/dnf-3"]) == "dnf4"  # RHEL 8 and 9: dnf -> dnf-3
    assert tp.dnf_backend(["/usr/bin/dnf5", "/usr/bin/dnf5"]) == "dnf5"  # Fedora 41: dnf -> dnf5
    assert tp.dnf_backend(["/usr/bin/microdnf"]) == "dnf4"  # a minimal image's microdnf, no dnf
    assert tp.dnf_backend(["/usr/bin/dnf5"]) == "dnf5"  # only dnf5 itself
    assert tp.dnf_backend([]) == "dnf4"  # none: the dnf4 module then says python3-dnf is missing


def test_apt_files_are_one_signed_by_line_and_the_key():
    files = tp.repo_files("apt", "nvidia-container-toolkit", tp.NVIDIA_APT_URL, "/", [], KEY)
    line = files["/etc/apt/sources.list.d/nvidia-container-toolkit.list"].splitlines()[-1]
    assert line == ("deb [signed-by=/etc/apt/keyrings/nvidia-container-toolkit.asc] "
                    "https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /")
    assert files["/etc/apt/keyrings/nvidia-container-toolkit.asc"] == KEY + "\n"
    mirror = tp.repo_files("apt", "ntk", "https://mirror.example.com/debian", "stable", ["main"], KEY)
    assert mirror["/etc/apt/sources.list.d/ntk.list"].endswith(" https://mirror.example.com/debian stable main\n")


def test_dnf_repo_checks_the_repository_signature_with_the_key_file():
    files = tp.repo_files("dnf", "nvidia-container-toolkit", tp.NVIDIA_DNF_URL, "/", [], KEY)
    repo = files["/etc/yum.repos.d/nvidia-container-toolkit.repo"]
    assert "[nvidia-container-toolkit]\n" in repo and "repo_gpgcheck=1\n" in repo
    assert "gpgkey=file:///etc/pki/rpm-gpg/nvidia-container-toolkit.asc\n" in repo
    assert "baseurl=https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch\n" in repo


@pytest.mark.parametrize("args, words", [
    (("apt", "x", tp.NVIDIA_APT_URL, "/", [], "not a key"), "ASCII-armored"),
    (("apt", "x", "https://a b", "/", [], KEY), "repo_url"),
    (("apt", "x", tp.NVIDIA_APT_URL, "/", ["main"], KEY), "flat repository"),
    (("apt", "x", tp.NVIDIA_APT_URL, "stable", [], KEY), "needs repo_components"),
    (("apt", "../etc/passwd", tp.NVIDIA_APT_URL, "/", [], KEY), "repo_name"),
])
def test_bad_repository_settings_are_refused_naming_the_option(args, words):
    with pytest.raises(tp.PackageError, match=words):
        tp.repo_files(*args)


def test_specs_pin_every_package_to_one_version():
    assert tp.package_specs("apt", "1.17.8-1") == ["%s=1.17.8-1" % name for name in tp.PACKAGES]
    assert tp.package_specs("dnf", "1.17.8-1") == ["%s-1.17.8-1" % name for name in tp.PACKAGES]
    assert tp.package_specs("apt", "") == list(tp.PACKAGES)
    with pytest.raises(tp.PackageError, match="not a package version"):
        tp.check_version("1.17.8; rm -rf /")


def test_what_needs_installing():
    installed = {name: "1.17.8-1" for name in tp.PACKAGES}
    assert tp.needs_install(installed, "1.17.8-1") == []
    assert tp.needs_install(installed, "") == []
    assert tp.needs_install(installed, "1.18.0-1") == list(tp.PACKAGES)
    assert tp.needs_install({}, "") == list(tp.PACKAGES)


def test_auto_uses_an_install_from_packages_and_says_so():
    assert tp.choose_method("auto", {"nvidia-container-toolkit": "1.17.8-1"})[0] == "existing"
    assert "1.17.8-1" in tp.choose_method("auto", {"nvidia-container-toolkit": "1.17.8-1"})[1]
    assert tp.choose_method("auto", {"libnvidia-container1": "1.17.8-1"})[0] == "files"
    assert tp.choose_method("package", {})[0] == "package"


def test_the_record_keeps_what_was_there_before_the_first_run():
    files = {"/etc/apt/sources.list.d/n.list": "deb x /\n"}
    first = tp.new_record(None, {"libnvidia-container1": "1.0-1"}, files, {"/etc/apt/sources.list.d/n.list": []})
    assert first["preexisting"] == {"libnvidia-container1": "1.0-1"}
    assert first["installed"] == ["nvidia-container-toolkit", "nvidia-container-toolkit-base",
                                  "libnvidia-container-tools"]
    # Later runs see the packages this method installed, and still do not count them as the node's.
    later = tp.new_record(first, {name: "1.0-1" for name in tp.PACKAGES}, files, {})
    assert tp.same_record(first, later)
    text = tp.render_record(later, ["/usr/local/nvidia", "/usr/local/nvidia/toolkit"])
    assert tp.parse_record(text, "/r")["installed"] == first["installed"]
    assert tp.removals(later, {"nvidia-container-toolkit": "1.0-1", "libnvidia-container1": "1.0-1"}) == [
        "nvidia-container-toolkit"]


def test_a_forged_record_names_no_other_packages_and_no_other_files():
    forged = {"kind": tp.RECORD_KIND, "preexisting": {}, "installed": ["openssh-server", "nvidia-container-toolkit"],
              "files": [{"path": "/etc/passwd", "sha256": "x", "created_dirs": []},
                        {"path": "/etc/apt/sources.list.d/../../shadow.list", "sha256": "x", "created_dirs": []},
                        {"path": "/etc/apt/sources.list.d/n.list", "sha256": "x", "created_dirs": ["/etc"]}],
              ownership.KEY: []}
    record = tp.parse_record(json.dumps(forged), "/r")
    assert record["installed"] == ["nvidia-container-toolkit"]
    assert [entry["path"] for entry in record["files"]] == ["/etc/apt/sources.list.d/n.list"]
    # The directories its write created are still checked by ownership.removable when used.
    assert ownership.removable("/etc/apt/sources.list.d/n.list", ["/etc"]) == ["/etc"]


@pytest.mark.parametrize("text", ["{", "[]", '{"kind": "other"}', '{"kind": "toolkit-package", "files": "x"}',
                                  '{"kind": "toolkit-package", "created_dirs": ["relative"]}'])
def test_a_damaged_record_is_refused(text):
    with pytest.raises(tp.PackageError, match="move it away"):
        tp.parse_record(text, "/usr/local/nvidia/toolkit/toolkit-package.json")
