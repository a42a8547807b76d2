from __future__ import annotations

import os
import stat

import pytest
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.modules import device_nodes

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")

PROC_DEVICES = "Character devices:\n  1 mem\n195 nvidia-frontend\n509 nvidia-uvm\n\nBlock devices:\n  8 sd\n"
CONTROL = {"nvidiactl": (195, 255), "nvidia-modeset": (195, 254), "nvidia-uvm": (509, 0), "nvidia-uvm-tools": (509, 1)}


@pytest.fixture
def node(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "devices").write_text(PROC_DEVICES)
    (tmp_path / "dev").mkdir()
    os.mknod(str(tmp_path / "dev" / "nvidia0"), stat.S_IFCHR | 0o666, os.makedev(195, 0))
    return tmp_path


def numbers(path):
    st = os.lstat(path)
    assert stat.S_ISCHR(st.st_mode), path
    return os.major(st.st_rdev), os.minor(st.st_rdev), stat.S_IMODE(st.st_mode)


def test_creates_all_then_idempotent(node, monkeypatch):
    args = {"host_root": str(node)}
    result, failed = run_module(device_nodes.main, args, check_mode=True, monkeypatch=monkeypatch)
    assert not failed and result["changed"]
    assert sorted(result["created"]) == sorted("/dev/" + n for n in CONTROL)
    assert not (node / "dev" / "nvidiactl").exists()

    result, failed = run_module(device_nodes.main, args, diff=True, monkeypatch=monkeypatch)
    assert not failed and result["changed"]
    assert "/dev/nvidiactl: missing" in result["diff"]["before"]
    assert "/dev/nvidiactl: char 195:255 0666" in result["diff"]["after"]
    for name, (major, minor) in CONTROL.items():
        assert numbers(node / "dev" / name) == (major, minor, 0o666)
        assert os.lstat(node / "dev" / name).st_uid == 0
    assert sorted(os.listdir(node / "dev")) == sorted(list(CONTROL) + ["nvidia0"])

    for check in (True, False):
        result, failed = run_module(device_nodes.main, args, check_mode=check, monkeypatch=monkeypatch)
        assert not failed and not result["changed"] and result["created"] == []


def test_recreates_deleted_nvidiactl_on_cos_node(cos_node, monkeypatch):
    ctl = cos_node.node_path("/dev/nvidiactl")
    os.unlink(ctl)
    result, failed = run_module(device_nodes.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert not failed and result["changed"]
    assert result["created"] == ["/dev/nvidiactl"]
    assert numbers(ctl) == (195, 255, 0o666)


def test_wrong_node_reported_then_fixed(node, monkeypatch):
    uvm = node / "dev" / "nvidia-uvm"
    os.mknod(str(uvm), stat.S_IFCHR | 0o666, os.makedev(195, 0))
    os.chmod(uvm, stat.S_IMODE(0o666))
    ctl = node / "dev" / "nvidiactl"
    os.mknod(str(ctl), stat.S_IFCHR | 0o600, os.makedev(195, 255))
    os.chmod(ctl, 0o600)
    args = {"host_root": str(node)}
    result, failed = run_module(device_nodes.main, args, monkeypatch=monkeypatch)
    assert not failed
    wrong = {w["path"]: w["reason"] for w in result["wrong"]}
    assert wrong == {"/dev/nvidia-uvm": "is 195:0, not 509:0", "/dev/nvidiactl": "mode 0600, not 0666"}
    assert numbers(uvm) == (195, 0, 0o666) and result["fixed"] == []

    result, failed = run_module(device_nodes.main, dict(args, fix=True), check_mode=True, monkeypatch=monkeypatch)
    assert not failed and result["changed"] and sorted(result["fixed"]) == ["/dev/nvidia-uvm", "/dev/nvidiactl"]
    assert numbers(uvm) == (195, 0, 0o666)

    result, failed = run_module(device_nodes.main, dict(args, fix=True), monkeypatch=monkeypatch)
    assert not failed and result["changed"]
    assert numbers(uvm) == (509, 0, 0o666) and numbers(ctl) == (195, 255, 0o666)
    result, failed = run_module(device_nodes.main, dict(args, fix=True), monkeypatch=monkeypatch)
    assert not failed and not result["changed"] and result["wrong"] == []


def test_directory_is_left_alone(node, monkeypatch):
    (node / "dev" / "nvidia-modeset").mkdir()
    result, failed = run_module(device_nodes.main, {"host_root": str(node), "fix": True}, monkeypatch=monkeypatch)
    assert not failed
    assert any("nvidia-modeset is a directory" in w for w in result["warnings"])
    assert (node / "dev" / "nvidia-modeset").is_dir()


def test_regular_file_replaced_with_fix(node, monkeypatch):
    (node / "dev" / "nvidiactl").write_text("oops")
    result, failed = run_module(device_nodes.main, {"host_root": str(node), "fix": True}, monkeypatch=monkeypatch)
    assert not failed and "/dev/nvidiactl" in result["fixed"]
    assert numbers(node / "dev" / "nvidiactl") == (195, 255, 0o666)


def test_dev_root_of_driver_container(driver_container_node, monkeypatch):
    node = driver_container_node
    os.unlink(node.node_path("/run/nvidia/driver/dev/nvidia-uvm-tools"))
    result, failed = run_module(device_nodes.main, {"host_root": str(node.root), "dev_root": node.dev_root},
                                monkeypatch=monkeypatch)
    assert not failed and result["created"] == ["/run/nvidia/driver/dev/nvidia-uvm-tools"]


def test_uvm_not_loaded_warns(node, monkeypatch):
    (node / "proc" / "devices").write_text("Character devices:\n195 nvidia\n")
    result, failed = run_module(device_nodes.main, {"host_root": str(node)}, monkeypatch=monkeypatch)
    assert not failed and sorted(result["created"]) == ["/dev/nvidia-modeset", "/dev/nvidiactl"]
    assert len(result["warnings"]) == 2


@pytest.mark.parametrize("devices, message", [
    ("Character devices:\n  1 mem\n", "kernel module is not loaded"),
    (None, "cannot read /proc/devices under host_root"),
    ("garbage\n", "cannot parse"),
])
def test_failures(node, monkeypatch, devices, message):
    if devices is None:
        (node / "proc" / "devices").unlink()
    else:
        (node / "proc" / "devices").write_text(devices)
    result, failed = run_module(device_nodes.main, {"host_root": str(node)}, monkeypatch=monkeypatch)
    assert failed and message in result["msg"]
    assert not (node / "dev" / "nvidiactl").exists()


def test_nodes_none_does_nothing(tmp_path, monkeypatch):
    result, failed = run_module(device_nodes.main, {"host_root": str(tmp_path), "nodes": "none"}, monkeypatch=monkeypatch)
    assert not failed and not result["changed"]


def test_missing_dev_dir(node, monkeypatch):
    result, failed = run_module(device_nodes.main, {"host_root": str(node), "dev_root": "/nowhere"}, monkeypatch=monkeypatch)
    assert failed and "/nowhere/dev does not exist" in result["msg"]
