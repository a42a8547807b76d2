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
    (binfmt.elf_shared_object("libcuda.so.1")[:70], "truncated"),
    (binfmt.elf_shared_object("libcuda.so.1")[:-30], "truncated"),
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
