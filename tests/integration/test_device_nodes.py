"""device_nodes through the real ``ansible`` command."""

from __future__ import annotations

import os
import stat

from ansible_runner import run_module


def test_recreates_deleted_nvidiactl(cos_node):
    ctl = cos_node.node_path("/dev/nvidiactl")
    os.unlink(ctl)
    args = {"host_root": str(cos_node.root)}
    flags = [run_module("device_nodes", args, check=check) for check in (True, False, True, False)]
    assert [r["_rc"] for r in flags] == [0, 0, 0, 0], flags
    assert [r["changed"] for r in flags] == [True, True, False, False]
    assert flags[1]["created"] == ["/dev/nvidiactl"]
    st = os.lstat(ctl)
    assert stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == (195, 255)
    assert stat.S_IMODE(st.st_mode) == 0o666


def test_not_loaded_is_a_clear_failure(fake_node_factory):
    node = fake_node_factory("cos", missing=("kernel_module",))
    result = run_module("device_nodes", {"host_root": str(node.root)})
    assert result["_rc"] != 0 and "kernel module is not loaded" in result["msg"]
