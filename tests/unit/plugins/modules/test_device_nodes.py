from __future__ import annotations

import os
import stat
import time

import pytest
from confined import free, needs_unshare, no_free_inodes, node_lock_held, read_only, run_confined
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


# --- dev_root auto, as nvidia_driver_info resolves it ------------------------------------------

def test_dev_root_auto_finds_the_driver_containers_dev(driver_container_node, monkeypatch):
    node = driver_container_node
    os.unlink(node.node_path("/run/nvidia/driver/dev/nvidia-uvm-tools"))
    result, failed = run_module(device_nodes.main, {"host_root": str(node.root)}, monkeypatch=monkeypatch)
    assert not failed and result["created"] == ["/run/nvidia/driver/dev/nvidia-uvm-tools"]
    assert (result["dev_root"], result["dev_root_source"]) == ("/run/nvidia/driver", "driver_root holds dev/nvidiactl")


def test_dev_root_auto_on_cos_is_the_hosts_dev(cos_node, monkeypatch):
    result, failed = run_module(device_nodes.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert not failed and not result["changed"] and result["dev_root"] == "/"
    assert result["dev_root_source"].startswith("host /dev")


def test_dev_root_auto_without_a_driver_root_is_the_hosts_dev(node, monkeypatch):
    result, failed = run_module(device_nodes.main, {"host_root": str(node)}, monkeypatch=monkeypatch)
    assert not failed and result["dev_root"] == "/"
    assert result["dev_root_source"] == "host /dev (no driver root found under host_root %s)" % node


def test_dev_root_auto_with_a_driver_root_that_is_a_file_fails(node, monkeypatch):
    (node / "opt").mkdir()
    (node / "opt" / "nvidia").write_text("x")
    result, failed = run_module(device_nodes.main, {"host_root": str(node), "driver_root": "/opt/nvidia"},
                                monkeypatch=monkeypatch)
    assert failed and result["msg"].startswith("dev_root auto: driver_root /opt/nvidia is a file, not a directory")
    assert not (node / "dev" / "nvidiactl").exists()


def test_a_linked_dev_dir_is_resolved_inside_host_root(node, monkeypatch):
    (node / "dev").rename(node / "devices")
    (node / "dev").symlink_to("/devices")  # absolute: the node's /devices, not this machine's
    result, failed = run_module(device_nodes.main, {"host_root": str(node), "dev_root": "/"}, monkeypatch=monkeypatch)
    assert not failed and sorted(result["created"]) == sorted("/dev/" + n for n in CONTROL)
    assert numbers(node / "devices" / "nvidiactl") == (195, 255, 0o666)


# --- one vocabulary: changes ------------------------------------------------------------------

def test_changes_say_what_happened_to_each_node(node, monkeypatch):
    os.mknod(str(node / "dev" / "nvidia-uvm"), stat.S_IFCHR | 0o666, os.makedev(195, 0))
    os.mknod(str(node / "dev" / "nvidiactl"), stat.S_IFCHR | 0o600, os.makedev(195, 255))
    os.chmod(node / "dev" / "nvidiactl", 0o600)
    args = {"host_root": str(node), "fix": True}
    result, failed = run_module(device_nodes.main, args, check_mode=True, monkeypatch=monkeypatch)
    expected = [{"path": "/dev/nvidiactl", "action": "mode_changed"}, {"path": "/dev/nvidia-modeset", "action": "created"},
                {"path": "/dev/nvidia-uvm", "action": "replaced"}, {"path": "/dev/nvidia-uvm-tools", "action": "created"}]
    assert not failed and result["changes"] == expected
    result, failed = run_module(device_nodes.main, args, monkeypatch=monkeypatch)
    assert not failed and result["changes"] == expected
    result, failed = run_module(device_nodes.main, args, monkeypatch=monkeypatch)
    assert not failed and result["changes"] == [] and not result["changed"]
    assert sorted(os.listdir(node / "dev")) == sorted(list(CONTROL) + ["nvidia0"])  # no temp left


def test_waits_for_another_run_holding_the_nodes_lock(node, monkeypatch):
    with node_lock_held(node, 1.5):
        started = time.monotonic()
        result, failed = run_module(device_nodes.main, {"host_root": str(node)}, monkeypatch=monkeypatch)
        waited = time.monotonic() - started
    assert not failed and result["changed"] and waited >= 1.0


# --- failing cleanly: no inode left, a read-only /dev -------------------------------------------

@needs_unshare
def test_no_free_inode_fails_cleanly(node):
    """A real ENOSPC: /dev a tmpfs whose inodes are all used (mknod needs an inode, no data block)."""
    dev = node / "dev"
    result, seen = run_confined("device_nodes", {"host_root": str(node)}, no_free_inodes(dev), after=free(dev),
                                look=[dev])
    assert result["_rc"] != 0 and result["changed"] is False and result["created"] == []
    assert result["msg"].startswith("cannot create the device node /dev/nvidiactl (char 195:255): No space left "
                                    "on device; /dev/nvidiactl was left as it was")
    assert seen == {str(dev): ["nvidia0"]}


@needs_unshare
def test_read_only_dev_fails_cleanly(node):
    dev = node / "dev"
    os.mknod(str(dev / "nvidia-uvm"), stat.S_IFCHR | 0o666, os.makedev(195, 0))
    os.chmod(dev / "nvidia-uvm", 0o666)  # noqa: S103 - the mode NVIDIA device nodes have
    result, seen = run_confined("device_nodes", {"host_root": str(node), "fix": True}, read_only(dev), look=[dev])
    assert result["_rc"] != 0 and result["changed"] is False
    assert "Read-only file system" in result["msg"] and "/dev/nvidiactl" in result["msg"]
    assert seen == {str(dev): ["nvidia-uvm", "nvidia0"]}
    assert numbers(dev / "nvidia-uvm") == (195, 0, 0o666)


def test_char_links_for_every_nvidia_node_check_real_check_real(node, monkeypatch):
    (node / "dev" / "nvidia-caps").mkdir()
    os.mknod(str(node / "dev" / "nvidia-caps" / "nvidia-cap1"), stat.S_IFCHR | 0o400, os.makedev(508, 1))
    (node / "dev" / "null").write_text("")  # not NVIDIA's: no link
    args = {"host_root": str(node), "char_links": True}
    runs = [run_module(device_nodes.main, args, check_mode=check, diff=True, monkeypatch=monkeypatch)
            for check in (True, False, True, False)]
    assert [failed for _result, failed in runs] == [False] * 4
    assert [result["changed"] for result, _failed in runs] == [True, True, False, False]
    # Check mode already counts the control nodes it would make, and the directory.
    assert runs[0][0]["changes"] == runs[1][0]["changes"]
    assert {"path": "/dev/char", "action": "created"} in runs[1][0]["changes"]
    links = {p.name: os.readlink(p) for p in (node / "dev" / "char").iterdir()}
    assert links == {"195:0": "../nvidia0", "195:254": "../nvidia-modeset", "195:255": "../nvidiactl",
                     "509:0": "../nvidia-uvm", "509:1": "../nvidia-uvm-tools", "508:1": "../nvidia-caps/nvidia-cap1"}
    assert "/dev/char/195:0: missing" in runs[1][0]["diff"]["before"]
    assert "/dev/char/195:0: -> ../nvidia0" in runs[1][0]["diff"]["after"]
    assert all(step["action"] == "ok" for step in runs[3][0]["char_links"])


def test_a_char_link_elsewhere_is_replaced_and_a_non_link_left_alone(node, monkeypatch):
    (node / "dev" / "char").mkdir()
    os.symlink("../sda", node / "dev" / "char" / "195:0")
    (node / "dev" / "char" / "195:255").write_text("not a link")
    result, failed = run_module(device_nodes.main, {"host_root": str(node), "char_links": True}, monkeypatch=monkeypatch)
    assert not failed
    assert os.readlink(node / "dev" / "char" / "195:0") == "../nvidia0"
    assert {"path": "/dev/char/195:0", "action": "replaced"} in result["changes"]
    assert (node / "dev" / "char" / "195:255").read_text() == "not a link"
    assert any(w.startswith("/dev/char/195:255 is a regular file, not a link") for w in result["warnings"])


def test_without_char_links_nothing_is_linked(node, monkeypatch):
    result, failed = run_module(device_nodes.main, {"host_root": str(node)}, monkeypatch=monkeypatch)
    assert not failed and result["char_links"] == [] and not (node / "dev" / "char").exists()
