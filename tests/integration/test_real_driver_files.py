"""Discovery and the CDI spec on Debian's real bookworm driver packages (535.261.03), laid out as
Debian installs them and as GKE keeps them on COS (see tests/support/nvidia_debs.py). The
packages (about 220 MB) are downloaded once into .cache/nvidia-debs/; without them the tests fail,
naming what is missing (CI runs them all: make test needs deb.debian.org anyway)."""

from __future__ import annotations

import posixpath
import shutil

import nvidia_debs
import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi, discovery


@pytest.fixture(scope="module")
def trees():
    if shutil.which("dpkg-deb") is None or shutil.which("readelf") is None:
        pytest.fail("needs dpkg-deb and readelf: apt-get install dpkg-dev binutils", pytrace=False)
    try:
        return {"debian": nvidia_debs.debian_tree(), "cos": nvidia_debs.cos_tree()}
    except nvidia_debs.Unavailable as exc:
        pytest.fail("Debian's NVIDIA packages cannot be downloaded (deb.debian.org, non-free): %s" % exc, pytrace=False)


@pytest.mark.parametrize("layout,driver_root", [("debian", "/"), ("cos", "/home/kubernetes/bin/nvidia")])
def test_every_real_library_is_listed_with_its_soname(trees, layout, driver_root):
    tree = trees[layout]
    facts = discovery.discover_node(str(tree), driver_root=driver_root)
    assert facts["driver_version"] == nvidia_debs.VERSION
    expected = nvidia_debs.real_libraries(tree, driver_root)
    assert len(expected) >= 25
    got = {lib["path"]: lib["soname"] for lib in facts["libraries"]}
    assert got == expected
    # No device nodes in these trees: that is the only warning.
    assert [w for w in facts["warnings"] if not w.startswith("no NVIDIA device nodes")] == []
    control = {"path": "/dev/nvidiactl", "host_path": "/dev/nvidiactl", "major": 195, "minor": 255, "mode": "0666"}
    spec = cdi.build_spec(dict(facts, device_nodes=[control]))
    mounted = {m["hostPath"] for m in spec["containerEdits"]["mounts"]}
    assert set(expected) <= mounted
    hooks = {h["args"][1]: h["args"] for h in spec["containerEdits"]["hooks"]}
    links = hooks["create-symlinks"]
    folders = hooks["update-ldcache"]
    if layout == "debian":
        current = "/usr/lib/x86_64-linux-gnu/nvidia/current"
        assert current + "/libnvidia-cfg.so." + nvidia_debs.VERSION in got
        assert got[current + "/libnvidia-vulkan-producer.so." + nvidia_debs.VERSION] is None
        assert "/usr/lib/x86_64-linux-gnu/vdpau" in folders
        dev_dir = current
    else:
        assert "/lib64/vdpau" in folders
        assert "libvdpau_nvidia.so.%s::/lib64/vdpau/libvdpau_nvidia.so.1" % nvidia_debs.VERSION in links
        dev_dir = "/lib64"
    if layout == "debian":
        # The packages' own libX.so links, beside the libraries.
        for prefix in ("libnvidia-ml", "libnvcuvid", "libnvidia-encode", "libnvidia-fbc", "libnvidia-ngx"):
            assert "%s.so.1::%s/%s.so" % (prefix, dev_dir, prefix) in links
    assert "libcuda.so.1::%s/libcuda.so" % dev_dir in links
    assert all(posixpath.isabs(f) for f in folders[3::2])
