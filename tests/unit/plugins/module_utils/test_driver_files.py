"""Discovery and the CDI spec on the driver's own subfolders (issue 31): vdpau/, Debian's
nvidia/current/ with its alternatives links, libX.so development links, a compute-only node and
a node with libraries of two driver versions."""

from __future__ import annotations

import posixpath

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi, discovery, node_model

DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu"
CURRENT = DEBIAN_LIB + "/nvidia/current"
VERSION = "535.104.12"


def hook_args(spec, name):
    (hook,) = [h for h in spec["containerEdits"]["hooks"] if h["args"][1] == name]
    return hook["args"][2:]


def created_links(spec):
    args = hook_args(spec, "create-symlinks")
    return [args[i + 1] for i in range(0, len(args), 2)]


def ldcache_folders(spec):
    args = hook_args(spec, "update-ldcache")
    return [args[i + 1] for i in range(0, len(args), 2)]


def mounted(spec):
    return {m["hostPath"]: m["containerPath"] for m in spec["containerEdits"]["mounts"]}


def spec_for(facts):
    return cdi.build_spec(facts, mode="management")


def check_every_library_mounted_with_its_soname_link(node, facts, spec):
    """Every library of the node is listed with its SONAME, mounted, and has its SONAME link."""
    assert sorted(facts["libraries"], key=lambda lib: lib["path"]) == sorted(
        node.libraries, key=lambda lib: lib["path"])
    mounts = mounted(spec)
    links = created_links(spec)
    for lib in node.libraries:
        container = mounts[lib["path"]]
        directory, name = posixpath.split(container)
        if lib["soname"] and lib["soname"] != name:
            assert "%s::%s" % (name, posixpath.join(directory, lib["soname"])) in links
        assert directory in ldcache_folders(spec)


def test_search_dirs_add_vdpau_and_debian_nvidia_current():
    dirs = node_model.library_search_dirs(node_model.DEFAULT_LIBRARY_SEARCH_PATHS)
    assert dirs[:2] == ["lib64", "lib64/vdpau"]
    assert dirs.index("usr/lib/x86_64-linux-gnu") < dirs.index("usr/lib/x86_64-linux-gnu/vdpau") \
        < dirs.index("usr/lib/x86_64-linux-gnu/nvidia/current")
    assert "usr/lib/aarch64-linux-gnu/nvidia/current" in dirs
    assert "lib64/nvidia/current" not in dirs and "usr/lib/nvidia/current" not in dirs
    assert len(dirs) == len(set(dirs))
    assert node_model.library_search_dirs([]) == []
    assert node_model.library_search_dirs(["/lib64/", "lib64"]) == ["lib64", "lib64/vdpau"]


@pytest.mark.parametrize("layout,lib_dir,container_dir", [
    ("cos", "/home/kubernetes/bin/nvidia/lib64", "/lib64"),
    ("ubuntu", DEBIAN_LIB, DEBIAN_LIB),
    ("driver-container", "/run/nvidia/driver" + DEBIAN_LIB, DEBIAN_LIB),
])
def test_vdpau_and_dev_links(fake_node_factory, layout, lib_dir, container_dir):
    node = fake_node_factory(layout, vdpau=True, dev_links=True)
    facts = discovery.discover_node(str(node.root))
    assert facts["warnings"] == []
    vdpau = lib_dir + "/vdpau/libvdpau_nvidia.so." + VERSION
    assert {"path": vdpau, "soname": "libvdpau_nvidia.so.1"} in facts["libraries"]
    assert sorted(facts["dev_links"], key=str) == sorted(node.dev_links, key=str)
    assert {"path": lib_dir + "/libnvidia-ml.so", "library": lib_dir + "/libnvidia-ml.so." + VERSION} \
        in facts["dev_links"]
    spec = spec_for(facts)
    check_every_library_mounted_with_its_soname_link(node, facts, spec)
    assert mounted(spec)[vdpau] == container_dir + "/vdpau/libvdpau_nvidia.so." + VERSION
    links = created_links(spec)
    assert "libvdpau_nvidia.so.%s::%s/vdpau/libvdpau_nvidia.so.1" % (VERSION, container_dir) in links
    for prefix, soname in (("libnvidia-ml", "libnvidia-ml.so.1"), ("libnvcuvid", "libnvcuvid.so.1"),
                           ("libnvidia-encode", "libnvidia-encode.so.1")):
        assert "%s::%s/%s.so" % (soname, container_dir, prefix) in links
    # COMPAT_LINKS are made once, not again as the host's dev link.
    assert links.count("libcuda.so.1::%s/libcuda.so" % container_dir) == 1
    assert links.count("libnvidia-opticalflow.so.1::%s/libnvidia-opticalflow.so" % container_dir) == 1
    assert len(links) == len(set(links))
    assert ldcache_folders(spec) == [container_dir, container_dir + "/vdpau"]


def test_default_layouts_make_the_same_links_as_before(cos_node):
    """Without the options a node has only libcuda.so: the spec's links are the SONAME and COMPAT ones."""
    facts = discovery.discover_node(str(cos_node.root))
    assert facts["dev_links"] == [{"path": "/home/kubernetes/bin/nvidia/lib64/libcuda.so",
                                   "library": "/home/kubernetes/bin/nvidia/lib64/libcuda.so." + VERSION}]
    assert facts["vdpau_links"] == [] and facts["skipped_libraries"] == []
    without = dict(facts, dev_links=[])
    assert cdi.build_spec(facts) == cdi.build_spec(without)


def test_debian_layout_finds_nvidia_current(fake_node_factory):
    node = fake_node_factory("debian")
    facts = discovery.discover_node(str(node.root))
    assert facts["driver_root"] == "/"
    assert facts["warnings"] == []  # libnvidia-vulkan-producer has no SONAME, as NVIDIA ships it
    paths = {lib["path"] for lib in facts["libraries"]}
    # Reached by no alternatives link in /usr/lib/x86_64-linux-gnu: found in nvidia/current only.
    assert CURRENT + "/libnvidia-cfg.so." + VERSION in paths
    assert {"path": CURRENT + "/libnvidia-vulkan-producer.so." + VERSION, "soname": None} in facts["libraries"]
    assert all(path.startswith(CURRENT + "/") for path in paths)
    assert not any("libz" in path for path in paths)
    # Dev links in nvidia/current and the alternatives' libcuda.so and libnvcuvid.so one level up.
    assert sorted(facts["dev_links"], key=str) == sorted(node.dev_links, key=str)
    assert {"path": DEBIAN_LIB + "/libcuda.so", "library": CURRENT + "/libcuda.so." + VERSION} in facts["dev_links"]
    assert facts["vdpau_links"] == [{"path": DEBIAN_LIB + "/vdpau/libvdpau_nvidia.so.1",
                                     "library": CURRENT + "/libvdpau_nvidia.so." + VERSION}]
    spec = spec_for(facts)
    check_every_library_mounted_with_its_soname_link(node, facts, spec)
    mounts = mounted(spec)
    assert mounts[CURRENT + "/libnvidia-vulkan-producer.so." + VERSION] == \
        CURRENT + "/libnvidia-vulkan-producer.so." + VERSION
    links = created_links(spec)
    assert "libvdpau_nvidia.so.%s::%s/libvdpau_nvidia.so.1" % (VERSION, CURRENT) in links
    assert "%s/libvdpau_nvidia.so.%s::%s/vdpau/libvdpau_nvidia.so.1" % (CURRENT, VERSION, DEBIAN_LIB) in links
    for prefix in ("libnvidia-ml", "libnvcuvid", "libnvidia-encode", "libnvidia-fbc", "libnvidia-ngx"):
        assert "%s.so.1::%s/%s.so" % (prefix, CURRENT, prefix) in links
    # No SONAME: no SONAME link, nothing else made for it.
    assert not any("vulkan-producer" in link for link in links)
    assert len(links) == len(set(links))
    assert ldcache_folders(spec) == [CURRENT, DEBIAN_LIB + "/vdpau"]


def test_debian_layout_without_nvidia_current_in_the_search_loses_libraries(fake_node_factory):
    """What the search paths alone reach (the alternatives links, through ld.so.cache): the figure
    before nvidia/current was searched."""
    node = fake_node_factory("debian")
    facts = discovery.discover_node(str(node.root), library_search_paths=[])
    paths = {lib["path"] for lib in facts["libraries"]}
    assert CURRENT + "/libnvidia-cfg.so." + VERSION not in paths
    assert CURRENT + "/libnvidia-vulkan-producer.so." + VERSION not in paths
    assert len(paths) < len(node.libraries)


def test_compute_only_node(fake_node_factory):
    node = fake_node_factory("ubuntu", compute_only=True, dev_links=True)
    facts = discovery.discover_node(str(node.root))
    assert facts["warnings"] == []
    names = {posixpath.basename(lib["path"]).split(".so")[0] for lib in facts["libraries"]}
    assert names == {"libcuda", "libnvidia-ml", "libnvidia-ptxjitcompiler", "libnvidia-nvvm", "libnvidia-opencl",
                     "libnvidia-cfg", "libnvidia-allocator", "libnvidia-gpucomp"}
    assert not any(path.endswith(".json") for path in facts["config_files"])
    spec = spec_for(facts)
    check_every_library_mounted_with_its_soname_link(node, facts, spec)
    links = created_links(spec)
    # The COMPAT links of absent libraries are not made: no GLX, no optical flow here.
    assert not any("libGLX_indirect" in link or "opticalflow" in link for link in links)
    assert "libnvidia-ml.so.1::%s/libnvidia-ml.so" % DEBIAN_LIB in links
    assert ldcache_folders(spec) == [DEBIAN_LIB]


@pytest.mark.parametrize("layout", ["cos", "debian"])
def test_two_driver_versions_take_the_running_one(fake_node_factory, layout):
    node = fake_node_factory(layout, other_version="530.30.02", vdpau=True, dev_links=True)
    facts = discovery.discover_node(str(node.root))
    assert facts["driver_version"] == facts["library_version"] == VERSION
    assert sorted(facts["libraries"], key=lambda lib: lib["path"]) == sorted(
        node.libraries, key=lambda lib: lib["path"])
    assert not any("530.30.02" in lib["path"] for lib in facts["libraries"])
    assert [entry["path"] for entry in facts["skipped_libraries"]] == sorted(node.other_libraries)
    assert {entry["version"] for entry in facts["skipped_libraries"]} == {"530.30.02"}
    (warning,) = facts["warnings"]
    assert warning.startswith("not mounting %d libraries of other driver versions (530.30.02) than %s"
                              % (len(node.other_libraries), VERSION))
    assert "and %d more" % (len(node.other_libraries) - 3) in warning and len(warning) < 600
    spec = spec_for(facts)
    assert not any("530.30.02" in path for path in mounted(spec))
    assert not any("530.30.02" in link for link in created_links(spec))


def test_the_kernel_modules_version_is_taken_when_both_are_there(fake_node_factory):
    """The running version is the kernel module's: with it among the files, the others are skipped."""
    node = fake_node_factory("cos", other_version="550.54.15", kernel_version="550.54.15")
    facts = discovery.discover_node(str(node.root))
    assert facts["driver_version"] == facts["library_version"] == "550.54.15"
    assert {lib["path"] for lib in facts["libraries"]} == set(node.other_libraries)
    assert len(facts["skipped_libraries"]) == len(node.libraries)
