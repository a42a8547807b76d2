# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the SONAME of an ELF shared object (32/64-bit, either endianness). Pure: bytes in."""

from __future__ import annotations

import struct

ELF_MAGIC = b"\x7fELF"
PT_LOAD = 1
PT_DYNAMIC = 2
DT_NULL = 0
DT_STRTAB = 5
DT_SONAME = 14


class ElfError(ValueError):
    """Not an ELF file, or one too short or damaged to read."""


def _layout(data):
    if data[:4] != ELF_MAGIC:
        raise ElfError("not an ELF file")
    if len(data) < 52:
        raise ElfError("truncated ELF file")
    elf_class, elf_data = data[4], data[5]
    if elf_class not in (1, 2) or elf_data not in (1, 2):
        raise ElfError("unknown ELF class or data encoding")
    order = "<" if elf_data == 1 else ">"
    is64 = elf_class == 2
    return order, is64


def _unpack(fmt, data, offset):
    size = struct.calcsize(fmt)
    if offset < 0 or offset + size > len(data):
        raise ElfError("truncated ELF file")
    return struct.unpack_from(fmt, data, offset)


def program_headers(data):
    """List of ``(type, offset, vaddr, filesz)`` from the program header table."""
    order, is64 = _layout(data)
    if is64:
        phoff, = _unpack(order + "Q", data, 32)
        phentsize, phnum = _unpack(order + "HH", data, 54)
        entry = order + "IIQQQQQQ"
    else:
        phoff, = _unpack(order + "I", data, 28)
        phentsize, phnum = _unpack(order + "HH", data, 42)
        entry = order + "IIIIIIII"
    headers = []
    for i in range(phnum):
        fields = _unpack(entry, data, phoff + i * phentsize)
        if is64:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = fields[:6]
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = fields[:5]
        headers.append((p_type, p_offset, p_vaddr, p_filesz))
    return headers


def _vaddr_to_offset(headers, vaddr):
    for p_type, p_offset, p_vaddr, p_filesz in headers:
        if p_type == PT_LOAD and p_vaddr <= vaddr < p_vaddr + p_filesz:
            return vaddr - p_vaddr + p_offset
    raise ElfError("address 0x%x is in no loadable segment" % vaddr)


def soname(data):
    """The DT_SONAME of the shared object in ``data``, or None when it has none.

    ``data`` is the whole file as bytes or a read-only mmap (only the parts it needs are touched).
    """
    order, is64 = _layout(data)
    headers = program_headers(data)
    dynamic = [h for h in headers if h[0] == PT_DYNAMIC]
    if not dynamic:
        return None
    _type, dyn_offset, _vaddr, dyn_size = dynamic[0]
    entry_fmt = order + ("qQ" if is64 else "iI")
    entry_size = struct.calcsize(entry_fmt)
    strtab = soname_offset = None
    for i in range(dyn_size // entry_size):
        tag, value = _unpack(entry_fmt, data, dyn_offset + i * entry_size)
        if tag == DT_NULL:
            break
        if tag == DT_STRTAB:
            strtab = value
        elif tag == DT_SONAME:
            soname_offset = value
    if soname_offset is None:
        return None
    if strtab is None:
        raise ElfError("DT_SONAME without DT_STRTAB")
    start = _vaddr_to_offset(headers, strtab) + soname_offset
    end = data.find(b"\0", start)
    if start >= len(data) or end < 0:
        raise ElfError("truncated ELF file")
    return data[start:end].decode("utf-8", "replace")
