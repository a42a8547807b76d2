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


_STRUCTS = {}


def _structs(order, is64):
    """Precompiled (ELF header tail, program header, dynamic entry) structs for a layout."""
    key = (order, is64)
    if key not in _STRUCTS:
        # Program headers are unpacked whole (Elf64_Phdr: 56 bytes, Elf32_Phdr: 32) so that a
        # table of standard-size entries goes through one iter_unpack.
        if is64:
            # e_phoff at 32; e_phentsize, e_phnum at 54
            _STRUCTS[key] = (struct.Struct(order + "32xQ14xHH"), struct.Struct(order + "IIQQQQQQ"), struct.Struct(order + "qQ"))
        else:
            # e_phoff at 28; e_phentsize, e_phnum at 42
            _STRUCTS[key] = (struct.Struct(order + "28xI10xHH"), struct.Struct(order + "IIIIIIII"), struct.Struct(order + "iI"))
    return _STRUCTS[key]


def _read_exactly(read, offset, size, file_size, what):
    if offset < 0 or size < 0 or offset + size > file_size:
        raise ElfError("%s (%d bytes at offset %d) past the end of the %d-byte file" % (what, size, offset, file_size))
    chunk = read(offset, size)
    if len(chunk) < size:
        raise ElfError("truncated ELF file")
    return chunk


def soname_from_reader(read, file_size):
    """The DT_SONAME of a shared object of ``file_size`` bytes, reading it through
    ``read(offset, size) -> bytes``.

    Only the ELF header, the program headers, the dynamic segment and the name itself are
    read, so a 30 MB library costs a few small reads. Every offset and size the file gives is
    checked against ``file_size`` before it is read, so a damaged or hostile file costs no more
    than the file itself. Returns None when there is no SONAME; raises ElfError for non-ELF,
    truncated or inconsistent files.
    """
    ident = read(0, 64)
    if ident[:4] != ELF_MAGIC:
        raise ElfError("not an ELF file")
    if len(ident) < 52:
        raise ElfError("truncated ELF file")
    elf_class, elf_data = ident[4], ident[5]
    if elf_class not in (1, 2) or elf_data not in (1, 2):
        raise ElfError("unknown ELF class or data encoding")
    is64 = elf_class == 2
    header, phdr, dyn_entry = _structs("<" if elf_data == 1 else ">", is64)
    if len(ident) < header.size:
        raise ElfError("truncated ELF file")
    phoff, phentsize, phnum = header.unpack_from(ident)
    if phnum and phentsize < phdr.size:
        raise ElfError("bad program header size")
    table = _read_exactly(read, phoff, phnum * phentsize, file_size, "program headers")
    loads = []
    dynamic = None
    if phentsize == phdr.size:
        rows = phdr.iter_unpack(table)
    else:
        rows = (phdr.unpack_from(table, i * phentsize) for i in range(phnum))
    for fields in rows:
        p_type = fields[0]
        if p_type == PT_LOAD:
            loads.append((fields[2], fields[3], fields[5]) if is64 else (fields[1], fields[2], fields[4]))
        elif p_type == PT_DYNAMIC and dynamic is None:
            dynamic = (fields[2], fields[5]) if is64 else (fields[1], fields[4])
    if dynamic is None:
        return None
    dyn_size = dynamic[1] - dynamic[1] % dyn_entry.size
    strtab = name_offset = None
    for tag, value in dyn_entry.iter_unpack(_read_exactly(read, dynamic[0], dyn_size, file_size, "dynamic segment")):
        if tag == DT_NULL:
            break
        if tag == DT_STRTAB:
            strtab = value
        elif tag == DT_SONAME:
            name_offset = value
    if name_offset is None:
        return None
    if strtab is None:
        raise ElfError("DT_SONAME without DT_STRTAB")
    for p_offset, p_vaddr, p_filesz in loads:
        if p_vaddr <= strtab < p_vaddr + p_filesz:
            start = strtab - p_vaddr + p_offset + name_offset
            break
    else:
        raise ElfError("address 0x%x is in no loadable segment" % strtab)
    if not 0 <= start < file_size:
        raise ElfError("SONAME at offset %d past the end of the %d-byte file" % (start, file_size))
    name = read(start, 256)
    end = name.find(b"\0")
    if end < 0:
        name = read(start, 4096)
        end = name.find(b"\0")
        if end < 0:
            raise ElfError("truncated ELF file")
    return name[:end].decode("utf-8", "replace")


def soname(data):
    """The DT_SONAME of the shared object held in ``data`` (bytes or a read-only mmap)."""
    return soname_from_reader(lambda offset, size: data[offset:offset + size], len(data))
