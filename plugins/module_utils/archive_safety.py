# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks on archive members and source trees before anything is written. Pure functions.

Refused: absolute names, names with ``..``, links whose target leaves the tree, hard links to
anything but an earlier member, device files, FIFOs and sockets, setuid and setgid bits.
Checksums use ``get_url``'s form, ``<algorithm>:<hex digest>``.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import stat

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import FILE_TYPES

# node_fs's file types, and a tar archive's hard links.
MEMBER_KINDS = FILE_TYPES + ("hardlink", "other")
CHECKSUM_ALGORITHMS = ("sha256", "sha384", "sha512", "sha224", "sha1", "md5")
_HEX = re.compile(r"^[0-9a-fA-F]+$")


class UnsafeMember(Exception):
    pass


def normalize_name(name):
    """Member name without a leading ``./``; raises UnsafeMember for unsafe names."""
    if not name or "\0" in name:
        raise UnsafeMember("empty or NUL in member name %r" % name)
    if name.startswith("/"):
        raise UnsafeMember("absolute member name %s" % name)
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeMember("member name with '..': %s" % name)
    return "/".join(parts)


def link_target_inside(name, target):
    """Whether a symlink ``name`` -> ``target`` stays inside the tree (relative, not escaping)."""
    if not target or target.startswith("/") or "\0" in target:
        return False
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    return joined != ".." and not joined.startswith("../")


def tar_member_kind(info):
    """The MEMBER_KINDS name of a ``tarfile.TarInfo`` (duck-typed: no tarfile import needed)."""
    for test, kind in (("issym", "symlink"), ("islnk", "hardlink"), ("isdir", "directory"), ("isreg", "file"),
                       ("ischr", "char"), ("isblk", "block"), ("isfifo", "fifo")):
        if getattr(info, test)():
            return kind
    return "other"


def check_member(name, kind, mode=0, linkname=None):
    """The member's normalised name; raises UnsafeMember with the reason when it is refused."""
    if kind not in MEMBER_KINDS:
        raise ValueError("unknown member kind %r" % kind)
    clean = normalize_name(name)
    if kind in ("char", "block"):
        raise UnsafeMember("device file %s" % name)
    if kind in ("fifo", "socket", "other"):
        raise UnsafeMember("special file (%s) %s" % (kind, name))
    if mode & (stat.S_ISUID | stat.S_ISGID):
        raise UnsafeMember("setuid/setgid bit on %s (mode %04o)" % (name, stat.S_IMODE(mode)))
    if kind == "symlink" and not link_target_inside(clean, linkname):
        raise UnsafeMember("symbolic link %s -> %s points outside the archive" % (name, linkname))
    if kind == "hardlink":
        normalize_name(linkname or "")
    return clean


def parse_checksum(checksum):
    """``(algorithm, lowercase hex)`` from ``sha256:<hex>``; ValueError when malformed."""
    algorithm, sep, digest = (checksum or "").partition(":")
    algorithm = algorithm.strip().lower()
    digest = digest.strip().lower()
    if not sep or algorithm not in CHECKSUM_ALGORITHMS:
        raise ValueError("checksum must look like 'sha256:<hex digest>' (algorithms: %s), not %r"
                         % (", ".join(CHECKSUM_ALGORITHMS), checksum))
    size = hashlib.new(algorithm).digest_size * 2
    if len(digest) != size or not _HEX.match(digest):
        raise ValueError("a %s checksum has %d hex digits: %r" % (algorithm, size, checksum))
    return algorithm, digest
