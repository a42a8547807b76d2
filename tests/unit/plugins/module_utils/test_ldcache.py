from __future__ import annotations

import subprocess

import binfmt
import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ldcache

ENTRIES = [("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"), ("libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1")]


@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize("old_header", [True, False])
def test_parse_synthetic(little, old_header):
    assert ldcache.parse(binfmt.ld_so_cache(ENTRIES, little, old_header)) == ENTRIES


def test_parse_cache_written_by_real_ldconfig(tmp_path):
    from fakenode import elf_library

    libdir = tmp_path / "usr" / "lib" / "x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    (libdir / "libcuda.so.535.104.12").write_bytes(elf_library("libcuda.so.1"))
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "ld.so.conf").write_text("/usr/lib/x86_64-linux-gnu\n")
    subprocess.run(["ldconfig", "-r", str(tmp_path)], check=True)
    entries = ldcache.parse((tmp_path / "etc" / "ld.so.cache").read_bytes())
    assert ("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1") in entries


def test_parse_host_cache_matches_ldconfig_p():
    listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    count = int(listing.split()[0])
    with open("/etc/ld.so.cache", "rb") as handle:
        assert len(ldcache.parse(handle.read())) == count


@pytest.mark.parametrize("data, message", [
    (b"", "unknown magic"),
    (b"ld.so-1.7.0", "truncated"),
    (b"ld.so-1.7.0\0" + b"\0" * 8, "without the glibc"),
    (b"glibc-ld.so.cache1.1" + b"\0" * 4, "truncated ld.so.cache header"),
    (binfmt.ld_so_cache(ENTRIES)[:60], "entry table runs past"),
    (binfmt.ld_so_cache(ENTRIES)[:-10], "string runs past"),
])
def test_bad_input(data, message):
    with pytest.raises(ldcache.LdCacheError, match=message):
        ldcache.parse(data)
