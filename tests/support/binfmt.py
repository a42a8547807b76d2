"""Writers for minimal ELF shared objects and ld.so.cache files in any class/endianness.

gcc here only makes 64-bit little-endian objects; these writers cover the other forms the
readers must handle. They follow the ELF and glibc layouts field by field.
"""

from __future__ import annotations

import struct


def elf_shared_object(soname, is64=True, little=True, with_dynamic=True, with_soname=True):
    order = "<" if little else ">"
    ehsize, phentsize = (64, 56) if is64 else (52, 32)
    strtab = b"\0" + (soname.encode() + b"\0" if with_soname else b"")
    phnum = 2 if with_dynamic else 1
    dyn_entry = order + ("qQ" if is64 else "iI")
    entries = [(5, 0x1000)] + ([(14, 1)] if with_soname else []) + [(0, 0)]
    dynamic = b"".join(struct.pack(dyn_entry, tag, value) for tag, value in entries)
    phoff = ehsize
    strtab_off = phoff + phnum * phentsize
    dynamic_off = strtab_off + len(strtab)
    total = dynamic_off + len(dynamic)

    ident = b"\x7fELF" + bytes([2 if is64 else 1, 1 if little else 2, 1, 0]) + b"\0" * 8
    if is64:
        header = ident + struct.pack(order + "HHIQQQIHHHHHH", 3, 62, 1, 0, phoff, 0, 0, ehsize, phentsize, phnum, 0, 0, 0)
    else:
        header = ident + struct.pack(order + "HHIIIIIHHHHHH", 3, 3, 1, 0, phoff, 0, 0, ehsize, phentsize, phnum, 0, 0, 0)

    def phdr(p_type, offset, vaddr, size):
        if is64:
            return struct.pack(order + "IIQQQQQQ", p_type, 5, offset, vaddr, vaddr, size, size, 0x1000)
        return struct.pack(order + "IIIIIIII", p_type, offset, vaddr, vaddr, size, size, 5, 0x1000)

    # One PT_LOAD maps the file at 0x1000 - strtab_off so DT_STRTAB (0x1000) lands on the string table.
    base = 0x1000 - strtab_off
    headers = phdr(1, 0, base, total)
    if with_dynamic:
        headers += phdr(2, dynamic_off, base + dynamic_off, len(dynamic))
    data = header + headers + strtab + (dynamic if with_dynamic else b"")
    return data.ljust(total, b"\0")


def ld_so_cache(entries, little=True, old_header=False):
    """Bytes of an ld.so.cache listing ``[(name, path)]``."""
    order = "<" if little else ">"
    strings = b""
    offsets = []
    header_size = 48
    table_size = header_size + 24 * len(entries)
    for name, path in entries:
        key = table_size + len(strings)
        strings += name.encode() + b"\0"
        value = table_size + len(strings)
        strings += path.encode() + b"\0"
        offsets.append((key, value))
    new = b"glibc-ld.so.cache1.1" + struct.pack(order + "II", len(entries), len(strings))
    new += struct.pack(order + "B3xI3I", 0, 0, 0, 0, 0)
    for key, value in offsets:
        new += struct.pack(order + "iIIIQ", 0x0303, key, value, 0, 0)
    new += strings
    if not old_header:
        return new
    old = b"ld.so-1.7.0\0" + struct.pack(order + "I", len(entries))
    old += struct.pack(order + "iII", 1, 0, 0) * len(entries)
    old = old.ljust((len(old) + 7) & ~7, b"\0")
    return old + new
