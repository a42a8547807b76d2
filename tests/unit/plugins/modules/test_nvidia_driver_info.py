from __future__ import annotations

import base64
import os

import pytest
from confined import needs_unshare, read_only, run_confined
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_look
from ansible_collections.gpu_node.container_toolkit.plugins.modules import node_info, nvidia_driver_info


def test_reports_facts_at_top_level(cos_node, monkeypatch):
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert not failed and result["changed"] is False
    assert result["driver_root"] == "/home/kubernetes/bin/nvidia"
    assert result["driver_version"] == "535.104.12"
    assert "warnings" not in result or result["warnings"] == []


def test_warnings_become_module_warnings(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", broken=("library",))
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(node.root)}, monkeypatch=monkeypatch)
    assert not failed
    assert any("libnvidia-broken" in w for w in result["warnings"])


def test_failure_names_option(tmp_path, monkeypatch):
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(tmp_path)}, monkeypatch=monkeypatch)
    assert failed
    assert "no NVIDIA driver found under host_root %s" % tmp_path in result["msg"]
    assert "Set driver_root" in result["msg"]
    # short enough to read; the paths searched are data
    assert len(result["msg"]) < 500 + len(str(tmp_path))
    assert "/home/kubernetes/bin/nvidia/lib64/libcuda.so.*" in result["searched"]


def test_version_mismatch_is_a_warning_with_the_versions_as_data(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", driver_version="535.104.12", kernel_version="550.54.15")
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(node.root)}, monkeypatch=monkeypatch)
    assert not failed
    assert result["driver_version"] == "550.54.15" and result["library_version"] == "535.104.12"
    assert len(result["libraries"]) == len(node.libraries)
    (warning,) = result["warnings"]
    assert warning.startswith("kernel module 550.54.15, libraries 535.104.12 found under /home/kubernetes/bin/nvidia")


def test_driver_root_that_is_a_file_fails(cos_node, monkeypatch):
    cos_node.node_path("/opt").mkdir()
    cos_node.node_path("/opt/nvidia").write_text("x")
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root), "driver_root": "/opt/nvidia"},
                                monkeypatch=monkeypatch)
    assert failed and "driver_root /opt/nvidia is a file, not a directory" in result["msg"]


def systemd(monkeypatch, running):
    """Whether /run/systemd/system is a directory, as the module sees it on this machine."""
    isdir = os.path.isdir
    monkeypatch.setattr(node_look.os.path, "isdir",
                        lambda path: running if path == "/run/systemd/system" else isdir(path))


@pytest.mark.parametrize("layout, expected", [("cos", "cos"), ("ubuntu", "ubuntu"), ("driver-container", "ubuntu")])
@pytest.mark.parametrize("running", [True, False])
def test_os_release_id_and_systemd_running(fake_node_factory, monkeypatch, layout, expected, running):
    node = fake_node_factory(layout)
    systemd(monkeypatch, running)
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(node.root)}, monkeypatch=monkeypatch)
    assert not failed
    assert result["os_release_id"] == expected
    assert result["systemd_running"] is running
    assert result["driver_version"] == node.driver_version  # the driver facts are there as before


def test_systemd_running_is_looked_up_on_this_machine(cos_node, monkeypatch):
    # Not under host_root: a /run/systemd/system there says nothing about where the module runs.
    cos_node.node_path("/run/systemd/system").mkdir(parents=True, exist_ok=True)
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert not failed and result["systemd_running"] is os.path.isdir("/run/systemd/system")


@pytest.mark.parametrize("files, expected", [
    ({"etc/os-release": "ID=cos\n", "usr/lib/os-release": "ID=other\n"}, "cos"),
    ({"usr/lib/os-release": 'ID="debian"\n'}, "debian"),
    ({"etc/os-release": "NAME=x\n", "usr/lib/os-release": "ID=fedora\n"}, "fedora"),
    ({"etc/os-release": "NAME=x\n"}, ""),
    ({}, ""),
])
def test_os_release_id_is_in_the_failure_result_too(tmp_path, monkeypatch, files, expected):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    systemd(monkeypatch, True)
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(tmp_path)}, monkeypatch=monkeypatch)
    assert failed and "no NVIDIA driver found" in result["msg"]
    assert result["os_release_id"] == expected
    assert result["systemd_running"] is True
    assert result["searched"]  # the discovery details are still there


def test_os_release_as_a_relative_link_like_real_distributions(tmp_path, monkeypatch):
    (tmp_path / "usr" / "lib").mkdir(parents=True)
    (tmp_path / "usr" / "lib" / "os-release").write_text("ID=ubuntu\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").symlink_to("../usr/lib/os-release")
    result, _failed = run_module(nvidia_driver_info.main, {"host_root": str(tmp_path)}, monkeypatch=monkeypatch)
    assert result["os_release_id"] == "ubuntu"


def test_an_unreadable_os_release_is_skipped(tmp_path, monkeypatch):
    (tmp_path / "etc" / "os-release").mkdir(parents=True)  # a directory: open() fails
    (tmp_path / "usr" / "lib").mkdir(parents=True)
    (tmp_path / "usr" / "lib" / "os-release").write_bytes(b"ID=cos\nNAME=\xff\n")
    result, _failed = run_module(nvidia_driver_info.main, {"host_root": str(tmp_path)}, monkeypatch=monkeypatch)
    assert result["os_release_id"] == "cos"


def test_os_release_as_an_absolute_link_is_resolved_inside_host_root(tmp_path, monkeypatch):
    target = "/gpu-node-test-nowhere/os-release"
    assert not os.path.lexists(target)
    (tmp_path / target.lstrip("/")).parent.mkdir(parents=True)
    (tmp_path / target.lstrip("/")).write_text("ID=cos\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").symlink_to(target)
    result, _failed = run_module(nvidia_driver_info.main, {"host_root": str(tmp_path)}, monkeypatch=monkeypatch)
    assert result["os_release_id"] == "cos"


@needs_unshare
def test_a_read_only_host_root_is_read_the_same(cos_node, monkeypatch):
    """COS's / is read-only: the module writes nothing, so it reports exactly what it reports on a writable one."""
    expected, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert not failed
    listing = sorted(os.listdir(cos_node.root))
    result, seen = run_confined("nvidia_driver_info", {"host_root": str(cos_node.root)}, read_only(cos_node.root),
                                look=[cos_node.root])
    assert result.pop("_rc") == 0, result
    # Not the module's own: Ansible's echo of the arguments (which some releases leave out of a
    # module's output), and whether systemd runs here (it does not inside the namespace).
    ignored = {"invocation", "systemd_running"}
    assert result["driver_version"] and result["gpus"]
    assert {k: v for k, v in result.items() if k not in ignored} == {
        k: v for k, v in expected.items() if k not in ignored}
    assert seen == {str(cos_node.root): listing}


def test_container_engines_found_under_host_root_links_resolved_there(cos_node, monkeypatch):
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert not failed and result["container_engines"] == {"containerd": ["/etc/containerd/config.toml"]}
    (cos_node.node_path("/usr/bin")).mkdir(parents=True, exist_ok=True)
    cos_node.node_path("/usr/bin/dockerd").write_bytes(b"\x7fELF")
    # An absolute link is read inside host_root, as the node reads it: this one leads nowhere there.
    cos_node.node_path("/usr/bin/crio").symlink_to("/opt/crio/bin/crio")
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert result["container_engines"] == {"containerd": ["/etc/containerd/config.toml"], "docker": ["/usr/bin/dockerd"]}
    cos_node.node_path("/opt/crio/bin").mkdir(parents=True)
    cos_node.node_path("/opt/crio/bin/crio").write_bytes(b"\x7fELF")
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert result["container_engines"]["crio"] == ["/usr/bin/crio"]


# --- what the later tasks of a run need, in the same call ---------------------------------------

def test_device_node_changes_names_the_missing_control_nodes(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", missing=("nvidiactl",))
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(node.root)}, monkeypatch=monkeypatch)
    assert not failed
    assert "/dev/nvidiactl" in result["device_node_changes"]["nodes"]
    assert not node.node_path("/dev/nvidiactl").exists()  # the look only looks


def test_device_node_changes_empty_on_a_complete_node_and_null_without_proc_devices(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos")
    result, _failed = run_module(nvidia_driver_info.main, {"host_root": str(node.root)}, monkeypatch=monkeypatch)
    assert result["device_node_changes"]["nodes"] == []
    # The links runc's systemd driver needs are not there on a fresh fake node: named, not made.
    assert result["device_node_changes"]["char_links"]
    assert all(p.startswith("/dev/char/") for p in result["device_node_changes"]["char_links"])
    assert not node.node_path("/dev/char").exists()
    node.node_path("/proc/devices").unlink()
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(node.root)}, monkeypatch=monkeypatch)
    assert not failed and result["device_node_changes"] is None


def test_read_ahead_reads_what_it_is_asked_and_what_the_actions_probe(cos_node, monkeypatch):
    config = cos_node.node_path("/etc/containerd/config.toml")
    args = {"host_root": str(cos_node.root), "read_ahead": {
        "files": ["/etc/containerd/config.toml", "/home/kubernetes/bin/nvidia/toolkit/config.toml"],
        "trees": ["/etc/cdi"], "exist": ["/etc/containerd"]}}
    result, failed = run_module(node_info.main, args, monkeypatch=monkeypatch)
    assert not failed
    ahead = result["read_ahead"]
    assert ahead["host_root"] == str(cos_node.root)
    first, second = ahead["files"]
    assert base64.b64decode(first["content"]) == config.read_bytes()
    assert second["exists"] is False and "content" not in second
    # The directories above each file: what a write of a missing file would create.
    assert "/home/kubernetes/bin/nvidia/toolkit" in ahead["checked"]
    assert "/home/kubernetes/bin/nvidia/toolkit" not in ahead["existing"]
    assert "/etc/containerd" in ahead["existing"]
    # toolkit_config's ldconfig candidates for the driver root found, containerd_runtime's binaries.
    assert "/home/kubernetes/bin/nvidia/etc/ld.so.cache" in ahead["checked"]
    assert "/usr/bin/containerd" in ahead["checked"]
    assert ahead["trees"]["/etc/cdi"]["exists"] is False


def test_no_read_ahead_without_the_option(cos_node, monkeypatch):
    result, _failed = run_module(node_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert "read_ahead" not in result


def test_the_look_returns_the_driver_facts_and_driver_info_reads_nothing_ahead(cos_node, monkeypatch):
    facts, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert not failed
    looked, failed = run_module(node_info.main, {"host_root": str(cos_node.root), "read_ahead": {"files": []}},
                                monkeypatch=monkeypatch)
    assert not failed
    assert looked.pop("read_ahead")["driver"]["facts"]["driver_version"] == "535.104.12"
    assert len(looked.pop("look_digest")) == 64
    assert looked == facts
    refused, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root), "read_ahead": {}},
                                 monkeypatch=monkeypatch)
    assert failed and "read_ahead" in refused["msg"]


def test_the_look_fails_as_driver_info_does(tmp_path, monkeypatch):
    looked, failed = run_module(node_info.main, {"host_root": str(tmp_path), "read_ahead": {}}, monkeypatch=monkeypatch)
    assert failed and "no NVIDIA driver found under host_root" in looked["msg"]
    assert "/home/kubernetes/bin/nvidia/lib64/libcuda.so.*" in looked["searched"]
    assert looked["os_release_id"] == ""
