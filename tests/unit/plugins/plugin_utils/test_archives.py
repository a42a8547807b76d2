from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile

import pytest
import toolkit_artifacts as ta

from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import archives


def cpio_entry(name, mode, data=b"", ino=1, nlink=1):
    encoded = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(encoded), 0]
    header = b"070701" + b"".join(b"%08X" % f for f in fields)
    out = header + encoded
    out += b"\0" * (-len(out) % 4)
    out += data + b"\0" * (-len(data) % 4)
    return out


def cpio(*entries):
    return b"".join(entries) + cpio_entry("TRAILER!!!", 0)


def by_name(members):
    return {m.name: m for m in members}


def test_read_cpio_files_links_and_hardlinks():
    stream = cpio(
        cpio_entry("./usr", 0o040755),
        cpio_entry("./usr/bin/a", 0o100755, b"#!/bin/sh\n", ino=7, nlink=2),
        cpio_entry("./usr/bin/lib.so.1", 0o120777, b"lib.so.1.2"),
        cpio_entry("./usr/bin/h1", 0o100755, b"", ino=9, nlink=2),
        cpio_entry("./usr/bin/h2", 0o100755, b"shared", ino=9, nlink=2),
    )
    members = by_name(archives.read_cpio(stream, "test.rpm"))
    assert members["usr/bin/a"].data == b"#!/bin/sh\n" and members["usr/bin/a"].mode == 0o755
    assert members["usr/bin/lib.so.1"].kind == "symlink" and members["usr/bin/lib.so.1"].target == "lib.so.1.2"
    assert members["usr/bin/h1"].data == b"shared" == members["usr/bin/h2"].data
    assert members["usr"].kind == "dir"


def test_read_cpio_dangling_hardlink_is_empty():
    members = by_name(archives.read_cpio(cpio(cpio_entry("x", 0o100644, b"", ino=3, nlink=2)), "t"))
    assert members["x"].data == b""


@pytest.mark.parametrize("entry, message", [
    (cpio_entry("../x", 0o100644, b"x"), "'..'"),
    (cpio_entry("/etc/x", 0o100644, b"x"), "absolute"),
    (cpio_entry("dev/nvidiactl", 0o020666), "device file"),
    (cpio_entry("bin/su", 0o104755, b"x"), "setuid"),
    (cpio_entry("bin/l", 0o120777, b"/etc/passwd"), "outside"),
])
def test_read_cpio_refuses(entry, message):
    with pytest.raises(archives.ArchiveError, match=message):
        archives.read_cpio(cpio(entry), "t.rpm")


@pytest.mark.parametrize("stream, message", [
    (b"garbage", "bad cpio header"),
    (b"070701" + b"Z" * 104, "bad cpio header"),
    (cpio_entry("x", 0o100644, b"abcdef")[:-8], "truncated"),
])
def test_read_cpio_damaged(stream, message):
    with pytest.raises(archives.ArchiveError, match=message):
        archives.read_cpio(stream, "t")


def ar(*members):
    out = archives.AR_MAGIC
    for name, data in members:
        out += b"%-16s%-12s%-6s%-6s%-8s%-10d`\n" % (name.encode(), b"0", b"0", b"0", b"100644", len(data))
        out += data + (b"\n" if len(data) % 2 else b"")
    return out


def test_read_ar_and_errors():
    assert archives.read_ar(ar(("a/", b"odd"), ("b", b"even")), "t") == {"a": b"odd", "b": b"even"}
    with pytest.raises(archives.ArchiveError, match="not an ar archive"):
        archives.read_ar(b"nope", "t")
    with pytest.raises(archives.ArchiveError, match="damaged ar header"):
        archives.read_ar(archives.AR_MAGIC + b"x" * 30, "t")
    with pytest.raises(archives.ArchiveError, match="truncated"):
        archives.read_ar(ar(("a", b"abcd"))[:-2], "t")
    bad_size = ar(("a", b"ab")).replace(b"2         `", b"zz        `")
    with pytest.raises(archives.ArchiveError, match="bad ar member size"):
        archives.read_ar(bad_size, "t")


def test_read_deb_errors():
    with pytest.raises(archives.ArchiveError, match="not a Debian package"):
        archives.read_deb(ar(("x", b"1")), "t.deb")
    with pytest.raises(archives.ArchiveError, match=r"no data\.tar"):
        archives.read_deb(ar(("debian-binary", b"2.0\n")), "t.deb")


def test_real_debs(tmp_path):
    tree = ta.build_tree(tmp_path / "tree")
    debs = ta.build_debs(tree, tmp_path / "debs")
    merged = by_name(archives.merge([archives.read_source(str(d)) for d in debs]))
    assert merged["usr/bin/nvidia-ctk"].data == (tree / "usr/bin/nvidia-ctk").read_bytes()
    link = merged["usr/lib/x86_64-linux-gnu/libnvidia-container.so.1"]
    assert (link.kind, link.target) == ("symlink", "libnvidia-container.so.%s" % ta.VERSION)


@pytest.mark.skipif(not shutil.which("zstd"), reason="zstd not installed")
def test_zstd_deb(tmp_path):
    root = tmp_path / "pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text("Package: z\nVersion: 1\nArchitecture: all\nMaintainer: t <t@e>\n"
                                             "Description: z\n")
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "nvidia-ctk").write_text("x")
    subprocess.run(["dpkg-deb", "-Zzstd", "--build", str(root), str(tmp_path / "z.deb")], check=True,
                   capture_output=True)
    assert by_name(archives.read_source(str(tmp_path / "z.deb")))["usr/bin/nvidia-ctk"].data == b"x"


def test_zstd_without_tool(monkeypatch):
    monkeypatch.setattr(archives.shutil, "which", lambda name: None)
    with pytest.raises(archives.ArchiveError, match="install the zstd command"):
        archives.read_deb(ar(("debian-binary", b"2.0\n"), ("data.tar.zst", b"x")), "t.deb")


def test_real_rpm(tmp_path):
    tree = ta.build_tree(tmp_path / "tree", lib_dir=ta.LIB_DIR_RPM)
    rpm = ta.build_rpm(tree, tmp_path / "rpm")
    if rpm is None:
        pytest.skip("rpmbuild not installed")
    members = by_name(archives.read_source(str(rpm)))
    assert members["usr/bin/nvidia-container-cli"].data == (tree / "usr/bin/nvidia-container-cli").read_bytes()
    assert members["usr/lib64/libnvidia-container-go.so.1"].kind == "symlink"


def test_rpm_without_rpm2cpio(monkeypatch, tmp_path):
    monkeypatch.setattr(archives.shutil, "which", lambda name: None)
    with pytest.raises(archives.ArchiveError, match="needs rpm2cpio"):
        archives.read_rpm(str(tmp_path / "x.rpm"))


def test_broken_rpm(tmp_path):
    if not shutil.which("rpm2cpio"):
        pytest.skip("rpm2cpio not installed")
    path = tmp_path / "broken.rpm"
    path.write_bytes(archives.RPM_MAGIC + b"\0" * 100)
    with pytest.raises(archives.ArchiveError, match="rpm2cpio could not read"):
        archives.read_source(str(path))


def test_directory_and_tar_round_trip(tmp_path):
    tree = ta.build_tree(tmp_path / "tree")
    os.link(tree / "usr/bin/nvidia-ctk", tree / "usr/bin/hard")
    tarball = ta.build_tarball(tree, tmp_path / "t.tar.bz2", compression="bz2")
    from_dir = by_name(archives.read_source(str(tree)))
    from_tar = by_name(archives.read_source(str(tarball)))
    assert from_tar["usr/bin/hard"].data == from_dir["usr/bin/nvidia-ctk"].data
    payload = tmp_path / "payload.tar"
    archives.write_payload(archives.merge([from_dir.values()]), str(payload))
    with tarfile.open(payload) as tar:
        names = {m.name: m for m in tar.getmembers()}
    assert names["usr/bin/nvidia-ctk"].mode == 0o755 and names["usr/bin/nvidia-ctk"].uid == 0
    assert names["usr/lib/x86_64-linux-gnu/libnvidia-container.so.1"].issym()
    assert "usr/bin" not in names


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink_out", "device", "setuid"])
def test_tar_refuses(tmp_path, kind):
    tarball = ta.build_tarball(ta.build_tree(tmp_path / "tree"), tmp_path / "evil.tar", compression="",
                               extra=[ta.evil_member(kind)])
    with pytest.raises(archives.ArchiveError, match="refusing"):
        archives.read_source(str(tarball))


def test_tar_hardlink_to_unknown_and_fifo(tmp_path):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo("a")
        info.type = tarfile.LNKTYPE
        info.linkname = "missing"
        tar.addfile(info)
    data.seek(0)
    with pytest.raises(archives.ArchiveError, match="not an earlier file"):
        archives.read_tar(data, "t")
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo("fifo")
        info.type = tarfile.FIFOTYPE
        tar.addfile(info)
    data.seek(0)
    with pytest.raises(archives.ArchiveError, match="special file"):
        archives.read_tar(data, "t")


def test_not_an_archive(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"just bytes, not a tarball at all" * 20)
    with pytest.raises(archives.ArchiveError, match="not a readable tar archive"):
        archives.read_source(str(path))
