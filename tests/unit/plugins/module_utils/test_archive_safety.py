from __future__ import annotations

import tarfile

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import archive_safety as sa


@pytest.mark.parametrize("name, kind, mode, link, clean", [
    ("./usr/bin/nvidia-ctk", "file", 0o755, None, "usr/bin/nvidia-ctk"),
    ("usr//bin/./x", "file", 0o644, None, "usr/bin/x"),
    ("./", "directory", 0o755, None, ""),
    ("usr/lib/libx.so.1", "symlink", 0o777, "libx.so.1.2", "usr/lib/libx.so.1"),
    ("usr/bin/x", "symlink", 0o777, "../lib/y", "usr/bin/x"),
    ("usr/bin/x", "hardlink", 0o755, "usr/bin/y", "usr/bin/x"),
    ("usr/bin/sticky", "directory", 0o1777, None, "usr/bin/sticky"),
])
def test_accepted(name, kind, mode, link, clean):
    assert sa.check_member(name, kind, mode, link) == clean


@pytest.mark.parametrize("name, kind, mode, link, message", [
    ("../x", "file", 0o644, None, "'..'"),
    ("usr/../../x", "file", 0o644, None, "'..'"),
    ("/etc/passwd", "file", 0o644, None, "absolute"),
    ("", "file", 0o644, None, "empty"),
    ("a\0b", "file", 0o644, None, "NUL"),
    ("usr/bin/x", "symlink", 0o777, "../../../etc", "outside"),
    ("usr/bin/x", "symlink", 0o777, "/etc/passwd", "outside"),
    ("x", "symlink", 0o777, "..", "outside"),
    ("x", "symlink", 0o777, None, "outside"),
    ("usr/bin/x", "hardlink", 0o755, "../y", "'..'"),
    ("usr/bin/x", "hardlink", 0o755, "/etc/shadow", "absolute"),
    ("dev/nvidiactl", "char", 0o666, None, "device file"),
    ("dev/sda", "block", 0o660, None, "device file"),
    ("run/fifo", "fifo", 0o644, None, "special file"),
    ("usr/bin/su", "file", 0o4755, None, "setuid"),
    ("usr/bin/sg", "file", 0o2755, None, "setgid"),
])
def test_refused(name, kind, mode, link, message):
    with pytest.raises(sa.UnsafeMember, match=message):
        sa.check_member(name, kind, mode, link)


@pytest.mark.parametrize("kind", ["weird", "dir", "link"])
def test_unknown_kind(kind):
    # One vocabulary: node_fs's file types, and "hardlink".
    with pytest.raises(ValueError, match="unknown member kind"):
        sa.check_member("x", kind)


@pytest.mark.parametrize("checksum, expected", [
    ("sha256:" + "A" * 64, ("sha256", "a" * 64)),
    ("SHA512: " + "0" * 128, ("sha512", "0" * 128)),
    ("md5:" + "f" * 32, ("md5", "f" * 32)),
])
def test_parse_checksum(checksum, expected):
    assert sa.parse_checksum(checksum) == expected


@pytest.mark.parametrize("checksum", [None, "", "abc", "sha256", "crc32:00", "sha256:abc", "sha256:" + "g" * 64])
def test_parse_checksum_refused(checksum):
    with pytest.raises(ValueError):
        sa.parse_checksum(checksum)


@pytest.mark.parametrize("kind_type, expected", [
    (tarfile.SYMTYPE, "symlink"), (tarfile.LNKTYPE, "hardlink"), (tarfile.DIRTYPE, "directory"), (tarfile.REGTYPE, "file"),
    (tarfile.CHRTYPE, "char"), (tarfile.BLKTYPE, "block"), (tarfile.FIFOTYPE, "fifo"), (tarfile.CONTTYPE, "file"),
])
def test_tar_member_kind(kind_type, expected):
    info = tarfile.TarInfo("x")
    info.type = kind_type
    assert sa.tar_member_kind(info) == expected
