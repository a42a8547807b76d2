# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side: read directories, tarballs, ``.deb`` and ``.rpm`` packages into members.

Every member passes :mod:`archive_safety` before it is kept; nothing is extracted to disk.
The members are then written into one plain tarball, the payload the node receives.
``.deb``: an ``ar`` archive read here, holding ``data.tar.{gz,xz,bz2,zst}``. ``.rpm``: the
payload comes from ``rpm2cpio`` and its ``newc`` cpio stream is read here.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import tarfile

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import archive_safety

AR_MAGIC = b"!<arch>\n"
RPM_MAGIC = b"\xed\xab\xee\xdb"
CPIO_MAGICS = (b"070701", b"070702")
CPIO_TRAILER = "TRAILER!!!"


class ArchiveError(Exception):
    pass


class Member:
    """``kind``: ``file`` (with ``data``), ``symlink`` (with ``target``) or ``dir``."""

    __slots__ = ("data", "kind", "mode", "name", "target")

    def __init__(self, name, kind, mode, data=None, target=None):
        self.name = name
        self.kind = kind
        self.mode = mode
        self.data = data
        self.target = target


def _kind_of_mode(mode):
    for test, kind in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "symlink"),
                       (stat.S_ISCHR, "char"), (stat.S_ISBLK, "block"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return kind
    return "other"


def _checked(source, name, kind, mode, target=None):
    try:
        return archive_safety.check_member(name, kind, mode, target)
    except archive_safety.UnsafeMember as exc:
        raise ArchiveError("refusing %s: %s" % (source, exc)) from None


# --- readers ---------------------------------------------------------------------------

def read_directory(top):
    members = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            kind = _kind_of_mode(st.st_mode)
            target = os.readlink(full) if kind == "symlink" else None
            clean = _checked(top, os.path.relpath(full, top), kind, st.st_mode, target)
            data = None
            if kind == "file":
                with open(full, "rb") as handle:
                    data = handle.read()
            members.append(Member(clean, kind, stat.S_IMODE(st.st_mode), data, target))
    return members


def read_tar(fileobj, source):
    try:
        tar = tarfile.open(fileobj=fileobj, mode="r:*")
    except tarfile.TarError as exc:
        raise ArchiveError("%s is not a readable tar archive: %s" % (source, exc)) from None
    members = []
    files = {}
    with tar:
        for info in tar.getmembers():
            kind = archive_safety.tar_member_kind(info)
            clean = _checked(source, info.name, kind, info.mode, info.linkname or None)
            if not clean:
                continue
            if kind == "hardlink":
                target = archive_safety.normalize_name(info.linkname)
                if target not in files:
                    raise ArchiveError("refusing %s: hard link %s to %s, which is not an earlier file"
                                       % (source, info.name, info.linkname))
                member = Member(clean, "file", files[target].mode, files[target].data)
            elif kind == "file":
                handle = tar.extractfile(info)
                member = Member(clean, "file", stat.S_IMODE(info.mode), handle.read())
                handle.close()
            else:
                member = Member(clean, kind, stat.S_IMODE(info.mode), target=info.linkname or None)
            if member.kind == "file":
                files[clean] = member
            members.append(member)
    return members


def read_ar(data, source):
    """``{name: bytes}`` of a System V / GNU ``ar`` archive (the outer layer of a ``.deb``)."""
    if not data.startswith(AR_MAGIC):
        raise ArchiveError("%s is not an ar archive" % source)
    offset = len(AR_MAGIC)
    entries = {}
    while offset < len(data):
        header = data[offset:offset + 60]
        if len(header) < 60 or header[58:60] != b"`\n":
            raise ArchiveError("%s: damaged ar header at offset %d" % (source, offset))
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            raise ArchiveError("%s: bad ar member size at offset %d" % (source, offset)) from None
        start = offset + 60
        if start + size > len(data):
            raise ArchiveError("%s: ar member %s is truncated" % (source, name))
        entries[name] = data[start:start + size]
        offset = start + size + (size % 2)
    return entries


def _decompress_zstd(data, source):
    zstd = shutil.which("zstd")
    if not zstd:
        raise ArchiveError("%s is compressed with zstd: install the zstd command on the controller" % source)
    proc = subprocess.run([zstd, "-dc"], input=data, capture_output=True, check=False)
    if proc.returncode != 0:
        raise ArchiveError("zstd could not decompress %s: %s" % (source, proc.stderr.decode(errors="replace")))
    return proc.stdout


def read_deb(data, source):
    entries = read_ar(data, source)
    if "debian-binary" not in entries:
        raise ArchiveError("%s is an ar archive but not a Debian package (no debian-binary)" % source)
    for name, payload in entries.items():
        if name.startswith("data.tar"):
            if name.endswith(".zst"):
                payload = _decompress_zstd(payload, source)
            return read_tar(io.BytesIO(payload), "%s (%s)" % (source, name))
    raise ArchiveError("%s has no data.tar member" % source)


def read_cpio(data, source):
    """Members of a ``newc`` cpio stream (what ``rpm2cpio`` prints)."""
    members = []
    offset = 0
    pending = {}  # inode -> names of hard links whose data comes with a later entry
    while True:
        header = data[offset:offset + 110]
        if len(header) < 110 or header[:6] not in CPIO_MAGICS:
            raise ArchiveError("%s: bad cpio header at offset %d" % (source, offset))
        try:
            fields = [int(header[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        except ValueError:
            raise ArchiveError("%s: bad cpio header at offset %d" % (source, offset)) from None
        ino, mode, nlink, size, namesize = fields[0], fields[1], fields[4], fields[6], fields[11]
        name_start = offset + 110
        name = data[name_start:name_start + namesize - 1].decode("utf-8", "surrogateescape")
        data_start = (name_start + namesize + 3) & ~3
        body = data[data_start:data_start + size]
        if len(body) < size:
            raise ArchiveError("%s: cpio member %s is truncated" % (source, name))
        offset = (data_start + size + 3) & ~3
        if name == CPIO_TRAILER:
            break
        kind = _kind_of_mode(mode)
        target = body.decode("utf-8", "surrogateescape") if kind == "symlink" else None
        clean = _checked(source, name, kind, mode, target)
        if not clean:
            continue
        if kind == "file" and nlink > 1 and size == 0:
            pending.setdefault(ino, []).append((clean, stat.S_IMODE(mode)))
            continue
        if kind == "file":
            for link_name, link_mode in pending.pop(ino, []):
                members.append(Member(link_name, "file", link_mode, body))
            members.append(Member(clean, "file", stat.S_IMODE(mode), body))
        else:
            members.append(Member(clean, kind, stat.S_IMODE(mode), target=target))
    for links in pending.values():
        for link_name, link_mode in links:
            members.append(Member(link_name, "file", link_mode, b""))
    return members


def read_rpm(path):
    rpm2cpio = shutil.which("rpm2cpio")
    if not rpm2cpio:
        raise ArchiveError("%s is an RPM package: reading it needs rpm2cpio on the controller "
                           "(Debian/Ubuntu package rpm2cpio or rpm)" % path)
    proc = subprocess.run([rpm2cpio, path], capture_output=True, check=False)
    if proc.returncode != 0 or not proc.stdout:
        raise ArchiveError("rpm2cpio could not read %s: %s" % (path, proc.stderr.decode(errors="replace").strip()))
    return read_cpio(proc.stdout, path)


def read_source(path):
    """Members of a directory, ``.deb``, ``.rpm`` or tarball at ``path`` (by content, not name)."""
    if os.path.isdir(path):
        return read_directory(path)
    with open(path, "rb") as handle:
        head = handle.read(8)
    if head.startswith(AR_MAGIC):
        with open(path, "rb") as handle:
            return read_deb(handle.read(), path)
    if head.startswith(RPM_MAGIC):
        return read_rpm(path)
    with open(path, "rb") as handle:
        return read_tar(handle, path)


def merge(member_lists):
    """One tree from several: later members replace earlier ones of the same name."""
    merged = {}
    for members in member_lists:
        for member in members:
            merged[member.name] = member
    return [merged[name] for name in sorted(merged)]


def write_payload(members, path):
    """Write ``members`` as a plain tarball (files and links only, no owners, no special bits)."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            info = tarfile.TarInfo(member.name)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if member.kind == "file":
                info.type = tarfile.REGTYPE
                info.mode = member.mode & 0o755
                info.size = len(member.data)
                tar.addfile(info, io.BytesIO(member.data))
            elif member.kind == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = member.target
                info.mode = 0o777
                tar.addfile(info)
