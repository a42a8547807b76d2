# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read glibc's ``ld.so.cache``: the ``glibc-ld.so.cache1.1`` format, with or without the old
``ld.so-1.7.0`` header in front. Pure: bytes in, ``[(name, path)]`` out."""

from __future__ import annotations

import struct

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"
# new header: magic+version (20), nlibs, len_strings, flags(1)+pad(3), extension_offset, unused[3]
NEW_HEADER_SIZE = 48
NEW_ENTRY_SIZE = 24  # flags int32, key, value, osversion uint32, hwcap uint64
OLD_ENTRY_SIZE = 12  # flags, key, value


class LdCacheError(ValueError):
    """Not an ld.so.cache, or a truncated one."""


def _new_format_offset(data):
    if data.startswith(NEW_MAGIC):
        return 0
    if not data.startswith(OLD_MAGIC):
        raise LdCacheError("not an ld.so.cache (unknown magic)")
    if len(data) < 16:
        raise LdCacheError("truncated ld.so.cache")
    for order in "<>":
        nlibs, = struct.unpack_from(order + "I", data, 12)
        offset = 16 + nlibs * OLD_ENTRY_SIZE
        offset = (offset + 7) & ~7  # the new table is 8-byte aligned after the old one
        if data[offset:offset + len(NEW_MAGIC)] == NEW_MAGIC:
            return offset
    raise LdCacheError("old-format ld.so.cache without the glibc-ld.so.cache1.1 table")


def parse(data):
    """Entries of the cache as ``[(library name, path)]`` in the cache's order."""
    base = _new_format_offset(data)
    if len(data) < base + NEW_HEADER_SIZE:
        raise LdCacheError("truncated ld.so.cache header")
    for order in "<>":
        nlibs, _len_strings = struct.unpack_from(order + "II", data, base + 20)
        if base + NEW_HEADER_SIZE + nlibs * NEW_ENTRY_SIZE <= len(data):
            break
    else:
        raise LdCacheError("truncated ld.so.cache: the entry table runs past the end of the file")

    def string_at(offset):
        start = base + offset
        end = data.find(b"\0", start)
        if start >= len(data) or end < 0:
            raise LdCacheError("truncated ld.so.cache: a string runs past the end of the file")
        return data[start:end].decode("utf-8", "replace")

    entries = []
    for i in range(nlibs):
        _flags, key, value = struct.unpack_from(order + "iII", data, base + NEW_HEADER_SIZE + i * NEW_ENTRY_SIZE)
        entries.append((string_at(key), string_at(value)))
    return entries
