from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import subprocess
import tarfile

import pytest
import toolkit_artifacts as ta

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_source as ts
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.local_command import run_tool


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


def test_read_cpio_files_links_and_hardlinks():
    stream = cpio(
        cpio_entry("./usr", 0o040755),
        cpio_entry("./usr/bin/a", 0o100755, b"#!/bin/sh\n", ino=7, nlink=2),
        cpio_entry("./usr/bin/lib.so.1", 0o120777, b"lib.so.1.2"),
        cpio_entry("./usr/bin/h1", 0o100755, b"", ino=9, nlink=2),
        cpio_entry("./usr/bin/h2", 0o100755, b"shared", ino=9, nlink=2),
    )
    members = (ts.read_cpio(stream, "test.rpm"))
    assert members["usr/bin/a"] == {"type": "file", "mode": 0o755, "data": b"#!/bin/sh\n"}
    assert members["usr/bin/lib.so.1"] == {"type": "symlink", "target": "lib.so.1.2"}
    assert members["usr/bin/h1"]["data"] == b"shared" == members["usr/bin/h2"]["data"]
    assert members["usr"] == {"type": "directory", "mode": 0o755}


def test_read_cpio_dangling_hardlink_is_empty():
    members = (ts.read_cpio(cpio(cpio_entry("x", 0o100644, b"", ino=3, nlink=2)), "t"))
    assert members["x"] == {"type": "file", "mode": 0o644, "data": b""}


@pytest.mark.parametrize("entry, message", [
    (cpio_entry("../x", 0o100644, b"x"), "'..'"),
    (cpio_entry("/etc/x", 0o100644, b"x"), "absolute"),
    (cpio_entry("dev/nvidiactl", 0o020666), "device file"),
    (cpio_entry("bin/su", 0o104755, b"x"), "setuid"),
    (cpio_entry("bin/l", 0o120777, b"/etc/passwd"), "outside"),
])
def test_read_cpio_refuses(entry, message):
    with pytest.raises(ts.SourceError, match=message):
        ts.read_cpio(cpio(entry), "t.rpm")


@pytest.mark.parametrize("stream, message", [
    (b"garbage", "bad cpio header"),
    (b"070701" + b"Z" * 104, "bad cpio header"),
    (cpio_entry("x", 0o100644, b"abcdef")[:-8], "truncated"),
])
def test_read_cpio_damaged(stream, message):
    with pytest.raises(ts.SourceError, match=message):
        ts.read_cpio(stream, "t")


def ar(*members):
    out = ts.AR_MAGIC
    for name, data in members:
        out += b"%-16s%-12s%-6s%-6s%-8s%-10d`\n" % (name.encode(), b"0", b"0", b"0", b"100644", len(data))
        out += data + (b"\n" if len(data) % 2 else b"")
    return out


def test_read_ar_and_errors():
    assert ts.read_ar(ar(("a/", b"odd"), ("b", b"even")), "t") == {"a": b"odd", "b": b"even"}
    with pytest.raises(ts.SourceError, match="not an ar archive"):
        ts.read_ar(b"nope", "t")
    with pytest.raises(ts.SourceError, match="damaged ar header"):
        ts.read_ar(ts.AR_MAGIC + b"x" * 30, "t")
    with pytest.raises(ts.SourceError, match="truncated"):
        ts.read_ar(ar(("a", b"abcd"))[:-2], "t")
    bad_size = ar(("a", b"ab")).replace(b"2         `", b"zz        `")
    with pytest.raises(ts.SourceError, match="bad ar member size"):
        ts.read_ar(bad_size, "t")


def test_read_deb_errors():
    with pytest.raises(ts.SourceError, match="not a Debian package"):
        ts.read_deb(ar(("x", b"1")), "t.deb", run_tool)
    with pytest.raises(ts.SourceError, match=r"no data\.tar"):
        ts.read_deb(ar(("debian-binary", b"2.0\n")), "t.deb", run_tool)


def test_real_debs(tmp_path):
    tree = ta.build_tree(tmp_path / "tree")
    debs = ta.build_debs(tree, tmp_path / "debs")
    merged = (ts.merge([ts.read_source(str(d), run_tool) for d in debs]))
    assert ts.read_member(merged["usr/bin/nvidia-ctk"]) == (tree / "usr/bin/nvidia-ctk").read_bytes()
    link = merged["usr/lib/x86_64-linux-gnu/libnvidia-container.so.1"]
    assert link == {"type": "symlink", "target": "libnvidia-container.so.%s" % ta.VERSION}


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
    assert (ts.read_source(str(tmp_path / "z.deb"), run_tool))["usr/bin/nvidia-ctk"]["data"] == b"x"


def test_zstd_without_tool(monkeypatch):
    asked = []
    with pytest.raises(ts.SourceError, match="install the zstd command"):
        ts.read_deb(ar(("debian-binary", b"2.0\n"), ("data.tar.zst", b"x")), "t.deb",
                    lambda name, argv, data: asked.append((name, argv, data)))
    assert asked == [("zstd", ["-dc"], b"x")]


def test_a_failing_tool_is_named_with_its_error():
    with pytest.raises(ts.SourceError, match=r"zstd could not read t\.deb: bad magic"):
        ts.read_deb(ar(("debian-binary", b"2.0\n"), ("data.tar.zst", b"x")), "t.deb",
                    lambda name, argv, data: (1, b"", b"bad magic\n"))


def test_the_controller_runner_finds_commands_on_path(monkeypatch):
    assert run_tool("cat", [], b"through stdin") == (0, b"through stdin", b"")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert run_tool("cat", []) is None


def test_real_rpm(tmp_path):
    tree = ta.build_tree(tmp_path / "tree", lib_dir=ta.LIB_DIR_RPM)
    rpm = ta.build_rpm(tree, tmp_path / "rpm")
    if rpm is None:
        pytest.skip("rpmbuild not installed")
    members = (ts.read_source(str(rpm), run_tool))
    assert members["usr/bin/nvidia-container-cli"]["data"] == (tree / "usr/bin/nvidia-container-cli").read_bytes()
    assert members["usr/lib64/libnvidia-container-go.so.1"]["type"] == "symlink"


def test_rpm_without_rpm2cpio(monkeypatch, tmp_path):
    with pytest.raises(ts.SourceError, match="install the rpm2cpio command"):
        ts.read_rpm(str(tmp_path / "x.rpm"), lambda name, argv, data: None)


def test_broken_rpm(tmp_path):
    if not shutil.which("rpm2cpio"):
        pytest.skip("rpm2cpio not installed")
    path = tmp_path / "broken.rpm"
    path.write_bytes(ts.RPM_MAGIC + b"\0" * 100)
    with pytest.raises(ts.SourceError, match="rpm2cpio could not read"):
        ts.read_source(str(path), run_tool)


def test_directory_and_tar_round_trip(tmp_path):
    tree = ta.build_tree(tmp_path / "tree")
    os.link(tree / "usr/bin/nvidia-ctk", tree / "usr/bin/hard")
    tarball = ta.build_tarball(tree, tmp_path / "t.tar.bz2", compression="bz2")
    from_dir = (ts.read_source(str(tree), run_tool))
    from_tar = (ts.read_source(str(tarball), run_tool))
    assert from_tar["usr/bin/hard"]["data"] == ts.read_member(from_dir["usr/bin/nvidia-ctk"])
    payload = ts.write_payload(ts.merge([from_dir]))
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(payload)), mode="r:gz") as tar:
        names = {m.name: m for m in tar.getmembers()}
    assert names["usr/bin/nvidia-ctk"].mode == 0o755 and names["usr/bin/nvidia-ctk"].uid == 0
    assert names["usr/lib/x86_64-linux-gnu/libnvidia-container.so.1"].issym()
    assert "usr/bin" not in names
    back = ts.read_payload(payload)
    assert sorted(back) == sorted(n for n, e in from_dir.items() if e["type"] != "directory")
    assert back["usr/bin/hard"]["data"] == from_tar["usr/bin/hard"]["data"]
    # The same tree gives the same bytes (no timestamps in the gzip header).
    assert ts.write_payload(ts.merge([from_dir])) == payload


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink_out", "device", "setuid"])
def test_tar_refuses(tmp_path, kind):
    tarball = ta.build_tarball(ta.build_tree(tmp_path / "tree"), tmp_path / "evil.tar", compression="",
                               extra=[ta.evil_member(kind)])
    with pytest.raises(ts.SourceError, match="refusing"):
        ts.read_source(str(tarball), run_tool)


def test_tar_hardlink_to_unknown_and_fifo(tmp_path):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo("a")
        info.type = tarfile.LNKTYPE
        info.linkname = "missing"
        tar.addfile(info)
    data.seek(0)
    with pytest.raises(ts.SourceError, match="not an earlier file"):
        ts.read_tar(data, "t")
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo("fifo")
        info.type = tarfile.FIFOTYPE
        tar.addfile(info)
    data.seek(0)
    with pytest.raises(ts.SourceError, match="special file"):
        ts.read_tar(data, "t")


def test_not_an_archive(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"just bytes, not a tarball at all" * 20)
    with pytest.raises(ts.SourceError, match="not a directory, a package or a readable tarball"):
        ts.read_source(str(path), run_tool)


def _tar(*infos):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for info, body in infos:
            tar.addfile(info, io.BytesIO(body) if body is not None else None)
    data.seek(0)
    return data


def _info(name, kind=tarfile.REGTYPE, size=0, mode=0o644, linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode, info.linkname = kind, size, mode, linkname
    return info


def test_one_hard_link_rule_an_earlier_file_only(tmp_path):
    tree = ts.read_tar(_tar((_info("./bin/a", size=2, mode=0o755), b"ab"),
                            (_info("bin/b", tarfile.LNKTYPE, linkname="./bin/a"), None)), "t.tar")
    assert tree["bin/b"] == tree["bin/a"] == {"type": "file", "mode": 0o755, "data": b"ab"}
    to_link = _tar((_info("l", tarfile.SYMTYPE, linkname="x"), None), (_info("h", tarfile.LNKTYPE, linkname="l"), None))
    with pytest.raises(ts.SourceError, match=r"refusing archive t\.tar: hard link h to l, which is not an earlier file"):
        ts.read_tar(to_link, "t.tar")
    later = _tar((_info("h", tarfile.LNKTYPE, linkname="f"), None), (_info("f", size=1), b"f"))
    with pytest.raises(ts.SourceError, match="not an earlier file; nothing was written"):
        ts.read_tar(later, "t.tar")
    # A directory's hard links are its files' other names: the same bytes, read as they are.
    (tmp_path / "d").mkdir()
    (tmp_path / "d/a").write_bytes(b"ab")
    os.link(tmp_path / "d/a", tmp_path / "d/b")
    tree = ts.read_directory(str(tmp_path / "d"), "src")
    assert tree["b"] == {"type": "file", "mode": 0o644, "path": str(tmp_path / "d/b")}
    assert ts.read_member(tree["a"]) == ts.read_member(tree["b"]) == b"ab"


def test_refusals_name_the_src_as_given(tmp_path):
    (tmp_path / "d").mkdir()
    os.symlink("/etc/shadow", tmp_path / "d/evil")
    with pytest.raises(ts.SourceError, match=r"^refusing directory files/toolkit: symbolic link evil -> /etc/shadow "
                                             r"points outside the archive; nothing was written$"):
        ts.read_source(str(tmp_path / "d"), run_tool, "files/toolkit")
    with pytest.raises(ts.SourceError, match=r"cannot read src missing\.tar: No such file"):
        ts.read_source(str(tmp_path / "missing.tar"), run_tool, "missing.tar")


def test_checksums_pair_and_verify(tmp_path):
    path = tmp_path / "t.tar"
    path.write_bytes(b"payload")
    digest = hashlib.sha256(b"payload").hexdigest()
    pairs = ts.pair_checksums(["a", "b"], ["sha256:" + digest, "SHA256:" + "0" * 64])
    assert pairs == [("a", ("sha256", digest)), ("b", ("sha256", "0" * 64))]
    assert ts.pair_checksums(["a"], None) == [("a", None)]
    with pytest.raises(ts.SourceError, match="checksum has 1 items but src has 2: give one per src item, in order"):
        ts.pair_checksums(["a", "b"], ["sha256:" + digest])
    with pytest.raises(ts.SourceError, match="checksum of src a: checksum must look like"):
        ts.pair_checksums(["a"], ["crc:1"])
    ts.verify_checksum(str(path), "a", ("sha256", digest))
    ts.verify_checksum(str(tmp_path), "dir", None)
    with pytest.raises(ts.SourceError, match="^checksum mismatch for b: expected sha256:0{64}, got sha256:%s; "
                                             "nothing was written$" % digest):
        ts.verify_checksum(str(path), "b", ("sha256", "0" * 64))
    with pytest.raises(ts.SourceError, match="checksum cannot be checked for the directory dir"):
        ts.verify_checksum(str(tmp_path), "dir", ("sha256", digest))
