# -*- coding: utf-8 -*-
"""node_files_info: several files read in one run, symlinks resolved inside host_root."""

from __future__ import annotations

import base64
import os
import socket

import pytest
from confined import needs_unshare, read_only, run_confined
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.modules import node_files_info

# An absolute link target that must not exist on the machine running the tests: links are
# resolved inside host_root, so the module must never look at it outside.
NOWHERE = "/gpu-node-test-nowhere"


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    (root / "etc" / "containerd").mkdir(parents=True)
    (root / "etc" / "containerd" / "config.toml").write_bytes(b"version = 2\n")
    assert not os.path.lexists(NOWHERE)
    return root


def info(root, monkeypatch, check_mode=False, **args):
    result, failed = run_module(node_files_info.main, dict(args, host_root=str(root)), check_mode=check_mode,
                                monkeypatch=monkeypatch)
    assert not failed, result
    assert result["changed"] is False
    return result


def content(entry):
    return base64.b64decode(entry["content"])


def test_reads_each_file_in_order(root, monkeypatch):
    (root / "etc" / "containerd" / "conf.d").mkdir()
    (root / "etc" / "containerd" / "conf.d" / "99-nvidia.toml").write_bytes(b"\x00\xffbinary")
    result = info(root, monkeypatch, paths=["/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml",
                                            "/etc/containerd/missing.toml"])
    assert result["files"] == [
        {"path": "/etc/containerd/config.toml", "resolved": "/etc/containerd/config.toml", "exists": True,
         "isdir": False, "content": base64.b64encode(b"version = 2\n").decode()},
        {"path": "/etc/containerd/conf.d/99-nvidia.toml", "resolved": "/etc/containerd/conf.d/99-nvidia.toml",
         "exists": True, "isdir": False, "content": base64.b64encode(b"\x00\xffbinary").decode()},
        {"path": "/etc/containerd/missing.toml", "resolved": "/etc/containerd/missing.toml", "exists": False,
         "isdir": False},
    ]
    assert result["existing"] == []


def test_nothing_asked_nothing_returned(root, monkeypatch):
    result = info(root, monkeypatch)
    assert result["files"] == [] and result["existing"] == []


def test_paths_are_normalised(root, monkeypatch):
    (entry,) = info(root, monkeypatch, paths=["etc//containerd/./x/../config.toml"])["files"]
    assert entry["path"] == entry["resolved"] == "/etc/containerd/config.toml"
    assert content(entry) == b"version = 2\n"


def test_an_empty_file_has_empty_content(root, monkeypatch):
    (root / "etc" / "empty").write_bytes(b"")
    (entry,) = info(root, monkeypatch, paths=["/etc/empty"])["files"]
    assert entry["exists"] and entry["content"] == "" and "error" not in entry


def test_a_relative_link_is_followed(root, monkeypatch):
    (root / "etc" / "containerd" / "link.toml").symlink_to("config.toml")
    (entry,) = info(root, monkeypatch, paths=["/etc/containerd/link.toml"])["files"]
    assert entry["path"] == "/etc/containerd/link.toml"
    assert entry["resolved"] == "/etc/containerd/config.toml"
    assert entry["exists"] and content(entry) == b"version = 2\n"


def test_an_absolute_link_target_is_under_host_root(root, monkeypatch):
    # /etc/hostname exists on this machine too: the file read must be the one under host_root.
    (root / "etc" / "hostname").write_bytes(b"inside-host-root\n")
    (root / "etc" / "name-link").symlink_to("/etc/hostname")
    (entry,) = info(root, monkeypatch, paths=["/etc/name-link"])["files"]
    assert entry["resolved"] == "/etc/hostname"
    assert content(entry) == b"inside-host-root\n"


def test_a_link_in_a_parent_directory_is_resolved_inside_host_root(root, monkeypatch):
    real = root / "home" / "kubernetes" / "containerd"
    real.mkdir(parents=True)
    (real / "config.toml").write_bytes(b"version = 3\n")
    (root / "etc" / "gke").symlink_to("/home/kubernetes")  # absolute, in a parent of the file
    (root / "etc" / "up").symlink_to("../../../../../home")  # climbs above host_root: stops at its /
    result = info(root, monkeypatch, paths=["/etc/gke/containerd/config.toml", "/etc/up/kubernetes/containerd/config.toml"])
    for entry in result["files"]:
        assert entry["resolved"] == "/home/kubernetes/containerd/config.toml"
        assert entry["exists"] and content(entry) == b"version = 3\n"


def test_a_dangling_link_does_not_exist(root, monkeypatch):
    (root / "etc" / "dangling").symlink_to(NOWHERE + "/config.toml")
    (root / "etc" / "dangling-rel").symlink_to("containerd/gone.toml")
    result = info(root, monkeypatch, paths=["/etc/dangling", "/etc/dangling-rel"])
    assert result["files"] == [
        {"path": "/etc/dangling", "resolved": NOWHERE + "/config.toml", "exists": False, "isdir": False},
        {"path": "/etc/dangling-rel", "resolved": "/etc/containerd/gone.toml", "exists": False, "isdir": False},
    ]


def test_a_link_loop_is_an_error(root, monkeypatch):
    (root / "etc" / "a").symlink_to("b")
    (root / "etc" / "b").symlink_to("a")
    (entry,) = info(root, monkeypatch, paths=["/etc/a"])["files"]
    assert entry["exists"] is True and "content" not in entry
    assert entry["error"].startswith("too many levels of symbolic links at /etc/")


def test_a_directory_is_not_read(root, monkeypatch):
    (root / "etc" / "dirlink").symlink_to("containerd")
    result = info(root, monkeypatch, paths=["/etc/containerd", "/etc/dirlink", "/"])
    for entry, resolved in zip(result["files"], ["/etc/containerd", "/etc/containerd", "/"]):
        assert entry["resolved"] == resolved
        assert entry["exists"] and entry["isdir"] and "content" not in entry and "error" not in entry


def test_a_file_larger_than_max_size_is_not_read(root, monkeypatch):
    result = info(root, monkeypatch, paths=["/etc/containerd/config.toml"], max_size=11)
    (entry,) = result["files"]
    assert entry["exists"] and entry["error"] == "larger than 11 bytes" and "content" not in entry
    (entry,) = info(root, monkeypatch, paths=["/etc/containerd/config.toml"], max_size=12)["files"]
    assert content(entry) == b"version = 2\n"


def test_a_file_that_cannot_be_read_says_why(root, monkeypatch):
    # open() of a socket fails with ENXIO, also for root (a mode of 000 would not stop root).
    monkeypatch.chdir(root / "etc")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind("containerd.sock")
        (entry,) = info(root, monkeypatch, paths=["/etc/containerd.sock"])["files"]
    finally:
        server.close()
    assert entry["exists"] and not entry["isdir"] and "content" not in entry
    assert entry["error"].startswith("/etc/containerd.sock is a socket, not a regular file")  # a host path


@pytest.mark.parametrize("kind", ["fifo", "zero-device", "fifo-behind-a-link"])
def test_a_fifo_or_device_at_a_config_path_is_named_and_never_read(root, monkeypatch, kind):
    """A FIFO blocked the run for ever; a device that reads like /dev/zero was read until memory ran out."""
    config = root / "etc" / "containerd" / "config.toml"
    config.unlink()
    if kind == "zero-device":
        os.mknod(config, 0o20666, os.makedev(1, 5))
    else:
        os.mkfifo(config if kind == "fifo" else root / "etc" / "fifo")
        if kind == "fifo-behind-a-link":
            config.symlink_to("/etc/fifo")
    (entry,) = info(root, monkeypatch, paths=["/etc/containerd/config.toml"])["files"]
    what = "character device" if kind == "zero-device" else "FIFO"
    name = "/etc/fifo" if kind == "fifo-behind-a-link" else "/etc/containerd/config.toml"
    assert entry["exists"] and "content" not in entry
    assert entry["error"].startswith("%s is a %s, not a regular file" % (name, what)), entry


def test_exist_lists_what_exists_in_order(root, monkeypatch):
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "containerd").write_bytes(b"")
    (root / "usr" / "sbin").symlink_to("bin")
    result = info(root, monkeypatch, exist=["/usr/bin/containerd", "/home/kubernetes/bin/containerd", "etc/containerd",
                                            "/usr/bin", "/usr/sbin/containerd", "/usr/sbin/missing"])
    # As asked for (not normalised), in the order asked.
    assert result["existing"] == ["/usr/bin/containerd", "etc/containerd", "/usr/bin", "/usr/sbin/containerd"]
    assert result["files"] == []


def test_check_mode_reads_the_same(root, monkeypatch):
    args = {"paths": ["/etc/containerd/config.toml"], "exist": ["/etc/containerd"]}
    assert info(root, monkeypatch, check_mode=True, **args) == info(root, monkeypatch, **args)


def test_exist_and_paths_in_one_run(root, monkeypatch):
    result = info(root, monkeypatch, paths=["/etc/containerd/config.toml"], exist=["/etc/containerd", "/etc/cdi"])
    assert [e["path"] for e in result["files"]] == ["/etc/containerd/config.toml"]
    assert result["existing"] == ["/etc/containerd"]


def test_exist_resolves_an_absolute_link_in_a_parent_inside_host_root(root, monkeypatch):
    (root / NOWHERE.lstrip("/") / "conf.d").mkdir(parents=True)
    (root / "etc" / "toolkit").symlink_to(NOWHERE)
    # Through the same link, paths says it exists:
    (entry,) = info(root, monkeypatch, paths=["/etc/toolkit/conf.d"])["files"]
    assert entry["exists"] and entry["isdir"]
    assert info(root, monkeypatch, exist=["/etc/toolkit/conf.d"])["existing"] == ["/etc/toolkit/conf.d"]


@needs_unshare
def test_a_read_only_host_root_is_read_the_same(root, monkeypatch):
    (root / "etc" / "link.toml").symlink_to("/etc/containerd/config.toml")
    args = {"paths": ["/etc/link.toml", "/etc/missing"], "exist": ["/etc/containerd"]}
    expected = info(root, monkeypatch, **args)
    result, _seen = run_confined("node_files_info", dict(args, host_root=str(root)), read_only(root))
    assert result["_rc"] == 0 and content(result["files"][0]) == b"version = 2\n"
    assert (result["files"], result["existing"]) == (expected["files"], expected["existing"])
