# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one reader of ``toolkit_install``'s sources: a directory, a tarball, a ``.deb`` or an ``.rpm``.

Both halves use it: the action plugin on the controller, which then sends the node one
compressed tarball with the module's arguments (:func:`write_payload`), and the module on the
node, which reads that tarball or, with ``remote_src``, the node's own sources. Python 3
standard library only; a zstd-compressed ``.deb`` needs the ``zstd`` command and an ``.rpm`` the
``rpm2cpio`` command where it is read.

A *tree* maps a member's relative name to ``{"type": "file", "mode", "data" or "path"}``,
``{"type": "symlink", "target"}`` or ``{"type": "directory", "mode"}`` (:mod:`node_fs`'s words);
:mod:`toolkit_layout` picks the toolkit's files from it. Every member passes
:func:`archive_safety.check_member` before it is kept, and nothing is extracted to disk.

Hard links, one rule for every format: a hard link is another name of a regular file met
earlier in the same source, and becomes a file with that file's data and mode; a link to
anything else is refused. (A ``newc`` cpio stream, as ``rpm2cpio`` writes it, gives the data
with the last name of an inode; names whose inode never gets data are an empty file. In a
directory every name is read as the file it is.)

Commands (``zstd``, ``rpm2cpio``) run through the caller's ``run_tool(name, argv, data)``, which
returns ``(rc, stdout, stderr)`` as bytes, or None when ``name`` is not installed: on the node
that is ``AnsibleModule.run_command``, on the controller :mod:`plugin_utils.local_command`.
"""

from __future__ import annotations

import base64
import gzip
import io
import os
import stat
import tarfile

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import archive_safety, node_fs

AR_MAGIC = b"!<arch>\n"
RPM_MAGIC = b"\xed\xab\xee\xdb"
CPIO_MAGICS = (b"070701", b"070702")
CPIO_TRAILER = "TRAILER!!!"


# A source named by one of these is downloaded on the controller (with its checksum); any other is a path.
URL_SCHEMES = ("http://", "https://", "ftp://")


class SourceError(Exception):
    """A source cannot be used; the message names it and says why. Nothing was written."""


def _member(kind, mode, data=None, target=None):
    if kind == "file":
        return {"type": "file", "mode": stat.S_IMODE(mode), "data": data}
    if kind == "symlink":
        return {"type": "symlink", "target": target}
    return {"type": kind, "mode": stat.S_IMODE(mode)}


def _checked(what, name, kind, mode, target=None):
    try:
        return archive_safety.check_member(name, kind, mode, target)
    except archive_safety.UnsafeMember as exc:
        raise SourceError("refusing %s: %s; nothing was written" % (what, exc)) from None


def read_member(entry):
    """The bytes of a tree's file entry."""
    if "data" in entry:
        return entry["data"]
    with open(entry["path"], "rb") as handle:
        return handle.read()


# --- readers ---------------------------------------------------------------------------

def read_directory(top, label=None):
    """The tree of the directory ``top`` (files are read when asked, by :func:`read_member`)."""
    what = "directory %s" % (label or top)
    tree = {}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            full = os.path.join(dirpath, name)
            info = os.lstat(full)
            kind = node_fs.file_type(info.st_mode)
            target = os.readlink(full) if kind == "symlink" else None
            clean = _checked(what, os.path.relpath(full, top), kind, info.st_mode, target)
            tree[clean] = _member(kind, info.st_mode, target=target)
            if kind == "file":
                del tree[clean]["data"]
                tree[clean]["path"] = full
    return tree


def read_tar(fileobj, label):
    """The tree of a tar archive (any compression ``tarfile`` reads) open as ``fileobj``."""
    what = "archive %s" % label
    try:
        tar = tarfile.open(fileobj=fileobj, mode="r:*")
    except tarfile.TarError as exc:
        why = str(exc).splitlines()[0].rstrip(":") if str(exc) else type(exc).__name__
        raise SourceError("%s is not a directory, a package or a readable tarball: %s" % (label, why)) from None
    tree = {}
    with tar:
        for info in tar.getmembers():
            kind = archive_safety.tar_member_kind(info)
            clean = _checked(what, info.name, kind, info.mode, info.linkname or None)
            if not clean:
                continue
            if kind == "hardlink":
                origin = tree.get(archive_safety.normalize_name(info.linkname))
                if origin is None or origin["type"] != "file":
                    raise SourceError("refusing %s: hard link %s to %s, which is not an earlier file; nothing "
                                      "was written" % (what, info.name, info.linkname))
                tree[clean] = dict(origin)
            elif kind == "file":
                with tar.extractfile(info) as handle:
                    tree[clean] = _member(kind, info.mode, data=handle.read())
            else:
                tree[clean] = _member(kind, info.mode, target=info.linkname or None)
    return tree


def read_ar(data, label):
    """``{name: bytes}`` of a System V / GNU ``ar`` archive (the outer layer of a ``.deb``)."""
    if not data.startswith(AR_MAGIC):
        raise SourceError("%s is not an ar archive" % label)
    offset = len(AR_MAGIC)
    entries = {}
    while offset < len(data):
        header = data[offset:offset + 60]
        if len(header) < 60 or header[58:60] != b"`\n":
            raise SourceError("%s: damaged ar header at offset %d" % (label, offset))
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            raise SourceError("%s: bad ar member size at offset %d" % (label, offset)) from None
        start = offset + 60
        if start + size > len(data):
            raise SourceError("%s: ar member %s is truncated" % (label, name))
        entries[name] = data[start:start + size]
        offset = start + size + (size % 2)
    return entries


def _output_of(run_tool, name, argv, label, why, data=None):
    ran = run_tool(name, argv, data)
    if ran is None:
        raise SourceError("%s %s: install the %s command where src is read (the controller, or the node with "
                          "remote_src)" % (label, why, name))
    rc, out, err = ran
    if rc != 0 or not out:
        raise SourceError("%s could not read %s: %s" % (name, label, err.decode(errors="replace").strip()))
    return out


def read_deb(data, label, run_tool):
    entries = read_ar(data, label)
    if "debian-binary" not in entries:
        raise SourceError("%s is an ar archive but not a Debian package (no debian-binary)" % label)
    for name, payload in entries.items():
        if name.startswith("data.tar"):
            if name.endswith(".zst"):
                payload = _output_of(run_tool, "zstd", ["-dc"], label, "is compressed with zstd", data=payload)
            return read_tar(io.BytesIO(payload), "%s (%s)" % (label, name))
    raise SourceError("%s has no data.tar member" % label)


def read_cpio(data, label):
    """The tree of a ``newc`` cpio stream (what ``rpm2cpio`` prints)."""
    what = "archive %s" % label
    tree = {}
    offset = 0
    pending = {}  # inode -> (name, mode) of the names whose data comes with a later one
    while True:
        header = data[offset:offset + 110]
        if len(header) < 110 or header[:6] not in CPIO_MAGICS:
            raise SourceError("%s: bad cpio header at offset %d" % (label, offset))
        try:
            fields = [int(header[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        except ValueError:
            raise SourceError("%s: bad cpio header at offset %d" % (label, offset)) from None
        ino, mode, nlink, size, namesize = fields[0], fields[1], fields[4], fields[6], fields[11]
        name_start = offset + 110
        name = data[name_start:name_start + namesize - 1].decode("utf-8", "surrogateescape")
        data_start = (name_start + namesize + 3) & ~3
        body = data[data_start:data_start + size]
        if len(body) < size:
            raise SourceError("%s: cpio member %s is truncated" % (label, name))
        offset = (data_start + size + 3) & ~3
        if name == CPIO_TRAILER:
            break
        kind = node_fs.file_type(mode)
        target = body.decode("utf-8", "surrogateescape") if kind == "symlink" else None
        clean = _checked(what, name, kind, mode, target)
        if not clean:
            continue
        if kind == "file" and nlink > 1 and size == 0:
            pending.setdefault(ino, []).append((clean, mode))
            continue
        if kind == "file":
            for link_name, link_mode in pending.pop(ino, []):
                tree[link_name] = _member("file", link_mode, data=body)
        tree[clean] = _member(kind, mode, data=body, target=target)
    for links in pending.values():
        for link_name, link_mode in links:
            tree[link_name] = _member("file", link_mode, data=b"")
    return tree


def read_rpm(path, run_tool, label=None):
    label = label or path
    why = "is an RPM package, read with rpm2cpio (Debian/Ubuntu package rpm2cpio or rpm)"
    return read_cpio(_output_of(run_tool, "rpm2cpio", [path], label, why), label)


def read_source(path, run_tool, label=None):
    """The tree of the directory, ``.deb``, ``.rpm`` or tarball at ``path`` (told by content, not
    name). ``label``: how messages name it (the ``src`` item as the user wrote it); ``run_tool``:
    how a package's command runs (see the module's docstring)."""
    label = label or path
    if os.path.isdir(path):
        return read_directory(path, label)
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
            if head.startswith(AR_MAGIC):
                return read_deb(head + handle.read(), label, run_tool)
            if head.startswith(RPM_MAGIC):
                return read_rpm(path, run_tool, label)
            handle.seek(0)
            return read_tar(handle, label)
    except OSError as exc:
        raise SourceError("cannot read src %s: %s" % (label, exc.strerror or exc)) from None


def merge(trees):
    """One tree from several: a later member replaces an earlier one of the same name."""
    merged = {}
    for tree in trees:
        merged.update(tree)
    return {name: merged[name] for name in sorted(merged)}


PAYLOAD_LABEL = "the toolkit sources the controller sent"


def write_payload(tree):
    """``tree``'s files and links as a gzip-compressed plain tarball in base64 text (no
    directories, owners or special bits), for a module argument. The node reads it back with
    :func:`read_payload`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(tree):
            entry = tree[name]
            if entry["type"] not in ("file", "symlink"):
                continue
            info = tarfile.TarInfo(name)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if entry["type"] == "symlink":
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, entry["target"], 0o777
                tar.addfile(info)
                continue
            data = read_member(entry)
            info.type, info.mode, info.size = tarfile.REGTYPE, entry["mode"] & 0o755, len(data)
            tar.addfile(info, io.BytesIO(data))
    # Level 1: Go binaries shrink to about 38% (6 gives 33%) in a quarter of the time, and this
    # runs for every host whose install changes.
    return base64.b64encode(gzip.compress(buffer.getvalue(), compresslevel=1, mtime=0)).decode("ascii")


def read_payload(text):
    """The tree :func:`write_payload` wrote, checked as any tarball is."""
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise SourceError("payload is not what the action plugin sends (not base64); run toolkit_install "
                          "as a task, with src") from None
    return read_tar(io.BytesIO(data), PAYLOAD_LABEL)


# --- checksums -------------------------------------------------------------------------

def pair_checksums(sources, checksums):
    """``[(src, (algorithm, hex) or None)]``: each ``src`` item with its parsed checksum."""
    sources, checksums = list(sources or []), list(checksums or [])
    if checksums and len(checksums) != len(sources):
        raise SourceError("checksum has %d items but src has %d: give one per src item, in order"
                          % (len(checksums), len(sources)))
    pairs = []
    for index, src in enumerate(sources):
        try:
            pairs.append((src, archive_safety.parse_checksum(checksums[index]) if checksums else None))
        except ValueError as exc:
            raise SourceError("checksum of src %s: %s" % (src, exc)) from None
    return pairs


def verify_checksum(path, src, expected):
    """Check the file at ``path`` (the ``src`` item ``src``) against ``expected``, a
    ``(algorithm, hex)`` from :func:`pair_checksums`; None checks nothing."""
    if expected is None:
        return
    if os.path.isdir(path):
        raise SourceError("checksum cannot be checked for the directory %s" % src)
    algorithm, digest = expected
    try:
        actual = node_fs.digest_file(path, algorithm)
    except OSError as exc:
        raise SourceError("cannot read src %s: %s" % (src, exc.strerror or exc)) from None
    if actual != digest:
        raise SourceError("checksum mismatch for %s: expected %s:%s, got %s:%s; nothing was written"
                          % (src, algorithm, digest, algorithm, actual))
