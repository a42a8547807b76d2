"""Build fake GPU nodes: a directory used as ``host_root`` that looks like a real node.

Libraries are real ELF shared objects built by gcc (one build, then the SONAME is set per
library), device nodes are real (mknod, so root is needed), and the /proc files have the
kernel's formats. Layouts:

- ``cos``: GKE on Container-Optimized OS; driver under /home/kubernetes/bin/nvidia, no dev/,
  sbin/ or etc/ld.so.cache there; device nodes in the node's /dev.
- ``ubuntu``: driver libraries in /usr/lib/x86_64-linux-gnu with a real /etc/ld.so.cache.
- ``driver-container``: a full driver tree at /run/nvidia/driver with its own dev/.
- ``debian``: Debian's packages (bookworm's nvidia-driver): the real files in
  /usr/lib/x86_64-linux-gnu/nvidia/current/ with their SONAME and ``libX.so`` links there, reached
  from /usr/lib/x86_64-linux-gnu/ (and its vdpau/ and nvidia/) through /etc/alternatives links as
  nvidia-alternative's postinst makes them, libnvidia-vulkan-producer without a SONAME, and
  libnvidia-cfg.so.1 only in /usr/lib/x86_64-linux-gnu/nvidia/.

Opt-in extras (the layouts above are unchanged without them): ``vdpau`` (libvdpau_nvidia in a
vdpau/ folder), ``dev_links`` (``libX.so`` links), ``compute_only`` (no GL, EGL, GLES or Vulkan files),
``other_version`` (the libraries of a second driver version left beside them).

Command line: ``fakenode.py --layout cos [--gpus N] [--driver-version V] DIR``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import fake_k3s

REPO = Path(__file__).resolve().parents[2]
# The gcc-built template library is cached in the checkout; from an installed collection that a
# user cannot write, in the temp dir.
CACHE = REPO / ".cache" / "fakenode"
if not os.access(REPO, os.W_OK):
    CACHE = Path(tempfile.gettempdir()) / ("gpu-node-fakenode-%d" % os.getuid())
DEFAULT_DRIVER_VERSION = "535.104.12"
NVIDIA_MAJOR = 195
UVM_MAJOR = 509
CAPS_MAJOR = 237
SONAME_PLACEHOLDER = "libPLACEHOLDER" + "x" * 50 + ".so"

# (file name prefix, SONAME suffix); "V" means the SONAME carries the full driver version.
DRIVER_LIBRARIES = (
    ("libcuda", "1"),
    ("libnvidia-ml", "1"),
    ("libnvidia-ptxjitcompiler", "1"),
    ("libnvidia-nvvm", "4"),
    ("libnvidia-opencl", "1"),
    ("libnvidia-encode", "1"),
    ("libnvcuvid", "1"),
    ("libnvidia-opticalflow", "1"),
    ("libnvidia-cfg", "1"),
    ("libnvidia-allocator", "1"),
    ("libnvidia-gpucomp", "V"),
    ("libnvidia-eglcore", "V"),
    ("libnvidia-glcore", "V"),
    ("libnvidia-glsi", "V"),
    ("libnvidia-tls", "V"),
    ("libnvidia-rtcore", "V"),
    ("libnvoptix", "1"),
    ("libGLX_nvidia", "0"),
    ("libEGL_nvidia", "0"),
    ("libGLESv2_nvidia", "2"),
    ("libGLESv1_CM_nvidia", "1"),
)
# What Debian's bookworm packages add to DRIVER_LIBRARIES (None: a library without a SONAME).
DEBIAN_LIBRARIES = (
    ("libnvidia-fbc", "1"),
    ("libnvidia-ngx", "1"),
    ("libnvidia-vulkan-producer", None),
)
# The libraries a compute-only node has (no GL, EGL, GLES, Vulkan or video libraries).
COMPUTE_LIBRARIES = ("libcuda", "libnvidia-ml", "libnvidia-ptxjitcompiler", "libnvidia-nvvm", "libnvidia-opencl",
                     "libnvidia-cfg", "libnvidia-allocator", "libnvidia-gpucomp")
# The libraries that get a libX.so development link (those Debian's packages ship one for).
DEV_LINKED = ("libcuda", "libnvidia-ml", "libnvcuvid", "libnvidia-encode", "libnvidia-opticalflow", "libnvidia-fbc",
              "libnvidia-ngx")
VDPAU_LIBRARY = ("libvdpau_nvidia", "1")
# Debian's nvidia-alternative: (directory under usr/lib/<multiarch>/, link name) for the names it links
# from /etc/alternatives/nvidia--<name>-<multiarch> to usr/lib/<multiarch>/nvidia/current/<name>.
DEBIAN_ALTERNATIVES = (
    ("vdpau/", "libvdpau_nvidia.so.1"), ("", "libGLX_nvidia.so.0"), ("", "libEGL_nvidia.so.0"),
    ("", "libGLESv1_CM_nvidia.so.1"), ("", "libGLESv2_nvidia.so.2"), ("", "libcuda.so.1"), ("", "libcuda.so"),
    ("", "libcudadebugger.so.1"), ("", "libnvcuvid.so.1"), ("", "libnvcuvid.so"), ("", "libnvidia-allocator.so.1"),
    ("", "libnvidia-api.so.1"), ("", "libnvidia-encode.so.1"), ("", "libnvidia-fbc.so.1"), ("", "libnvidia-ml.so.1"),
    ("", "libnvidia-ngx.so.1"), ("", "libnvidia-nvvm.so.4"), ("", "libnvidia-nvvm.so.{version}"),
    ("", "libnvidia-opencl.so.1"), ("", "libnvidia-opticalflow.so.1"), ("", "libnvidia-ptxjitcompiler.so.1"),
    ("", "libnvoptix.so.1"), ("nvidia/", "libnvidia-cfg.so.1"),
)
BINARIES = ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server")
FIRMWARE = ("gsp_ga10x.bin", "gsp_tu10x.bin")
LAYOUTS = {
    "cos": {
        "driver_root": "/home/kubernetes/bin/nvidia",
        "lib_dir": "lib64",
        "bin_dir": "bin",
        "firmware_dir": "firmware/nvidia",
        "vulkan_dir": "vulkan/icd.d",
        "os_release": 'NAME="Container-Optimized OS"\nID=cos\nPRETTY_NAME="Container-Optimized OS from Google"\n'
        'HOME_URL="https://cloud.google.com/container-optimized-os/docs"\nVERSION=109\nVERSION_ID=109\nBUILD_ID=17800.147.54\n',
        "model": "Tesla T4",
    },
    "ubuntu": {
        "driver_root": "/",
        "lib_dir": "usr/lib/x86_64-linux-gnu",
        "bin_dir": "usr/bin",
        "firmware_dir": "lib/firmware/nvidia",
        "vulkan_dir": "usr/share/vulkan/icd.d",
        "os_release": 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\n',
        "model": "NVIDIA A100-SXM4-40GB",
    },
    "driver-container": {
        "driver_root": "/run/nvidia/driver",
        "lib_dir": "usr/lib/x86_64-linux-gnu",
        "bin_dir": "usr/bin",
        "firmware_dir": "lib/firmware/nvidia",
        "vulkan_dir": "etc/vulkan/icd.d",
        "os_release": 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\n',
        "model": "NVIDIA H100 80GB HBM3",
    },
    "debian": {
        "driver_root": "/",
        "lib_dir": "usr/lib/x86_64-linux-gnu/nvidia/current",
        "multiarch_dir": "usr/lib/x86_64-linux-gnu",
        "bin_dir": "usr/bin",
        "firmware_dir": "lib/firmware/nvidia",
        "vulkan_dir": "usr/share/vulkan/icd.d",
        "os_release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
        'VERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n',
        "model": "NVIDIA L4",
    },
}
COS_MOUNTINFO = """\
22 1 254:3 / / ro,relatime shared:1 - ext2 /dev/root ro
23 22 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs devtmpfs rw,size=7643792k,mode=755
24 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:7 - proc proc rw
25 22 0:24 / /etc rw,nosuid,nodev,relatime shared:15 - tmpfs tmpfs rw
26 22 0:25 / /tmp rw,nosuid,nodev,relatime shared:16 - tmpfs tmpfs rw
27 22 8:1 /var /var rw,nosuid,nodev,noexec,relatime shared:17 - ext4 /dev/sda1 rw,commit=30
28 22 8:1 /home /home rw,nosuid,nodev,noexec,relatime shared:18 - ext4 /dev/sda1 rw,commit=30
29 28 8:1 /home/kubernetes/bin /home/kubernetes/bin rw,nosuid,nodev,relatime shared:25 - ext4 /dev/sda1 rw,commit=30
30 27 8:1 /var/lib/google /var/lib/google rw,nosuid,nodev,relatime shared:19 - ext4 /dev/sda1 rw,commit=30
"""
# containerd's config as GKE writes it on COS nodes (version 2, comments, runc with SystemdCgroup).
GKE_CONTAINERD_CONFIG = """\
version = 2
required_plugins = ["io.containerd.grpc.v1.cri"]
# Kubernetes doesn't use containerd restart manager.
disabled_plugins = ["io.containerd.internal.v1.restart"]
oom_score = -999

[debug]
  level = "info"

[grpc]
  gid = 412

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  max_container_log_line_size = 262144
  sandbox_image = "gke.gcr.io/pause:3.8"
[plugins."io.containerd.grpc.v1.cri".cni]
  # CNI binaries live beside the kubelet on COS.
  bin_dir = "/home/kubernetes/bin"
  conf_dir = "/etc/cni/net.d"
  conf_template = ""
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
  discard_unpacked_layers = true
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/hosts.d"
"""
DEBIAN_MOUNTINFO = """\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
23 22 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,mode=755
24 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:7 - proc proc rw
25 22 0:24 / /run rw,nosuid,nodev,noexec,relatime shared:5 - tmpfs tmpfs rw,mode=755
"""


@dataclass
class FakeNode:
    root: Path
    layout: str
    driver_root: str
    dev_root: str
    driver_version: str
    gpus: list = field(default_factory=list)
    libraries: list = field(default_factory=list)  # [{"path": host path, "soname": ...}]
    binaries: list = field(default_factory=list)
    firmware: list = field(default_factory=list)
    device_nodes: list = field(default_factory=list)  # [{"path": /dev/..., "major", "minor"}]
    dev_links: list = field(default_factory=list)  # [{"path": host path of libX.so, "library": host path}]
    vdpau_links: list = field(default_factory=list)  # links in a vdpau/ folder to a library elsewhere
    other_libraries: list = field(default_factory=list)  # host paths of another version's libraries

    def node_path(self, host_path):
        return self.root / str(host_path).lstrip("/")

    def summary(self):
        return {
            "host_root": str(self.root), "layout": self.layout, "driver_root": self.driver_root,
            "dev_root": self.dev_root, "driver_version": self.driver_version, "gpus": self.gpus,
            "libraries": len(self.libraries), "device_nodes": [d["path"] for d in self.device_nodes],
        }


def _template_library(with_soname=True):
    """One real shared object built by gcc, with a placeholder SONAME to be patched per library
    (``with_soname=False``: one without any DT_SONAME)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    built = CACHE / ("template.so" if with_soname else "template-nosoname.so")
    if built.exists():
        return built.read_bytes()
    # Built next to the cache, so the rename stays on one filesystem (a tmpfs /tmp is another).
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        src = Path(tmp) / "empty.c"
        src.write_text("int fake_driver_symbol(void) { return 0; }\n")
        out = Path(tmp) / "template.so"
        soname = ["-Wl,-soname," + SONAME_PLACEHOLDER] if with_soname else []
        try:
            subprocess.run(["gcc", "-shared", "-fPIC"] + soname + ["-o", str(out), str(src)],
                           check=True, capture_output=True)
        except FileNotFoundError:
            raise SystemExit("gcc is needed to build the simulated driver libraries (real ELF shared objects):"
                             " install gcc and libc6-dev (Debian, Ubuntu) or gcc and glibc-devel (RHEL)") from None
        os.replace(out, built)
    return built.read_bytes()


def elf_library(soname):
    """Bytes of a real ELF shared object whose DT_SONAME is ``soname`` (None: no DT_SONAME at all)."""
    if soname is None:
        return _template_library(with_soname=False)
    template = _template_library()
    placeholder = SONAME_PLACEHOLDER.encode()
    if len(soname) > len(placeholder):
        raise ValueError("SONAME too long for the fake library template: %s" % soname)
    patched = soname.encode() + b"\0" * (len(placeholder) - len(soname))
    assert template.count(placeholder) == 1, "placeholder SONAME not found exactly once in template"
    return template.replace(placeholder, patched)


def _write(path, data, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    path.chmod(mode)


def _mknod(path, major, minor, mode=0o666):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mknod(str(path), 0o020000 | mode, os.makedev(major, minor))
    path.chmod(mode)


def gpu_uuid(index, seed="fakenode"):
    digest = hashlib.sha256(("%s-%d" % (seed, index)).encode()).hexdigest()
    return "GPU-%s-%s-%s-%s-%s" % (digest[:8], digest[8:12], digest[12:16], digest[16:20], digest[20:32])


def pci_bus_id(index):
    return "0000:%02x:00.0" % (0x10 + index * 0x10) if index < 15 else "0001:%02x:00.0" % index


def gpu_information(model, uuid, bus, minor):
    return (
        "Model: \t\t %s\nIRQ:   \t\t 36\nGPU UUID: \t %s\nVideo BIOS: \t 90.04.96.00.01\n"
        "Bus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\n"
        "Bus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n" % (model, uuid, bus, minor)
    )


def proc_version(version):
    return (
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Wed Aug 16 20:38:55 UTC 2023\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n" % version
    )


def proc_devices(version, loaded, mig):
    chars = [(1, "mem"), (4, "/dev/vc/0"), (4, "tty"), (5, "/dev/tty"), (10, "misc"), (136, "pts")]
    if loaded:
        major_name = "nvidia-frontend" if int(version.split(".")[0]) < 550 else "nvidia"
        chars.append((NVIDIA_MAJOR, major_name))
        chars.append((UVM_MAJOR, "nvidia-uvm"))
        if mig:
            chars.append((CAPS_MAJOR, "nvidia-caps"))
    chars.sort()
    lines = ["Character devices:"] + ["%3d %s" % c for c in chars]
    lines += ["", "Block devices:", "  7 loop", "  8 sd", "254 virtblk"]
    return "\n".join(lines) + "\n"


def build_node(root, layout="cos", driver_version=DEFAULT_DRIVER_VERSION, gpus=2, mig=False,
               extra_libraries=0, missing=(), broken=(), kernel_version=None, vdpau=False, dev_links=False,
               compute_only=False, other_version=None):
    """Build a fake node under ``root`` and return a FakeNode describing it.

    ``vdpau``: libvdpau_nvidia.so.<version> (SONAME libvdpau_nvidia.so.1) in the library directory's
    vdpau/ folder (``debian``: in nvidia/current/, reached by an alternatives link in vdpau/, always).
    ``dev_links``: a ``libX.so -> SONAME`` link beside each library of DEV_LINKED (``debian``: always).
    ``compute_only``: only COMPUTE_LIBRARIES, and no Vulkan or EGL files.
    ``other_version``: the libraries of that driver version too, as regular files beside these
    (an upgrade that did not finish); the SONAME links lead to ``driver_version``'s.

    ``missing``: any of ``libcuda``, ``proc_version``, ``nvidiactl``, ``devices``, ``gpus``,
    ``kernel_module``, ``ld_cache``, ``firmware``, ``binaries``.
    ``broken``: any of ``gpu_information`` (first GPU's file garbled), ``library`` (a truncated
    library), ``ld_cache`` (a truncated cache), ``soname`` (libcuda built without a SONAME),
    ``dangling_link`` (libcuda.so.1 points to a libcuda of another version, which is missing).
    ``kernel_version``: the loaded kernel module's version, when it is not ``driver_version``
    (the version of the user-space files).
    """
    if layout not in LAYOUTS:
        raise ValueError("unknown layout %r (choose from %s)" % (layout, ", ".join(LAYOUTS)))
    unknown = set(missing) - {"libcuda", "proc_version", "nvidiactl", "devices", "gpus", "kernel_module",
                              "ld_cache", "firmware", "binaries"}
    if unknown:
        raise ValueError("unknown 'missing' items: %s" % sorted(unknown))
    unknown_broken = set(broken) - {"gpu_information", "library", "ld_cache", "soname", "dangling_link"}
    if unknown_broken:
        raise ValueError("unknown 'broken' items: %s" % sorted(unknown_broken))
    spec = LAYOUTS[layout]
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    driver_root = spec["driver_root"]
    dev_root = driver_root if layout == "driver-container" else "/"
    node = FakeNode(root, layout, driver_root, dev_root, driver_version)

    def at(host_path):
        return node.node_path(host_path)

    def in_driver(rel):
        return os.path.join(driver_root, rel)

    # The host itself.
    _write(at("/etc/os-release"), spec["os_release"])
    _write(at("/proc/self/mountinfo"), COS_MOUNTINFO if layout == "cos" else DEBIAN_MOUNTINFO)
    if layout == "cos":
        _write(at("/etc/containerd/config.toml"), GKE_CONTAINERD_CONFIG)
    for tool in ("/sbin/ldconfig",) + (("/sbin/ldconfig.real",) if layout != "cos" else ()):
        _write(at(tool), "#!/bin/sh\nexit 0\n", 0o755)
    if layout == "cos":
        for rel in ("drivers/nvidia.ko", "drivers/nvidia-uvm.ko", "drivers/nvidia-modeset.ko"):
            _write(at(in_driver(rel)), b"\x7fELF fake kernel module\n")
        _write(at(in_driver("share/nvidia/nvidia-application-profiles-%s-rc" % driver_version)), "{}\n")

    # Libraries: the versioned file plus the SONAME and dev links, as the installers leave them.
    lib_dir = in_driver(spec["lib_dir"])
    debian = layout == "debian"
    libs = list(DRIVER_LIBRARIES) + (list(DEBIAN_LIBRARIES) if debian else [])
    libs += [("libnvidia-extra%03d" % i, "1") for i in range(extra_libraries)]
    if compute_only:
        libs = [lib for lib in libs if lib[0] in COMPUTE_LIBRARIES or lib[0].startswith("libnvidia-extra")]
    vdpau_dir = lib_dir if debian else os.path.join(lib_dir, "vdpau")
    placed = [(prefix, so_suffix, lib_dir) for prefix, so_suffix in libs]
    if (vdpau or debian) and not compute_only:
        placed.append(VDPAU_LIBRARY + (vdpau_dir,))
    for prefix, so_suffix, directory in placed:
        if prefix == "libcuda" and "libcuda" in missing:
            continue
        name = "%s.so.%s" % (prefix, driver_version)
        soname = name if so_suffix == "V" else None if so_suffix is None else "%s.so.%s" % (prefix, so_suffix)
        unnamed = soname is None or (prefix == "libcuda" and "soname" in broken)
        _write(at(os.path.join(directory, name)), elf_library(None if unnamed else soname), 0o755)
        if soname and soname != name:
            stale = prefix == "libcuda" and "dangling_link" in broken
            os.symlink("%s.so.530.30.02" % prefix if stale else name, at(os.path.join(directory, soname)))
        if prefix == "libcuda" or ((dev_links or debian) and prefix in DEV_LINKED):
            os.symlink(soname, at(os.path.join(directory, prefix + ".so")))
            if not (prefix == "libcuda" and "dangling_link" in broken):
                node.dev_links.append({"path": os.path.join(directory, prefix + ".so"),
                                       "library": os.path.join(directory, name)})
        node.libraries.append({"path": os.path.join(directory, name), "soname": None if unnamed else soname})
        if other_version:
            old = "%s.so.%s" % (prefix, other_version)
            old_soname = old if so_suffix == "V" else soname
            _write(at(os.path.join(directory, old)), elf_library(old_soname), 0o755)
            node.other_libraries.append(os.path.join(directory, old))
    if debian:
        _debian_alternatives(node, at, spec["multiarch_dir"], lib_dir, driver_version)
    if "library" in broken:
        _write(at(os.path.join(lib_dir, "libnvidia-broken.so.%s" % driver_version)), b"\x7fELF\x02\x01\x01")
    if layout != "cos":
        # Not a driver library: discovery must leave it alone.
        _write(at(os.path.join(spec.get("multiarch_dir", lib_dir), "libz.so.1.2.13")), elf_library("libz.so.1"))

    if "binaries" not in missing:
        for name in BINARIES:
            host_path = in_driver(os.path.join(spec["bin_dir"], name))
            _write(at(host_path), "#!/bin/sh\necho %s %s\n" % (name, driver_version), 0o755)
            node.binaries.append(host_path)
    if "firmware" not in missing:
        for name in FIRMWARE:
            host_path = in_driver(os.path.join(spec["firmware_dir"], driver_version, name))
            _write(at(host_path), b"fake GSP firmware " + name.encode())
            node.firmware.append(host_path)
    if not compute_only:
        _write(at(in_driver(os.path.join(spec["vulkan_dir"], "nvidia_icd.json"))),
               json.dumps({"file_format_version": "1.0.0",
                           "ICD": {"library_path": "libGLX_nvidia.so.0", "api_version": "1.3.242"}}, indent=4) + "\n")
    if layout != "cos":
        if not compute_only:
            _write(at(in_driver("usr/share/glvnd/egl_vendor.d/10_nvidia.json")),
                   '{\n    "file_format_version" : "1.0.0",\n    "ICD" : {\n        "library_path" : '
                   '"libEGL_nvidia.so.0"\n    }\n}\n')
        _write(at(in_driver("etc/ld.so.conf")), "/%s\n" % spec.get("multiarch_dir", spec["lib_dir"]))
        if "ld_cache" not in missing:
            subprocess.run(["ldconfig", "-r", str(at(driver_root))], check=True, capture_output=True)
            if "ld_cache" in broken:
                cache = at(in_driver("etc/ld.so.cache"))
                cache.write_bytes(cache.read_bytes()[:60])
        sock_dir = at(in_driver("run/nvidia-persistenced"))
        sock_dir.mkdir(parents=True, exist_ok=True)
        _unix_socket(sock_dir / "socket")

    # The kernel side: /proc and /dev.
    loaded = "kernel_module" not in missing
    _write(at("/proc/devices"), proc_devices(driver_version, loaded, mig))
    _write(at("/proc/modules"),
           ("nvidia_uvm 1540096 0 - Live 0x0000000000000000 (PO)\n"
            "nvidia_modeset 1290240 0 - Live 0x0000000000000000 (PO)\n"
            "nvidia 56717312 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (PO)\n" if loaded else "")
           + "overlay 151552 0 - Live 0x0000000000000000\n")
    if loaded and "proc_version" not in missing:
        _write(at("/proc/driver/nvidia/version"), proc_version(kernel_version or driver_version))
    if loaded and "gpus" not in missing:
        for index in range(gpus):
            gpu = {"index": index, "uuid": gpu_uuid(index), "pci_bus_id": pci_bus_id(index), "minor": index,
                   "model": spec["model"]}
            info = gpu_information(gpu["model"], gpu["uuid"], gpu["pci_bus_id"], index)
            if index == 0 and "gpu_information" in broken:
                info = "Model: \t\t %s\nGPU UUID: \t ???\n" % gpu["model"]
            else:
                node.gpus.append(gpu)
            _write(at("/proc/driver/nvidia/gpus/%s/information" % gpu["pci_bus_id"]), info)
    if loaded and "devices" not in missing:
        dev = [("nvidiactl", NVIDIA_MAJOR, 255), ("nvidia-modeset", NVIDIA_MAJOR, 254),
               ("nvidia-uvm", UVM_MAJOR, 0), ("nvidia-uvm-tools", UVM_MAJOR, 1)]
        dev += [("nvidia%d" % i, NVIDIA_MAJOR, i) for i in range(gpus)]
        if mig:
            minors = ["config 1", "monitor 2"]
            dev += [("nvidia-caps/nvidia-cap1", CAPS_MAJOR, 1), ("nvidia-caps/nvidia-cap2", CAPS_MAJOR, 2)]
            minor = 3
            for gpu_index in range(gpus):
                for gi in range(2):
                    minors.append("gpu%d/gi%d/access %d" % (gpu_index, gi, minor))
                    dev.append(("nvidia-caps/nvidia-cap%d" % minor, CAPS_MAJOR, minor))
                    minor += 1
                    minors.append("gpu%d/gi%d/ci0/access %d" % (gpu_index, gi, minor))
                    dev.append(("nvidia-caps/nvidia-cap%d" % minor, CAPS_MAJOR, minor))
                    minor += 1
            _write(at("/proc/driver/nvidia-caps/mig-minors"), "\n".join(minors) + "\n")
        for name, major, minor in dev:
            if name == "nvidiactl" and "nvidiactl" in missing:
                continue
            _mknod(at(os.path.join(dev_root, "dev", name)), major, minor)
            node.device_nodes.append({"path": "/dev/" + name, "major": major, "minor": minor})
    return node


def _debian_alternatives(node, at, multiarch_dir, lib_dir, version):
    """The links nvidia-alternative's postinst makes (update-alternatives): for each of
    DEBIAN_ALTERNATIVES whose file is in ``lib_dir`` (nvidia/current), ``/<multiarch_dir>/<sub><name>
    -> /etc/alternatives/nvidia--<name>-<triplet> -> /<lib_dir>/<name>``. The ``libX.so`` ones go to
    ``node.dev_links``, the vdpau/ one to ``node.vdpau_links``."""
    triplet = os.path.basename(multiarch_dir)
    for sub, name in DEBIAN_ALTERNATIVES:
        name = name.format(version=version)
        source = "/" + os.path.join(lib_dir, name)
        if not os.path.lexists(at(source)):
            continue
        alternative = "/etc/alternatives/nvidia--%s-%s" % (name, triplet)
        link = at("/" + os.path.join(multiarch_dir, sub, name))
        link.parent.mkdir(parents=True, exist_ok=True)
        at(alternative).parent.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(at(alternative)):
            os.symlink(source, at(alternative))
        os.symlink(alternative, link)
        host_link = "/" + os.path.join(multiarch_dir, sub, name)
        library = next((lib["path"] for lib in node.libraries
                        if os.path.basename(lib["path"]).startswith(name.split(".so", maxsplit=1)[0] + ".so.")), None)
        if library and name.endswith(".so"):
            node.dev_links.append({"path": host_link, "library": library})
        elif library and sub == "vdpau/":
            node.vdpau_links.append({"path": host_link, "library": library})


KUBE_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "containerd" / "kube"
KUBE_UNITS = {"k3s": "k3s", "k3s-agent": "k3s", "rke2-server": "rke2", "rke2-agent": "rke2"}


def add_kube(node, service="k3s", config="01-k3s-v2.toml", enabled=True):
    """Make ``node`` a k3s or RKE2 node: the systemd unit ``service`` (one of KUBE_UNITS), enabled,
    and the containerd config they generated at their last start (``config``: one of
    tests/fixtures/containerd/kube, which fake_k3s.start writes again at each stand-in restart)."""
    distribution = KUBE_UNITS[service]
    unit = node.node_path("/etc/systemd/system/%s.service" % service)
    _write(unit, "[Unit]\nDescription=stand-in for %s\n[Service]\nExecStart=/usr/local/bin/%s\n" % (service, distribution))
    if enabled:
        wants = node.node_path("/etc/systemd/system/multi-user.target.wants/%s.service" % service)
        wants.parent.mkdir(parents=True, exist_ok=True)
        wants.symlink_to("/etc/systemd/system/%s.service" % service)
    fake_k3s.start(str(node.root), distribution, str(KUBE_CONFIGS / config))
    return node.node_path("/var/lib/rancher/%s/agent/etc/containerd/config.toml" % distribution)


def upgrade_driver(node, version):
    """Put driver ``version`` on ``node`` as a driver upgrade does: the driver root's files are
    those of the new version (the old versioned libraries, binaries and firmware gone), and the
    loaded kernel module says the new version. Device nodes stay. Returns the new FakeNode."""
    with tempfile.TemporaryDirectory(prefix="upgrade-") as scratch:
        fresh = build_node(Path(scratch) / "node", node.layout, driver_version=version, gpus=len(node.gpus) or 2)
        old_root = node.node_path(node.driver_root)
        new_root = fresh.node_path(fresh.driver_root)
        if node.driver_root == "/":
            lib_dir = LAYOUTS[node.layout]["lib_dir"]
            for old in Path(old_root, lib_dir).glob("lib*.so*%s*" % node.driver_version):
                old.unlink()
            for lib in fresh.libraries:
                target = node.node_path(lib["path"])
                shutil.copy2(fresh.node_path(lib["path"]), target)
                soname = lib["soname"]
                if soname and soname != os.path.basename(lib["path"]):
                    link = target.with_name(soname)
                    if link.is_symlink() or link.exists():
                        link.unlink()
                    os.symlink(os.path.basename(lib["path"]), link)
            for host_path in fresh.binaries + fresh.firmware:
                node.node_path(host_path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(fresh.node_path(host_path), node.node_path(host_path))
            if (Path(old_root) / "etc" / "ld.so.cache").exists():
                subprocess.run(["ldconfig", "-r", str(old_root)], check=True, capture_output=True)
        else:
            keep = {"dev", "run", "toolkit"}  # device nodes, the persistenced socket, our install
            for entry in list(Path(old_root).iterdir()):
                if entry.name in keep:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            for entry in Path(new_root).iterdir():
                if entry.name in keep:
                    continue
                destination = Path(old_root) / entry.name
                if entry.is_dir() and not entry.is_symlink():
                    shutil.copytree(entry, destination, symlinks=True)
                else:
                    shutil.copy2(entry, destination, follow_symlinks=False)
        for proc in ("/proc/driver/nvidia/version", "/proc/devices"):
            shutil.copy2(fresh.node_path(proc), node.node_path(proc))
        node.driver_version = version
        node.libraries = fresh.libraries
        node.binaries = fresh.binaries
        node.firmware = fresh.firmware
    return node


def link_driver_root(node, target, relative=False):
    """Move the node's driver root to the host path ``target`` and leave a symlink in its place:
    absolute (``/run/nvidia/driver -> /var/lib/nvidia-driver``) or relative, as on COS
    (``/home/kubernetes/bin/nvidia -> ../../../var/lib/nvidia``). Returns the link's target text.

    The FakeNode keeps describing files under the driver root as named, the link.
    """
    link = node.node_path(node.driver_root)
    real = node.node_path(target)
    real.parent.mkdir(parents=True, exist_ok=True)
    os.rename(link, real)
    text = os.path.relpath(target, os.path.dirname(node.driver_root)) if relative else target
    os.symlink(text, link)
    return text


def _unix_socket(path):
    if path.exists():
        path.unlink()
    # bind() needs a short path: bind relative to the directory.
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path.name)
        sock.close()
    finally:
        os.chdir(cwd)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("root", help="directory to build the node in (used as host_root)")
    parser.add_argument("--layout", choices=sorted(LAYOUTS), default="cos")
    parser.add_argument("--driver-version", default=DEFAULT_DRIVER_VERSION)
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--mig", action="store_true")
    parser.add_argument("--extra-libraries", type=int, default=0)
    parser.add_argument("--missing", action="append", default=[], help="leave this out (repeatable)")
    parser.add_argument("--fresh", action="store_true", help="remove ROOT first")
    parser.add_argument("--kube", choices=sorted(KUBE_UNITS), help="make it a k3s/RKE2 node with this service")
    parser.add_argument("--kube-config", default="01-k3s-v2.toml",
                        help="the config they generated (one of tests/fixtures/containerd/kube)")
    args = parser.parse_args(argv)
    if args.fresh and os.path.exists(args.root):
        shutil.rmtree(args.root)
    if os.geteuid() != 0:
        parser.error("device nodes are made with mknod: run as root")
    node = build_node(args.root, args.layout, args.driver_version, args.gpus, args.mig,
                      args.extra_libraries, args.missing)
    if args.kube:
        add_kube(node, args.kube, args.kube_config)
    json.dump(node.summary(), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
