"""Real NVIDIA driver files from Debian's bookworm packages, laid out as Debian and as GKE's COS.

Downloaded once into ``.cache/nvidia-debs/`` with a private sources list and apt state there (the
machine's apt configuration is not touched), as ../shared/TESTBED.md describes, then unpacked with
``dpkg-deb -x``. ``debian_tree()`` adds the alternatives links nvidia-alternative's postinst makes
(read from the package's own postinst); ``cos_tree()`` puts the same files where GKE keeps them
(``lib64/``, ``lib64/vdpau/``, ``bin/``) with their SONAME links.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "nvidia-debs"
SUITE = "bookworm"
VERSION = "535.261.03"
DEB_VERSION = VERSION + "-1"
SOURCES = "deb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware\n"
PACKAGES = (
    "libcuda1", "libcudadebugger1", "libegl-nvidia0", "libgl1-nvidia-glvnd-glx", "libgles-nvidia1", "libgles-nvidia2",
    "libglx-nvidia0", "libnvcuvid1", "libnvidia-allocator1", "libnvidia-api1", "libnvidia-cfg1", "libnvidia-eglcore",
    "libnvidia-encode1", "libnvidia-fbc1", "libnvidia-glcore", "libnvidia-glvkspirv", "libnvidia-ml1", "libnvidia-ngx1",
    "libnvidia-nvvm4", "libnvidia-opticalflow1", "libnvidia-pkcs11-openssl3", "libnvidia-ptxjitcompiler1",
    "libnvidia-rtcore", "libnvoptix1", "nvidia-opencl-icd", "nvidia-vdpau-driver", "nvidia-vulkan-icd", "nvidia-smi",
    "nvidia-egl-icd", "nvidia-alternative",
)
MULTIARCH = "usr/lib/x86_64-linux-gnu"
SLAVE_RE = re.compile(r"add_multiarch_slave /usr/lib (\S*?) ?(lib\S+) /usr/lib nvidia/current/\)")
COS_DRIVER_ROOT = "home/kubernetes/bin/nvidia"


class Unavailable(Exception):
    """The packages cannot be downloaded here."""


def _apt(*args):
    apt = CACHE / "apt"
    return ["apt-get", "-q", "-o", "Dir::Etc::sourcelist=%s" % (apt / "sources.list"),
            "-o", "Dir::Etc::sourceparts=/dev/null", "-o", "Dir::State::Lists=%s" % (apt / "lists"),
            "-o", "Dir::Cache=%s" % (apt / "cache"), "-o", "APT::Sandbox::User=root"] + list(args)


def download():
    """The .deb files (downloaded unless already cached); raises Unavailable when apt cannot get them."""
    debs_dir = CACHE / SUITE
    debs = sorted(debs_dir.glob("*_%s_*.deb" % DEB_VERSION))
    if len(debs) >= len(PACKAGES):
        return debs
    if shutil.which("apt-get") is None:
        raise Unavailable("no apt-get")
    apt = CACHE / "apt"
    for sub in ("lists/partial", "cache/archives/partial"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(SOURCES)
    debs_dir.mkdir(parents=True, exist_ok=True)
    for cmd in (_apt("update"), _apt("download", *["%s=%s" % (p, DEB_VERSION) for p in PACKAGES])):
        done = subprocess.run(cmd, cwd=debs_dir, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise Unavailable("%s: %s" % (" ".join(cmd[:2] + cmd[-1:]), done.stderr.strip()[-500:]))
    return sorted(debs_dir.glob("*_%s_*.deb" % DEB_VERSION))


def _built_once(name, build):
    """``.cache/nvidia-debs/<suite>-<name>``, made by ``build(tree)`` unless a finished one is there
    (a tree a killed run left half made is made again)."""
    tree = CACHE / ("%s-%s" % (SUITE, name))
    if (tree / ".done").exists():
        return tree
    if tree.exists():
        shutil.rmtree(tree)
    build(tree)
    (tree / ".done").write_text("")
    return tree


def _unpack(tree):
    tree.mkdir(parents=True)
    for deb in download():
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True)
        if deb.name.startswith("nvidia-alternative_"):
            subprocess.run(["dpkg-deb", "-e", str(deb), str(tree / ".alternative")], check=True)


def _unpacked():
    return _built_once("unpacked", _unpack)


def _lay_out_debian(tree):
    unpacked = _unpacked()
    # Hard links: the trees share the unpacked files (about 600 MB each as copies); the tests only read them.
    shutil.copytree(unpacked, tree, symlinks=True, ignore=shutil.ignore_patterns(".alternative", ".done"),
                    copy_function=os.link)
    current = "/%s/nvidia/current" % MULTIARCH
    postinst = (unpacked / ".alternative" / "postinst").read_text()
    for sub, name in SLAVE_RE.findall(postinst):
        sub = sub.strip('"')
        if not os.path.lexists(tree / current.lstrip("/") / name):
            continue
        alternative = "/etc/alternatives/nvidia--%s-x86_64-linux-gnu" % name
        (tree / "etc/alternatives").mkdir(parents=True, exist_ok=True)
        os.symlink(current + "/" + name, tree / alternative.lstrip("/"))
        link = tree / MULTIARCH / sub / name
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(alternative, link)
    _proc_version(tree)


def debian_tree():
    """A host_root holding the packages as Debian installs them (driver_root ``/``)."""
    return _built_once("debian", _lay_out_debian)


def _lay_out_cos(tree):
    unpacked = _unpacked()
    lib64 = tree / COS_DRIVER_ROOT / "lib64"
    (lib64 / "vdpau").mkdir(parents=True)
    for directory in (unpacked / MULTIARCH, unpacked / MULTIARCH / "nvidia/current"):
        for entry in directory.iterdir():
            if entry.is_file() and not entry.is_symlink() and entry.name.startswith("lib"):
                target = lib64 / ("vdpau" if entry.name.startswith("libvdpau_") else "") / entry.name
                os.link(entry, target)
                soname = readelf_soname(target)
                if soname and soname != entry.name:
                    os.symlink(entry.name, target.parent / soname)
        for entry in directory.iterdir():
            # The packages' libX.so development links, as NVIDIA's installer leaves them on COS too.
            if entry.is_symlink() and entry.name.endswith(".so") and (lib64 / os.readlink(entry)).exists():
                os.symlink(os.readlink(entry), lib64 / entry.name)
    (tree / COS_DRIVER_ROOT / "bin").mkdir(parents=True)
    for binary in (unpacked / "usr/lib/nvidia/current").glob("nvidia-smi"):
        os.link(binary, tree / COS_DRIVER_ROOT / "bin" / binary.name)
    _proc_version(tree)


def cos_tree():
    """A host_root with the same libraries where GKE keeps them on COS."""
    return _built_once("cos", _lay_out_cos)


def _proc_version(tree):
    """The loaded kernel module's version, as a node with the driver running has it."""
    proc = tree / "proc/driver/nvidia"
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Sat Jul 19 2025\n" % VERSION)


def readelf_soname(path):
    """The DT_SONAME ``readelf -d`` gives, or None."""
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    match = re.search(r"\(SONAME\)\s+Library soname: \[(.+)\]", out)
    return match.group(1) if match else None


def real_libraries(tree, driver_root):
    """``{host path: SONAME}`` of every versioned library file under the tree's driver root."""
    found = {}
    for path in (Path(tree) / driver_root.lstrip("/")).rglob("lib*.so.%s" % VERSION):
        if path.is_file() and not path.is_symlink():
            found["/" + str(path.relative_to(tree))] = readelf_soname(path)
    return found
