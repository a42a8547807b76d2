from __future__ import annotations

import mmap
import struct

import binfmt
import pytest
from fakenode import elf_library

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import elf


@pytest.mark.parametrize("is64", [True, False])
@pytest.mark.parametrize("little", [True, False])
def test_soname_every_class_and_endianness(is64, little):
    assert elf.soname(binfmt.elf_shared_object("libnvidia-ml.so.1", is64, little)) == "libnvidia-ml.so.1"


def test_soname_of_gcc_built_library_through_mmap(tmp_path):
    path = tmp_path / "libcuda.so.535.104.12"
    path.write_bytes(elf_library("libcuda.so.1"))
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        assert elf.soname(data) == "libcuda.so.1"


def test_soname_of_system_libc():
    with open("/lib/x86_64-linux-gnu/libc.so.6", "rb") as handle:
        assert elf.soname(handle.read()) == "libc.so.6"


@pytest.mark.parametrize("kwargs", [{"with_soname": False}, {"with_dynamic": False}])
def test_no_soname_is_none(kwargs):
    assert elf.soname(binfmt.elf_shared_object("x", **kwargs)) is None


@pytest.mark.parametrize("data, message", [
    (b"", "not an ELF"),
    (b"#!/bin/sh\n" * 10, "not an ELF"),
    (b"\x7fELF\x03\x01" + b"\0" * 60, "unknown ELF class"),
    (binfmt.elf_shared_object("libcuda.so.1")[:70], "truncated|past the end"),
    (binfmt.elf_shared_object("libcuda.so.1")[:-30], "truncated|past the end"),
])
def test_bad_input_raises_elf_error(data, message):
    with pytest.raises(elf.ElfError, match=message):
        elf.soname(data)


def test_strtab_outside_any_segment():
    data = bytearray(binfmt.elf_shared_object("libcuda.so.1"))
    # move DT_STRTAB's address far away
    entry = struct.pack("<qQ", elf.DT_STRTAB, 0x1000)
    index = data.find(entry)
    assert index > 0
    data[index:index + 16] = struct.pack("<qQ", elf.DT_STRTAB, 0x900000)
    with pytest.raises(elf.ElfError, match="no loadable segment"):
        elf.soname(bytes(data))


def _patched(offset, fmt, value):
    data = bytearray(binfmt.elf_shared_object("libcuda.so.1"))
    struct.pack_into(fmt, data, offset, value)
    return bytes(data)


def _dynamic_header_offset(data):
    """Offset of the PT_DYNAMIC program header in a 64-bit little-endian object."""
    phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        if struct.unpack_from("<I", data, phoff + i * phentsize)[0] == elf.PT_DYNAMIC:
            return phoff + i * phentsize
    raise AssertionError("no PT_DYNAMIC")


HOSTILE = {
    # e_phoff far past any file, as a damaged library in a driver directory can have it: once
    # "Python int too large to convert to C long" from os.pread.
    "program headers at 2**63": (32, "<Q", 2 ** 63),
    # e_phnum 65535 entries of 65535 bytes: 4 GiB to read, once a MemoryError.
    "4 GiB of program headers": (54, "<HH", None),
    "program headers one byte past the end": (32, "<Q", None),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_offsets_and_sizes_past_the_file_raise_elf_error_before_reading(case):
    offset, fmt, value = HOSTILE[case]
    if case.startswith("4 GiB"):
        data = bytearray(binfmt.elf_shared_object("libcuda.so.1"))
        struct.pack_into(fmt, data, offset, 65535, 65535)
        data = bytes(data)
    elif value is None:
        data = binfmt.elf_shared_object("libcuda.so.1")
        data = _patched(offset, fmt, len(data) - 1)
    else:
        data = _patched(offset, fmt, value)
    asked = []

    def read(at, size):
        asked.append(size)
        return data[at:at + size]

    with pytest.raises(elf.ElfError, match="past the end of the %d-byte file" % len(data)):
        elf.soname_from_reader(read, len(data))
    assert max(asked) <= 64


@pytest.mark.parametrize("field, value", [(8, 2 ** 62), (32, 2 ** 62)], ids=["p_offset", "p_filesz"])
def test_a_dynamic_segment_past_the_file_raises_elf_error(field, value):
    data = bytearray(binfmt.elf_shared_object("libcuda.so.1"))
    struct.pack_into("<Q", data, _dynamic_header_offset(data) + field, value)
    with pytest.raises(elf.ElfError, match=r"dynamic segment .* past the end"):
        elf.soname(bytes(data))


def test_a_soname_offset_past_the_file_raises_elf_error():
    data = bytearray(binfmt.elf_shared_object("libcuda.so.1"))
    entry = struct.pack("<q", elf.DT_SONAME)
    index = data.find(entry)
    assert index > 0
    struct.pack_into("<Q", data, index + 8, 2 ** 40)
    with pytest.raises(elf.ElfError, match=r"SONAME at offset .* past the end"):
        elf.soname(bytes(data))
