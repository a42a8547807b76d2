"""Discovery, the CDI spec and podman on Debian's real NVIDIA driver packages: bookworm's 535.261.03 and
trixie's 550.163.01, each laid out as Debian installs them, as GKE keeps them on COS and as NVIDIA's
driver container has them (six trees, see tests/support/nvidia_debs.py). The packages (about 470 MB
for both) are downloaded once into .cache/nvidia-debs/; without them the tests fail, naming what is
missing (CI runs them all: make test needs deb.debian.org anyway)."""

from __future__ import annotations

import posixpath
import shutil

import cdi_tools
import nvidia_debs
import pytest
from nvidia_debs import BOOKWORM, DRIVER_ROOTS, LAYOUTS, RELEASES, TRIXIE

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi, discovery

TREES = [(release, layout) for release in RELEASES for layout in LAYOUTS]
TREE_IDS = ["%s-%s" % (release.suite, layout) for release, layout in TREES]
MULTIARCH = "/usr/lib/x86_64-linux-gnu"

# --- What NVIDIA's generator puts in a management spec on these trees --------------------------------
# Facts, from its discoverers (NVIDIA/nvidia-container-toolkit pkg/nvcdi/driver-nvml.go, management.go,
# internal/discover/symlinks.go, ldconfig.go): it mounts every library named *.so.<driver version> in
# the library directories and their vdpau/ subfolders; create-symlinks makes each library's SONAME link
# and its libX.so link (to the SONAME) where the host has that link beside the library, and always
# libcuda.so, libnvidia-opticalflow.so and libGLX_indirect.so.0 (to libGLX_nvidia.so.<version>: ours
# points it at the SONAME libGLX_nvidia.so.0); update-ldcache gets each library directory; the GSP
# firmware is looked up as <driver root>/lib/firmware/nvidia/<version>/gsp*.bin; the binaries are
# nvidia-smi, nvidia-debugdump, nvidia-persistenced, nvidia-cuda-mps-control/-server and nvidia-imex(-ctl).
# Management mode has no graphics discoverer (no Vulkan/EGL files, no gbm/), and takes libnvidia-api.so.1
# only with its enable-explicit-driver-libraries feature flag (off by default).
#
# The libraries each driver version ships (what `readelf -d` says; checked below against the trees):
# {name before .so.<driver version>: the SONAME's suffix}, "V" when the SONAME is the file name itself,
# None for a library without a SONAME.
LIBRARIES = {
    BOOKWORM.version: {
        "libEGL_nvidia": "0", "libGLESv1_CM_nvidia": "1", "libGLESv2_nvidia": "2", "libGLX_nvidia": "0",
        "libcuda": "1", "libcudadebugger": "1", "libnvcuvid": "1", "libnvidia-allocator": "1", "libnvidia-cfg": "1",
        "libnvidia-eglcore": "V", "libnvidia-encode": "1", "libnvidia-fbc": "1", "libnvidia-glcore": "V",
        "libnvidia-glsi": "V", "libnvidia-glvkspirv": "V", "libnvidia-ml": "1", "libnvidia-ngx": "1",
        "libnvidia-nvvm": "4", "libnvidia-opencl": "1", "libnvidia-opticalflow": "1",
        "libnvidia-pkcs11-openssl3": "V", "libnvidia-ptxjitcompiler": "1", "libnvidia-rtcore": "V",
        "libnvidia-tls": "V", "libnvidia-vulkan-producer": None, "libnvoptix": "1", "libvdpau_nvidia": "1",
    },
}
# 550 drops the Vulkan producer library and splits the shader compiler out into libnvidia-gpucomp.
LIBRARIES[TRIXIE.version] = dict(
    [(k, v) for k, v in LIBRARIES[BOOKWORM.version].items() if k != "libnvidia-vulkan-producer"],
    **{"libnvidia-gpucomp": "V"})
# The one library whose file name has no driver version: ours mounts it, NVIDIA's generator by default not.
UNVERSIONED = {"libnvidia-api.so.1": "libnvidia-api.so.1"}
# The packages' libX.so development links (Debian keeps them beside the libraries in nvidia/current/).
DEV_LINKED = ("libcuda", "libnvcuvid", "libnvidia-encode", "libnvidia-fbc", "libnvidia-ml", "libnvidia-ngx",
              "libnvidia-opticalflow")
# Where each layout keeps the libraries, as container paths (the driver root stripped).
LIBRARY_DIR = {"debian": MULTIARCH + "/nvidia/current", "cos": "/lib64", "container": MULTIARCH}
# Debian installs these straight into the multiarch directory, not into nvidia/current/.
DEBIAN_MULTIARCH = ("libnvidia-eglcore", "libnvidia-glcore", "libnvidia-glsi", "libnvidia-glvkspirv",
                    "libnvidia-gpucomp", "libnvidia-pkcs11-openssl3", "libnvidia-rtcore", "libnvidia-tls")
FIRMWARE = ("gsp_ga10x.bin", "gsp_tu10x.bin")
# Where NVIDIA's generator finds the firmware: <driver root>/lib/firmware only (COS keeps it in firmware/).
UPSTREAM_FIRMWARE_DIR = {"debian": "/lib/firmware/nvidia", "cos": None, "container": "/lib/firmware/nvidia"}
UPSTREAM_BINARIES = {
    "debian": ("/usr/bin/nvidia-smi", "/usr/bin/nvidia-cuda-mps-control", "/usr/sbin/nvidia-cuda-mps-server"),
    "cos": ("/bin/nvidia-smi", "/bin/nvidia-cuda-mps-control", "/bin/nvidia-cuda-mps-server"),
    "container": ("/usr/bin/nvidia-smi", "/usr/bin/nvidia-cuda-mps-control", "/usr/bin/nvidia-cuda-mps-server"),
}
# Where the Vulkan ICD file is in the container (COS keeps it in the driver root's vulkan/).
VULKAN_ICD = {"debian": "/usr/share/vulkan/icd.d/nvidia_icd.json", "cos": "/etc/vulkan/icd.d/nvidia_icd.json",
              "container": "/usr/share/vulkan/icd.d/nvidia_icd.json"}
CONTROL = {"path": "/dev/nvidiactl", "host_path": "/dev/nvidiactl", "major": 195, "minor": 255, "mode": "0666"}
GPU0 = {"path": "/dev/nvidia0", "host_path": "/dev/nvidia0", "major": 195, "minor": 0, "mode": "0666"}
GPU = {"index": 0, "uuid": "GPU-6a1b2c3d-0000-4000-8000-00000000a001", "pci_bus_id": "0000:00:04.0", "minor": 0,
       "model": "Tesla T4"}


def library_dir(layout, stem):
    if layout == "debian" and stem in DEBIAN_MULTIARCH:
        return MULTIARCH
    if stem == "libvdpau_nvidia" and layout != "debian":
        return LIBRARY_DIR[layout] + "/vdpau"
    return LIBRARY_DIR[layout]


def upstream_management(release, layout):
    """What NVIDIA's generator's management spec carries on the tree: ``(mounts, links, folders)``,
    container paths, links as ``target::link`` (libGLX_indirect.so.0 as ``*::link``: targets differ)."""
    version = release.version
    mounts, links, folders = set(), set(), set()
    for stem, suffix in LIBRARIES[version].items():
        directory = library_dir(layout, stem)
        name = "%s.so.%s" % (stem, version)
        soname = None if suffix is None else name if suffix == "V" else "%s.so.%s" % (stem, suffix)
        mounts.add(posixpath.join(directory, name))
        folders.add(directory)
        if soname and soname != name:  # every SONAME link is beside its library in these trees
            links.add("%s::%s/%s" % (name, directory, soname))
        if stem in DEV_LINKED:
            links.add("%s::%s/%s.so" % (soname, directory, stem))
        if stem == "libGLX_nvidia":
            links.add("*::%s/libGLX_indirect.so.0" % directory)
    if UPSTREAM_FIRMWARE_DIR[layout]:
        mounts.update("%s/%s/%s" % (UPSTREAM_FIRMWARE_DIR[layout], version, blob) for blob in FIRMWARE)
    mounts.update(UPSTREAM_BINARIES[layout])
    return mounts, links, folders


# --- fixtures and helpers ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trees():
    if shutil.which("dpkg-deb") is None or shutil.which("readelf") is None or shutil.which("ldconfig") is None:
        pytest.fail("needs dpkg-deb, readelf and ldconfig: apt-get install dpkg-dev binutils libc-bin", pytrace=False)
    try:
        return {(release, layout): nvidia_debs.tree(release, layout) for release, layout in TREES}
    except nvidia_debs.Unavailable as exc:
        pytest.fail("Debian's NVIDIA packages cannot be downloaded (deb.debian.org, non-free): %s" % exc, pytrace=False)


def facts_of(tree, layout):
    facts = discovery.discover_node(str(tree), driver_root=DRIVER_ROOTS[layout])
    # The trees hold no device nodes and no /proc GPUs: the kernel side of a node with one GPU.
    return dict(facts, device_nodes=[CONTROL, GPU0], gpus=[dict(GPU)])


def edits(spec):
    """``(mounts {container path: host path}, links {link: target}, folders)`` of a spec's common edits."""
    common = spec["containerEdits"]
    mounts = {m["containerPath"]: m["hostPath"] for m in common["mounts"]}
    hooks = {h["args"][1]: h["args"] for h in common["hooks"]}
    links = {}
    for pair in hooks["create-symlinks"][3::2]:
        target, link = pair.split("::")
        links[link] = target
    return mounts, links, hooks["update-ldcache"][3::2]


# --- tests ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("release, layout", TREES, ids=TREE_IDS)
def test_every_real_library_is_listed_with_its_soname(trees, release, layout):
    tree = trees[(release, layout)]
    facts = discovery.discover_node(str(tree), driver_root=DRIVER_ROOTS[layout])
    assert facts["driver_version"] == release.version
    expected = nvidia_debs.real_libraries(tree, DRIVER_ROOTS[layout], release)
    got = {lib["path"]: lib["soname"] for lib in facts["libraries"]}
    assert got == expected
    # The table above is what readelf says of these packages.
    table = {"%s.so.%s" % (stem, release.version): None if suffix is None else
             "%s.so.%s" % (stem, release.version if suffix == "V" else suffix)
             for stem, suffix in LIBRARIES[release.version].items()}
    table.update(UNVERSIONED)
    assert {posixpath.basename(path): soname for path, soname in expected.items()} == table
    # No device nodes in these trees: that is the only warning.
    assert [w for w in facts["warnings"] if not w.startswith("no NVIDIA device nodes")] == []
    assert facts["skipped_libraries"] == [] and facts["dangling_links"] == []
    root = DRIVER_ROOTS[layout].rstrip("/")
    assert facts["firmware"] == ["%s/%s/%s/%s" % (root, "firmware/nvidia" if layout == "cos" else "lib/firmware/nvidia",
                                                  release.version, blob) for blob in FIRMWARE]
    dev_linked = {posixpath.basename(link["path"]) for link in facts["dev_links"]}
    assert dev_linked == {stem + ".so" for stem in DEV_LINKED}


@pytest.mark.parametrize("mode", ["management", "gpu"])
@pytest.mark.parametrize("release, layout", TREES, ids=TREE_IDS)
def test_spec_carries_everything_nvidias_generator_does(trees, release, layout, mode):
    facts = facts_of(trees[(release, layout)], layout)
    spec = cdi.build_spec(facts, mode=mode)
    mounts, links, folders = edits(spec)
    up_mounts, up_links, up_folders = upstream_management(release, layout)
    assert sorted(up_mounts - set(mounts)) == []
    for pair in up_links:
        target, link = pair.split("::")
        assert link in links, pair
        assert target in ("*", links[link]), (pair, links[link])
    assert sorted(up_folders - set(folders)) == []
    # Beyond it: libnvidia-api.so.1, the SONAME link of every library, the config files, and per layout
    # COS's firmware and Debian's vdpau/ link and folder.
    assert LIBRARY_DIR[layout] + "/libnvidia-api.so.1" in mounts
    assert "libGLX_nvidia.so.0" == links[LIBRARY_DIR[layout] + "/libGLX_indirect.so.0"]
    assert VULKAN_ICD[layout] in mounts
    if layout == "cos":
        assert "/lib/firmware/nvidia/%s/gsp_ga10x.bin" % release.version in mounts
    if layout == "debian":
        vdpau = MULTIARCH + "/vdpau"
        assert links[vdpau + "/libvdpau_nvidia.so.1"] == LIBRARY_DIR["debian"] + "/libvdpau_nvidia.so." + release.version
        assert vdpau in folders
    else:
        assert LIBRARY_DIR[layout] + "/vdpau" in folders
    # Every mount's host path is a file of the tree as the node resolves it (no host_root in it).
    tree = trees[(release, layout)]
    assert all((tree / discovery.resolve_in_root(str(tree), host).lstrip("/")).is_file() for host in mounts.values())


@pytest.mark.parametrize("release, layout", TREES, ids=TREE_IDS)
def test_per_gpu_spec_carries_the_same_files_as_the_management_spec(trees, release, layout):
    facts = facts_of(trees[(release, layout)], layout)
    management = cdi.build_spec(facts, mode="management")
    gpu = cdi.build_spec(facts, mode="gpu")
    for key in ("mounts", "hooks", "env"):
        assert gpu["containerEdits"][key] == management["containerEdits"][key], key
    assert [d["name"] for d in gpu["devices"]] == ["0", GPU["uuid"], "all"]


# A stand-in for nvidia-cdi-hook (not available offline), run by runc as the spec's createContainer hook
# inside the container's mount namespace before pivot_root: create-symlinks makes each --link TARGET::LINK
# in the container's root as the real hook does; the other hooks only log their arguments.
HOOK = """#!/bin/sh
echo "$@" >> %(log)s
[ "$1" = create-symlinks ] || exit 0
shift
while [ $# -gt 1 ]; do
    if [ "$1" = --link ]; then
        target=${2%%%%::*}; link=%(root)s${2#*::}
        mkdir -p "${link%%/*}" && ln -s "$target" "$link"
        shift
    fi
    shift
done
"""


@pytest.fixture
def podman_ready():
    reason = cdi_tools.podman_missing()
    if reason:
        pytest.skip(reason)


def podman_mounts(tree, layout):
    """``(binds, overlays)`` for cdi_tools.podman_run that put the tree's driver at its host paths."""
    root = DRIVER_ROOTS[layout]
    if layout == "debian":  # the driver lives in /usr (and its alternatives in /etc) beside the host's files
        return [], [(tree / "usr", "/usr"), (tree / "etc", "/etc")]
    if layout == "cos":
        return [(None, "/home"), (tree / root.lstrip("/"), root)], []
    return [(tree / root.lstrip("/"), root)], []  # /run is the namespace's own tmpfs already


@pytest.mark.parametrize("mode, device", [("management", "management.nvidia.com/gpu=all"), ("gpu", "nvidia.com/gpu=0")])
@pytest.mark.parametrize("release, layout", TREES, ids=TREE_IDS)
def test_podman_sees_every_mount_and_link_of_a_real_spec(trees, tmp_path, podman_ready, release, layout, mode, device):
    tree = trees[(release, layout)]
    workdir = tmp_path / "podman"
    log = tmp_path / "hook.log"
    hook = tmp_path / "nvidia-cdi-hook"
    hook.write_text(HOOK % {"log": log, "root": workdir / "rootfs"})
    hook.chmod(0o755)
    facts = facts_of(tree, layout)
    spec = cdi.build_spec(facts, mode=mode, hook_path=str(hook))
    (tmp_path / "cdi").mkdir()
    (tmp_path / "cdi" / (mode + ".yaml")).write_text(cdi.render(spec, "yaml", facts))
    mounts, links, _folders = edits(spec)
    script = ('for p in %s; do [ -f "$p" ] && echo "file $p"; done; '
              'for p in %s; do [ -L "$p" ] && [ -e "$p" ] && echo "link $p $(readlink "$p")"; done; '
              'for d in /dev/nvidiactl /dev/nvidia0; do [ -c $d ] && echo "device $d"; done' % (
                  " ".join(sorted(mounts)), " ".join(sorted(links))))
    binds, overlays = podman_mounts(tree, layout)
    proc = cdi_tools.podman_run(tmp_path / "cdi", [device], script, workdir,
                                binds=binds, overlays=overlays)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = proc.stdout.splitlines()
    assert sorted(set(mounts) - {line.split()[1] for line in seen if line.startswith("file ")}) == []
    made = {line.split()[1]: line.split()[2] for line in seen if line.startswith("link ")}
    assert made == links
    assert "device /dev/nvidiactl" in seen and "device /dev/nvidia0" in seen
    # Everything NVIDIA's generator would give the container is there.
    up_mounts, up_links, _up_folders = upstream_management(release, layout)
    assert up_mounts <= set(mounts) and {pair.split("::")[1] for pair in up_links} <= set(made)
    assert [line.split()[0] for line in log.read_text().splitlines()] == [
        "create-symlinks", "enable-cuda-compat", "update-ldcache"]
