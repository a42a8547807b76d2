from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys

import confined
import pytest
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_fs
from ansible_collections.gpu_node.container_toolkit.plugins.modules import node_file_write

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown and mount need root")

PATH = "/etc/containerd/config.toml"


def _write(tmp_path, monkeypatch, check_mode=False, **args):
    return run_module(node_file_write.main, dict({"host_root": str(tmp_path), "path": PATH}, **args),
                      check_mode=check_mode, monkeypatch=monkeypatch)


def test_creates_file_and_directories_then_no_change(tmp_path, monkeypatch):
    result, failed = _write(tmp_path, monkeypatch, check_mode=True, content="version = 2\n")
    assert not failed and result["changed"] and result["dirs_created"] == ["/etc", "/etc/containerd"]
    assert not (tmp_path / "etc").exists()

    result, failed = _write(tmp_path, monkeypatch, content="version = 2\n", mode="0600")
    target = tmp_path / PATH.lstrip("/")
    assert not failed and result["changed"] and target.read_text() == "version = 2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "etc" / "containerd").stat().st_mode) == 0o755

    result, failed = _write(tmp_path, monkeypatch, content="version = 2\n")
    assert not failed and not result["changed"] and result["dirs_created"] == []


def test_replace_keeps_mode_and_makes_backup(tmp_path, monkeypatch):
    target = tmp_path / PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text("old\n")
    os.chmod(target, 0o640)
    inode = target.stat().st_ino
    result, failed = _write(tmp_path, monkeypatch, content="new\n", backup=True, mode="0600")
    assert not failed and result["changed"]
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode
    backup = tmp_path / result["backup_file"].lstrip("/")
    assert result["backup_file"].startswith(PATH + ".") and backup.read_text() == "old\n"
    assert sorted(p.name for p in target.parent.iterdir()) == sorted([target.name, backup.name])


def test_failing_validate_leaves_the_file(tmp_path, monkeypatch):
    target = tmp_path / PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text("old\n")
    result, failed = _write(tmp_path, monkeypatch, content="new\n", validate="sh -c 'grep -q old %s || exit 4'")
    assert failed and "failed to validate (rc 4" in result["msg"] and PATH in result["msg"]
    assert target.read_text() == "old\n" and os.listdir(target.parent) == [target.name]

    result, failed = _write(tmp_path, monkeypatch, content="new\n", validate="true")
    assert failed and "must contain %s" in result["msg"] and target.read_text() == "old\n"

    result, failed = _write(tmp_path, monkeypatch, content="new\n", validate="grep -q new %s")
    assert not failed and result["changed"] and target.read_text() == "new\n"


def test_refusals(tmp_path, monkeypatch):
    result, failed = _write(tmp_path, monkeypatch, content="x", make_dirs=False)
    assert failed and "does not exist" in result["msg"] and not (tmp_path / "etc").exists()

    result, failed = _write(tmp_path, monkeypatch, content="x", mode="rw")
    assert failed and "mode must be octal" in result["msg"]

    (tmp_path / PATH.lstrip("/")).mkdir(parents=True)
    result, failed = _write(tmp_path, monkeypatch, content="x")
    assert failed and "is a directory" in result["msg"]


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def test_compare_and_swap_refuses_a_file_changed_meanwhile(tmp_path, monkeypatch):
    target = tmp_path / PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_bytes(b"read by the caller\n")
    read = _sha256(b"read by the caller\n")
    target.write_bytes(b"written by another run\n")
    result, failed = _write(tmp_path, monkeypatch, content="mine\n", expect_sha256=read)
    assert failed and result["msg"].startswith("%s changed on the node while this task ran (another run?); "
                                               "nothing was written. Run the task again" % PATH)
    assert target.read_bytes() == b"written by another run\n" and os.listdir(target.parent) == [target.name]

    # The other run wrote exactly what this one wants: nothing to do, not a failure.
    result, failed = _write(tmp_path, monkeypatch, content="written by another run\n", expect_sha256=read)
    assert not failed and not result["changed"] and result["changes"] == []

    result, failed = _write(tmp_path, monkeypatch, content="mine\n", expect_sha256=_sha256(target.read_bytes()))
    assert not failed and result["changed"] and target.read_bytes() == b"mine\n"
    assert result["changes"] == [{"path": PATH, "action": "updated"}]

    target.unlink()
    result, failed = _write(tmp_path, monkeypatch, content="mine\n", expect_sha256=read)
    assert failed and "%s was removed on the node while this task ran" % PATH in result["msg"]
    assert not target.exists()


def test_compare_and_swap_refuses_a_file_that_appeared(tmp_path, monkeypatch):
    result, failed = _write(tmp_path, monkeypatch, content="mine\n", expect_absent=True)
    assert not failed and result["changes"] == [
        {"path": "/etc", "action": "created"}, {"path": "/etc/containerd", "action": "created"},
        {"path": PATH, "action": "created"}]
    target = tmp_path / PATH.lstrip("/")
    target.write_bytes(b"someone else's\n")
    result, failed = _write(tmp_path, monkeypatch, content="mine\n", expect_absent=True)
    assert failed and "%s appeared on the node while this task ran" % PATH in result["msg"]
    assert target.read_bytes() == b"someone else's\n"
    result, failed = _write(tmp_path, monkeypatch, content="x", expect_absent=True, expect_sha256="00")
    assert failed and "mutually exclusive" in result["msg"]


@needs_root
def test_replace_keeps_owner_and_the_backup_keeps_mode_and_owner(tmp_path, monkeypatch):
    target = tmp_path / PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text("old\n")
    os.chown(target, 1234, 2345)
    os.chmod(target, 0o600)
    result, failed = _write(tmp_path, monkeypatch, content="new\n", backup=True)
    assert not failed and result["changed"]
    info = target.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (1234, 2345, 0o600)
    backup = (tmp_path / result["backup_file"].lstrip("/")).stat()
    assert (backup.st_uid, backup.st_gid, stat.S_IMODE(backup.st_mode)) == (1234, 2345, 0o600)


def test_a_second_run_waits_for_the_lock_then_fails_naming_the_holder(tmp_path, monkeypatch):
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY);"
                               " fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
                               str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        monkeypatch.setattr(node_fs, "DEFAULT_LOCK_TIMEOUT", 0.3)
        result, failed = _write(tmp_path, monkeypatch, content="x")
    finally:
        holder.kill()
        holder.wait()
    assert failed and "another run is changing this node" in result["msg"]
    assert "pid %d" % holder.pid in result["msg"] and not (tmp_path / "etc").exists()


@needs_root
@pytest.mark.parametrize("where", ["full disk", "read-only"])
def test_a_write_that_cannot_be_made_leaves_the_old_file(tmp_path, where):
    (tmp_path / "config.toml").write_text("old")
    setup = confined.full_disk(tmp_path) if where == "full disk" else confined.read_only(tmp_path)
    args = {"host_root": str(tmp_path), "path": "/config.toml", "content": "new" * 30000, "backup": True}
    result, seen = confined.run_confined("node_file_write", args, setup, look=[tmp_path / "config.toml", tmp_path])
    reason = "No space left on device" if where == "full disk" else "Read-only file system"
    assert result["_rc"] != 0 and reason in result["msg"] and "/config.toml" in result["msg"], result
    assert seen[str(tmp_path / "config.toml")] == "old"
    assert seen[str(tmp_path)] == ([".filler", "config.toml"] if where == "full disk" else ["config.toml"])


SWAPS = {
    # what replaces /etc/containerd between the controller's read and the write
    "absolute link to a directory outside the node": str,
    "relative link climbing out of the node": lambda outside: "../../" + outside.name,
    "absolute link to the outside's parent": lambda outside: str(outside.parent),
}


@pytest.mark.parametrize("case", sorted(SWAPS))
@pytest.mark.parametrize("expect", ["expect_absent", "expect_sha256"])
def test_a_directory_swapped_for_a_link_after_the_read_never_takes_the_write_outside(tmp_path, monkeypatch, case, expect):
    """The read-ahead read /etc/containerd/config.toml; then /etc/containerd became a link out of the node."""
    node = tmp_path / "node"
    outside = tmp_path / "outside"
    outside.mkdir()
    (node / "etc" / "containerd").mkdir(parents=True)
    args = {"host_root": str(node), "path": PATH, "content": "version = 2\n"}
    if expect == "expect_absent":
        args["expect_absent"] = True
    else:
        (node / "etc" / "containerd" / "config.toml").write_text("version = 2\n# old\n")
        (outside / "config.toml").write_text("version = 2\n# old\n")  # the same bytes outside: the hash matches
        args["expect_sha256"] = hashlib.sha256(b"version = 2\n# old\n").hexdigest()
    os.rename(node / "etc" / "containerd", node / "etc" / "containerd.moved")
    os.symlink(SWAPS[case](outside), node / "etc" / "containerd")
    before = sorted(os.listdir(outside)), [p.read_bytes() for p in sorted(outside.iterdir())]
    result, failed = run_module(node_file_write.main, args, monkeypatch=monkeypatch)
    assert (sorted(os.listdir(outside)), [p.read_bytes() for p in sorted(outside.iterdir())]) == before
    assert not list(tmp_path.glob("*.gpn-tmp.*")) and not list(outside.glob(".*gpn-tmp*"))
    # Inside the node the link is resolved as the node resolves it: there is no such directory.
    assert failed and "/etc/containerd" in result["msg"], result
