from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_fs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeFsError, NodeRoot

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod and chown need root")


@pytest.fixture
def node(tmp_path):
    return NodeRoot(str(tmp_path))


def test_paths_map_both_ways(node, tmp_path):
    assert node.path("/etc/cdi/nvidia.yaml") == str(tmp_path / "etc/cdi/nvidia.yaml")
    assert node.host(str(tmp_path / "etc/cdi")) == "/etc/cdi"
    assert NodeRoot("/").path("etc/x") == "/etc/x"


def test_resolve_keeps_absolute_links_inside_the_root(node, tmp_path):
    (tmp_path / "run/cdi").mkdir(parents=True)
    (tmp_path / "var").mkdir()
    os.symlink("/run", tmp_path / "var/run")  # as on Debian: absolute, means the node's /run
    os.symlink("../../run/cdi", tmp_path / "var/cdi-rel")
    assert node.resolve("/var/run/cdi/nvidia.yaml") == "/run/cdi/nvidia.yaml"
    assert node.resolve("/var/cdi-rel") == "/run/cdi"
    assert node.resolve_parent("/var/run/cdi") == "/run/cdi"
    os.symlink("/etc/missing", tmp_path / "run/cdi/link")
    assert node.resolve_parent("/var/run/cdi/link") == "/run/cdi/link"
    assert node.resolve("/var/run/cdi/link") == "/etc/missing"


def test_resolve_stops_link_loops_with_the_kernels_limit(node, tmp_path):
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    with pytest.raises(NodeFsError, match="too many levels of symbolic links"):
        node.resolve("/a/x")
    assert node_fs.MAX_LINK_HOPS == 40


@needs_root
def test_observe_names_every_type_in_one_vocabulary(node, tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    (tmp_path / "d").mkdir()
    os.symlink("f", tmp_path / "l")
    os.mknod(tmp_path / "c", stat.S_IFCHR | 0o666, os.makedev(195, 255))
    os.mkfifo(tmp_path / "p")
    seen = {name: node.observe("/" + name) for name in ("f", "d", "l", "c", "p")}
    assert {name: info["type"] for name, info in seen.items()} == {
        "f": "file", "d": "directory", "l": "symlink", "c": "char", "p": "fifo"}
    assert seen["l"]["target"] == "f"
    assert (seen["c"]["major"], seen["c"]["minor"]) == (195, 255)
    assert node.observe("/f", digest=True)["sha256"] == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert node.observe("/missing") is None
    assert node.observe("/f/below") is None
    assert set(node_fs.FILE_TYPES) >= {info["type"] for info in seen.values()}


def test_write_is_atomic_keeps_mode_and_leaves_no_temp(node, tmp_path):
    (tmp_path / "etc").mkdir()
    node.write("/etc/a.toml", b"one\n")
    assert (tmp_path / "etc/a.toml").read_bytes() == b"one\n"
    assert stat.S_IMODE(os.stat(tmp_path / "etc/a.toml").st_mode) == 0o644
    os.chmod(tmp_path / "etc/a.toml", 0o600)
    node.write("/etc/a.toml", b"two\n")
    assert stat.S_IMODE(os.stat(tmp_path / "etc/a.toml").st_mode) == 0o600
    node.write("/etc/a.toml", b"three\n", mode=0o640)
    assert stat.S_IMODE(os.stat(tmp_path / "etc/a.toml").st_mode) == 0o640
    assert sorted(os.listdir(tmp_path / "etc")) == ["a.toml"]


def test_a_failed_check_leaves_the_old_file_and_no_temp(node, tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/a").write_bytes(b"old")

    def refuse(tmp):
        assert open(tmp, "rb").read() == b"new"
        raise ValueError("validator said no")

    with pytest.raises(ValueError, match="validator said no"):
        node.write("/etc/a", b"new", check=refuse)
    assert (tmp_path / "etc/a").read_bytes() == b"old"
    assert os.listdir(tmp_path / "etc") == ["a"]


def test_write_into_a_missing_directory_names_it(node):
    with pytest.raises(NodeFsError, match="cannot write in /etc/cdi") as caught:
        node.write("/etc/cdi/x.yaml", b"x")
    assert caught.value.path == "/etc/cdi/x.yaml"


FULL_DISK = textwrap.dedent("""
    import os, sys
    sys.path[:0] = %r
    from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeFsError, NodeRoot
    root = sys.argv[1]
    with open(os.path.join(root, "a"), "wb") as handle:
        handle.write(b"old")
    filler = os.path.join(root, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        os.close(fd)
    try:
        NodeRoot(root).write("/a", b"new" * 50000)
    except NodeFsError as exc:
        print("error:", exc)
    os.unlink(filler)
    print("content:", open(os.path.join(root, "a"), "rb").read().decode())
    print("listing:", sorted(os.listdir(root)))
""")


@needs_root
def test_write_on_a_full_disk_keeps_the_old_file(tmp_path):
    # A real ENOSPC: a 64 KiB tmpfs in a private mount namespace, filled up before the write.
    script = FULL_DISK % (sys.path,)
    mount = "mount -t tmpfs -o size=64k tmpfs %s && exec %s -c \"$0\" %s" % (tmp_path, sys.executable, tmp_path)
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", mount.replace("$0", "$1"),
                           "sh", script], capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("error: cannot write /a: No space left on device; the file was left as it was")
    assert lines[1:] == ["content: old", "listing: ['a']"]


def test_temps_of_killed_runs_are_removed_by_the_next_write(node, tmp_path):
    (tmp_path / "etc").mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / "etc" / node_fs.temp_name_of("a", dead.pid, "00ff")
    live = tmp_path / "etc" / node_fs.temp_name_of("a", os.getppid(), "0a0b")
    other = tmp_path / "etc" / node_fs.temp_name_of("b", dead.pid, "0c0d")
    for path in (stale, live, other):
        path.write_bytes(b"half")
    node.write("/etc/a", b"whole")
    assert sorted(os.listdir(tmp_path / "etc")) == sorted(["a", live.name, other.name])
    assert node.remove_stale_temps("/etc") == ["/etc/" + other.name]


def test_make_dirs_reports_what_it_made_outermost_first(node, tmp_path):
    assert node.missing_dirs("/etc/cdi/sub") == ["/etc", "/etc/cdi", "/etc/cdi/sub"]
    old = os.umask(0o077)
    try:
        assert node.make_dirs("/etc/cdi/sub") == ["/etc", "/etc/cdi", "/etc/cdi/sub"]
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "etc/cdi").st_mode) == 0o755
    assert node.make_dirs("/etc/cdi/sub") == []
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(NodeFsError, match="/file"):
        node.make_dirs("/file/x")
    assert node.remove_empty_dirs(["/etc", "/etc/cdi/sub", "/etc/cdi"]) == ["/etc/cdi/sub", "/etc/cdi", "/etc"]


@needs_root
def test_mknod_symlink_and_remove(node, tmp_path):
    (tmp_path / "dev/char").mkdir(parents=True)
    old = os.umask(0o077)
    try:
        node.mknod("/dev/nvidiactl", "char", 195, 255, 0o666)
    finally:
        os.umask(old)
    info = node.observe("/dev/nvidiactl")
    assert (info["type"], info["major"], info["minor"], info["mode"], info["uid"]) == ("char", 195, 255, 0o666, 0)
    node.symlink("/dev/char/195:255", "../nvidiactl")
    assert os.readlink(tmp_path / "dev/char/195:255") == "../nvidiactl"
    node.symlink("/dev/char/195:255", "../nvidia0")  # replaces, atomically
    assert os.readlink(tmp_path / "dev/char/195:255") == "../nvidia0"
    assert node.remove("/dev/char/195:255") is True
    assert node.remove("/dev/char/195:255") is False
    assert sorted(os.listdir(tmp_path / "dev")) == ["char", "nvidiactl"]


def test_chmod_sets_the_mode_and_refuses_a_link(node, tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    os.chmod(tmp_path / "f", 0o600)
    os.symlink("/f", tmp_path / "l")  # absolute: on the node it means host_root/f
    node.chmod("/f", 0o644)
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o644
    with pytest.raises(NodeFsError, match="/l is a symlink; its mode was left as it was"):
        node.chmod("/l", 0o600)
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o644
    with pytest.raises(NodeFsError, match="cannot change the mode of /missing"):
        node.chmod("/missing", 0o644)


def test_read_bytes(node, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_bytes(b"12345")
    assert node.read_bytes("/f") == b"12345"
    assert node.read_text("/f") == "12345"
    assert node.read_bytes("/missing") is None
    with pytest.raises(NodeFsError, match="/d is a directory"):
        node.read_bytes("/d")
    with pytest.raises(NodeFsError, match="larger than 4 bytes"):
        node.read_bytes("/f", max_size=4)
    assert node.list_dir("/") == ["d", "f"] and node.list_dir("/nope") == []


@pytest.mark.parametrize("kind", ["fifo", "zero", "null", "socket"])
def test_only_regular_files_are_read_and_a_fifo_or_device_never_blocks(node, tmp_path, kind):
    """A FIFO would block the run for ever, a device like /dev/zero read until memory runs out."""
    where = tmp_path / "etc" / "containerd"
    where.mkdir(parents=True)
    target = where / "config.toml"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(target))
    else:
        os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 5 if kind == "zero" else 3))
    names = {"fifo": "FIFO", "zero": "character device", "null": "character device", "socket": "socket"}
    with pytest.raises(NodeFsError, match="/etc/containerd/config.toml is a %s, not a regular file" % names[kind]):
        node.read_bytes("/etc/containerd/config.toml")
    with pytest.raises(NodeFsError, match="not a regular file"):
        node.read_text("/etc/containerd/config.toml")


def test_a_file_that_reports_size_0_is_still_read_only_up_to_the_limit(node, tmp_path, monkeypatch):
    """/proc files report st_size 0: the limit is counted on what is read, not on the size stat gives."""
    (tmp_path / "big").write_bytes(b"x" * 100)
    real_fstat = os.fstat
    monkeypatch.setattr(node_fs.os, "fstat", lambda fd: os.stat_result((*real_fstat(fd)[:6], 0, *real_fstat(fd)[7:])))
    with pytest.raises(NodeFsError, match="/big is larger than 99 bytes"):
        node.read_bytes("/big", max_size=99)
    assert node.read_bytes("/big", max_size=100) == b"x" * 100
    monkeypatch.setattr(node_fs, "MAX_READ_SIZE", 10)
    with pytest.raises(NodeFsError, match="larger than 10 bytes"):
        node.read_bytes("/big")


def test_text_diff_names_absent_sides():
    assert node_fs.text_diff("/a", None, "/a", "x") == {
        "before": "", "after": "x", "before_header": "/a (absent)", "after_header": "/a"}


HOLDER = textwrap.dedent("""
    import sys, time
    sys.path[:0] = %r
    from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeRoot
    with NodeRoot(sys.argv[1]).locked():
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
""")


def _holder(root, seconds):
    code = HOLDER % (sys.path,)
    proc = subprocess.Popen([sys.executable, "-c", code, root, str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_run_waits_then_fails_naming_the_holder(node, tmp_path):
    holder = _holder(str(tmp_path), 30)
    try:
        started = time.monotonic()
        with pytest.raises(NodeFsError) as caught:
            with node.locked(timeout=0.5):
                pass
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert 0.5 <= waited < 5
    message = str(caught.value)
    assert "another run is changing this node" in message
    assert "pid %d (" % holder.pid in message and "-c" in message
    assert os.listdir(tmp_path) == []  # the lock leaves nothing on the node


def test_a_killed_holder_does_not_block_the_next_run(node, tmp_path):
    holder = _holder(str(tmp_path), 30)
    holder.kill()  # SIGKILL: no cleanup runs
    holder.wait()
    with node.locked(timeout=1):
        with node.locked():  # re-entrant
            node.make_dirs("/etc")
    assert os.listdir(tmp_path) == ["etc"]


def test_a_waiting_run_gets_the_lock_when_the_holder_ends(node, tmp_path):
    holder = _holder(str(tmp_path), 0.5)
    with node.locked(timeout=20):
        assert holder.poll() is not None or holder.wait(5) == 0


def test_lock_holders_is_empty_without_a_lock(tmp_path):
    assert node_fs.lock_holders(str(tmp_path)) == []
    assert node_fs.lock_holders(str(tmp_path / "missing")) == []


def _entries_of(path):
    found = {}
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        found[name] = ("symlink", os.readlink(full)) if os.path.islink(full) else (
            "file", open(full, "rb").read(), stat.S_IMODE(os.stat(full).st_mode))
    return found


def test_swap_in_adds_replaces_and_removes_as_one_change(node, tmp_path):
    (tmp_path / "opt").mkdir()
    (tmp_path / "opt/keep").write_bytes(b"keep")
    (tmp_path / "opt/old").write_bytes(b"old")
    (tmp_path / "opt/bin").write_bytes(b"v1")
    os.symlink("bin", tmp_path / "opt/link")
    node.swap_in("/opt", {"bin": {"type": "file", "data": b"v2", "mode": 0o755},
                          "new": {"type": "file", "data": b"n", "mode": 0o644},
                          "link": {"type": "symlink", "target": "new"},
                          "old": None, "never-there": None})
    assert _entries_of(tmp_path / "opt") == {
        "bin": ("file", b"v2", 0o755), "keep": ("file", b"keep", 0o644), "link": ("symlink", "new"),
        "new": ("file", b"n", 0o644)}


def test_swap_in_puts_back_what_it_replaced_when_a_rename_fails(node, tmp_path, monkeypatch):
    (tmp_path / "opt").mkdir()
    (tmp_path / "opt/a").write_bytes(b"a1")
    (tmp_path / "opt/b").write_bytes(b"b1")
    os.symlink("a", tmp_path / "opt/l")
    before = _entries_of(tmp_path / "opt")
    real_rename = os.rename
    calls = []

    def rename(src, dst, *args, **kwargs):
        if "/new/" in str(src):
            calls.append(dst)
            if len(calls) == 3:
                raise OSError(28, "No space left on device")
        return real_rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(NodeFsError, match="cannot replace /opt/c: No space left on device; /opt was left") as caught:
        node.swap_in("/opt", {"a": {"type": "file", "data": b"a2", "mode": 0o644}, "l": {"type": "symlink", "target": "b"},
                              "b": None, "c": {"type": "file", "data": b"c", "mode": 0o644}})
    monkeypatch.setattr(os, "rename", real_rename)
    assert caught.value.path == "/opt/c"
    assert _entries_of(tmp_path / "opt") == before  # the staging directory is gone too


def test_swap_in_into_a_missing_directory_changes_nothing(node):
    with pytest.raises(NodeFsError, match="cannot write in /opt: /opt does not exist; nothing was changed"):
        node.swap_in("/opt", {"a": {"type": "file", "data": b"", "mode": 0o644}})


def test_stale_stages_of_killed_runs_are_removed(node, tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "opt").mkdir()
    stale = tmp_path / "opt" / ("%s%d.00ff" % (node_fs.STAGE_PREFIX, dead.pid))
    live = tmp_path / "opt" / ("%s%d.0a0b" % (node_fs.STAGE_PREFIX, os.getppid()))
    (stale / "new").mkdir(parents=True)
    (stale / "new/x").write_bytes(b"half")
    live.mkdir()
    (tmp_path / "opt" / (node_fs.STAGE_PREFIX + "file")).write_bytes(b"not a directory")
    (tmp_path / "opt/.legacy-stage-x").mkdir()
    assert node.remove_stale_stages("/opt") == ["/opt/" + stale.name]
    assert node.remove_stale_stages("/opt", prefix=".legacy-stage-") == ["/opt/.legacy-stage-x"]
    assert sorted(os.listdir(tmp_path / "opt")) == sorted([live.name, node_fs.STAGE_PREFIX + "file"])
    with pytest.raises(NodeFsError, match="is a file, not a directory; it was left as it was"):
        node.remove_tree("/opt/" + node_fs.STAGE_PREFIX + "file")
    assert node.remove_tree("/opt/missing") is False


OPERATIONS = {
    "write": lambda n: n.write("/etc/containerd/config.toml", b"version = 2\n"),
    "symlink": lambda n: n.symlink("/etc/containerd/link", "/bin/sh"),
    "mknod": lambda n: n.mknod("/etc/containerd/nvidiactl", "char", 195, 255, 0o666),
    "remove": lambda n: n.remove("/etc/containerd/config.toml"),
    "chmod": lambda n: n.chmod("/etc/containerd/config.toml", 0o777),
    "make_dirs": lambda n: n.make_dirs("/etc/containerd/new/deeper"),
    "remove_empty_dirs": lambda n: n.remove_empty_dirs(["/etc/containerd/empty"]),
    "remove_tree": lambda n: n.remove_tree("/etc/containerd/tree"),
    "swap_in": lambda n: n.swap_in("/etc/containerd", {"config.toml": {"type": "file", "data": b"x", "mode": 0o644}}),
    "remove_stale_temps": lambda n: n.remove_stale_temps("/etc/containerd"),
    "read_bytes": lambda n: n.read_bytes("/etc/containerd/config.toml"),
    "observe": lambda n: n.observe("/etc/containerd/config.toml", digest=True),
    "list_dir": lambda n: n.list_dir("/etc/containerd"),
}
ESCAPES = {
    "absolute link": str,
    "relative link out": lambda outside: "../../outside",
}


def _outside_state(outside):
    return sorted((str(p.relative_to(outside)), p.is_dir(), p.read_bytes() if p.is_file() else None,
                   stat.S_IMODE(p.lstat().st_mode)) for p in outside.rglob("*"))


@pytest.mark.parametrize("escape", sorted(ESCAPES))
@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_no_operation_reaches_outside_host_root_through_a_link(tmp_path, operation, escape):
    """/etc/containerd on the node is a link out of it (planted, or swapped in since the read):
    whatever the operation, nothing outside host_root is read, changed or removed."""
    root = tmp_path / "node"
    outside = tmp_path / "outside"
    for where in (outside, root / "etc" / "inside"):
        (where / "empty").mkdir(parents=True)
        (where / "tree").mkdir()
        (where / "tree" / "file").write_text("secret\n")
        (where / "config.toml").write_text("secret\n")
        os.chmod(where / "config.toml", 0o600)
        (where / ".config.toml.gpn-tmp.1.ab").write_text("a temp name of a dead run\n")
    os.symlink(ESCAPES[escape](outside), root / "etc" / "containerd")
    before = _outside_state(outside)
    node = NodeRoot(str(root))
    try:
        found = OPERATIONS[operation](node)
    except NodeFsError:
        found = None
    assert _outside_state(outside) == before
    # Read, the link is resolved inside the node, where it leads nowhere: nothing of outside comes back.
    assert found in (None, [], False, True) or "secret" not in repr(found), found


def _acl(*entries):
    """A POSIX ACL as the kernel stores it in system.posix_acl_access (version 2)."""
    import struct
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, uid) for tag, perm, uid in entries)


UNDEFINED_ID = 0xFFFFFFFF
# user::rw- user:1000:r-- group::r-- mask::r-- other::---
ACL_1000 = _acl((0x01, 6, UNDEFINED_ID), (0x02, 4, 1000), (0x04, 4, UNDEFINED_ID), (0x10, 4, UNDEFINED_ID),
                (0x20, 0, UNDEFINED_ID))


@pytest.mark.parametrize("attributes", [
    {"user.backup-policy": b"keep"},
    {"system.posix_acl_access": ACL_1000},
    {"user.a": b"1", "user.b": b"\x00\xff", "system.posix_acl_access": ACL_1000},
], ids=["a user attribute", "an ACL", "both"])
def test_extended_attributes_and_acls_survive_a_rewrite(node, tmp_path, attributes):
    target = tmp_path / "etc" / "containerd" / "config.toml"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"version = 2\n")
    os.chmod(target, 0o640)
    for name, value in attributes.items():
        os.setxattr(target, name, value)
    node.write("/etc/containerd/config.toml", b"version = 2\n# edited\n")
    assert target.read_bytes() == b"version = 2\n# edited\n"
    assert {name: os.getxattr(target, name) for name in os.listxattr(target)} == attributes
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_an_attribute_that_cannot_be_kept_fails_the_write_and_keeps_the_file(node, tmp_path, monkeypatch):
    target = tmp_path / "config.toml"
    target.write_bytes(b"old\n")
    os.setxattr(target, "user.keep", b"1")

    def refuse(*args, **kwargs):
        raise OSError(95, "Operation not supported")

    monkeypatch.setattr(node_fs.os, "setxattr", refuse)
    with pytest.raises(NodeFsError, match=re.escape("cannot keep the extended attribute user.keep of /config.toml: "
                                                    "Operation not supported; the file was left as it was")):
        node.write("/config.toml", b"new\n")
    assert target.read_bytes() == b"old\n" and os.listdir(tmp_path) == ["config.toml"]
