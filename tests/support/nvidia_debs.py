"""Real NVIDIA driver files from Debian's packages (bookworm 535.261.03, trixie 550.163.01), each laid
out three ways: as Debian installs them, as GKE keeps them on COS, and as NVIDIA's driver container
has them.

Downloaded once into ``.cache/nvidia-debs/<suite>/`` with one private sources list and apt state
there for both suites (the machine's apt configuration is not touched), as ../shared/TESTBED.md
describes, then unpacked with ``dpkg-deb -x`` into ``<suite>-unpacked``. The layouts share the
unpacked files by hard link:

- ``debian``: driver_root ``/``, merged-/usr; the alternatives links nvidia-alternative's postinst makes (read from
  the package's own postinst), so the real files stay in ``<multiarch>/nvidia/current/``;
- ``cos``: driver_root ``/home/kubernetes/bin/nvidia`` with ``lib64/``, ``lib64/vdpau/``, ``bin/`` and
  ``firmware/nvidia/<version>/``, each library with its SONAME link and the packages' ``libX.so`` links;
- ``container``: driver_root ``/run/nvidia/driver``, a full root as the driver container has it:
  ``usr/lib/x86_64-linux-gnu/`` (``vdpau/``, ``gbm/``), ``usr/bin/``, ``lib/firmware/nvidia/<version>/``
  and an ``etc/ld.so.cache`` made by ``ldconfig -r``.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
from pathlib import Path

import cache_lock

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "nvidia-debs"
# Bumped whenever a layout changes: a cached tree made by an older builder is made again.
LAYOUT_VERSION = "4"
SUITES = ("bookworm", "trixie")
SOURCES = "".join("deb http://deb.debian.org/debian %s main contrib non-free non-free-firmware\n" % suite
                  for suite in SUITES)
COMMON_PACKAGES = (
    "libcuda1", "libcudadebugger1", "libegl-nvidia0", "libgl1-nvidia-glvnd-glx", "libgles-nvidia1", "libgles-nvidia2",
    "libglx-nvidia0", "libnvcuvid1", "libnvidia-allocator1", "libnvidia-api1", "libnvidia-cfg1", "libnvidia-eglcore",
    "libnvidia-encode1", "libnvidia-fbc1", "libnvidia-glcore", "libnvidia-glvkspirv", "libnvidia-ml1", "libnvidia-ngx1",
    "libnvidia-nvvm4", "libnvidia-opticalflow1", "libnvidia-pkcs11-openssl3", "libnvidia-ptxjitcompiler1",
    "libnvidia-rtcore", "libnvoptix1", "nvidia-opencl-icd", "nvidia-vdpau-driver", "nvidia-vulkan-icd", "nvidia-smi",
    "nvidia-egl-icd", "nvidia-alternative", "nvidia-cuda-mps", "firmware-nvidia-gsp", "nvidia-egl-common",
    "nvidia-vulkan-common",
)
Release = collections.namedtuple("Release", "suite version deb_version packages")
BOOKWORM = Release("bookworm", "535.261.03", "535.261.03-1", COMMON_PACKAGES)
# 550 splits the shader compiler out of libnvidia-glcore/eglcore into libnvidia-gpucomp.
TRIXIE = Release("trixie", "550.163.01", "550.163.01-2", COMMON_PACKAGES + ("libnvidia-gpucomp",))
RELEASES = (BOOKWORM, TRIXIE)
MULTIARCH = "usr/lib/x86_64-linux-gnu"
DRIVER_ROOTS = {"debian": "/", "cos": "/home/kubernetes/bin/nvidia", "container": "/run/nvidia/driver"}
LAYOUTS = tuple(DRIVER_ROOTS)
COS_DRIVER_ROOT = DRIVER_ROOTS["cos"].lstrip("/")
# nvidia-alternative's postinst: $(add_multiarch_slave /usr/lib SUB NAME /usr/lib nvidia/current/) and
# $(add_slave LINK NAME SOURCE).
MULTIARCH_SLAVE_RE = re.compile(r"\$\(add_multiarch_slave /usr/lib (\S*?) ?(\S+) /usr/lib nvidia/current/\)")
SLAVE_RE = re.compile(r"\$\(add_slave (/\S+) (\S+) (/\S+)\)")
# The driver's binaries, as NVIDIA's installer puts them in one bin/ directory.
BINARIES = ("usr/lib/nvidia/current/nvidia-smi", "usr/bin/nvidia-cuda-mps-control", "usr/sbin/nvidia-cuda-mps-server")
# The one driver library whose file name has no driver version.
UNVERSIONED_LIBRARIES = ("libnvidia-api.so.1",)


class Unavailable(Exception):
    """The packages cannot be downloaded here."""


def _apt(*args):
    apt = CACHE / "apt"
    return ["apt-get", "-q", "-o", "Dir::Etc::sourcelist=%s" % (apt / "sources.list"),
            "-o", "Dir::Etc::sourceparts=/dev/null", "-o", "Dir::State::Lists=%s" % (apt / "lists"),
            "-o", "Dir::Cache=%s" % (apt / "cache"), "-o", "APT::Sandbox::User=root"] + list(args)


def _debs(release):
    return sorted((CACHE / release.suite).glob("*_%s_*.deb" % release.deb_version))


def download(release):
    """The release's .deb files (downloaded unless already cached); raises Unavailable when apt cannot
    get them."""
    debs = _debs(release)
    if len(debs) >= len(release.packages):
        return debs
    if shutil.which("apt-get") is None:
        raise Unavailable("no apt-get")
    apt = CACHE / "apt"
    for sub in ("lists/partial", "cache/archives/partial"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(SOURCES)
    (CACHE / release.suite).mkdir(parents=True, exist_ok=True)
    wanted = ["%s=%s" % (p, release.deb_version) for p in release.packages]
    for cmd in (_apt("update"), _apt("download", *wanted)):
        done = subprocess.run(cmd, cwd=CACHE / release.suite, capture_output=True, text=True, timeout=600,
                              check=False)
        if done.returncode != 0:
            raise Unavailable("%s: %s" % (" ".join(cmd[:2] + cmd[-1:]), done.stderr.strip()[-500:]))
    return _debs(release)


def _built_once(release, name, build):
    """``.cache/nvidia-debs/<suite>-<name>``, made by ``build(release, tree)`` unless one finished by this
    LAYOUT_VERSION is there (a tree a killed run left half made, or an older builder made, is made again)."""
    tree = CACHE / ("%s-%s" % (release.suite, name))
    done = tree / ".done"
    if done.exists() and done.read_text() == LAYOUT_VERSION:
        return tree
    if tree.exists():
        shutil.rmtree(tree)
    build(release, tree)
    done.write_text(LAYOUT_VERSION)
    return tree


def _unpack(release, tree):
    tree.mkdir(parents=True)
    for deb in download(release):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True)
        if deb.name.startswith("nvidia-alternative_"):
            subprocess.run(["dpkg-deb", "-e", str(deb), str(tree / ".alternative")], check=True)


def _unpacked(release):
    return _built_once(release, "unpacked", _unpack)


def _firmware_files(release, unpacked):
    """The GSP firmware (bookworm's package has it under /lib, trixie's under /usr/lib)."""
    found = []
    for base in ("lib/firmware/nvidia", "usr/lib/firmware/nvidia"):
        found += sorted((unpacked / base / release.version).glob("gsp*.bin"))
    return found


def _lay_out_debian(release, tree):
    unpacked = _unpacked(release)
    # Hard links: the trees share the unpacked files (about 600 MB each as copies); the tests only read them.
    shutil.copytree(unpacked, tree, symlinks=True, ignore=shutil.ignore_patterns(".alternative", ".done"),
                    copy_function=os.link)
    # Debian 12 and 13 are merged-/usr: /lib, /bin and /sbin are links into /usr (bookworm's firmware
    # package still ships its files under /lib/firmware).
    for top in ("bin", "sbin", "lib"):
        if (tree / top).is_dir():
            shutil.copytree(tree / top, tree / "usr" / top, symlinks=True, dirs_exist_ok=True, copy_function=os.link)
            shutil.rmtree(tree / top)
        os.symlink("usr/" + top, tree / top)
    current = "/%s/nvidia/current" % MULTIARCH
    postinst = (unpacked / ".alternative" / "postinst").read_text()
    slaves = []
    for line in postinst.splitlines():
        if "libnvidia_ml_so_slave=" in line:
            continue  # made only where /usr/include/nvml.h exists (nvidia's -dev package), not here
        for sub, name in MULTIARCH_SLAVE_RE.findall(line):
            sub = sub.strip('"')
            slaves.append(("/%s/%s%s" % (MULTIARCH, sub, name), "nvidia--%s-x86_64-linux-gnu" % name,
                           "%s/%s" % (current, name)))
        slaves += [(link, "nvidia--" + name, source) for link, name, source in SLAVE_RE.findall(line)]
    for link, name, source in slaves:
        if not os.path.lexists(tree / source.lstrip("/")) or os.path.lexists(tree / link.lstrip("/")):
            continue
        alternative = "/etc/alternatives/" + name
        (tree / "etc/alternatives").mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(tree / alternative.lstrip("/")):
            os.symlink(source, tree / alternative.lstrip("/"))
        (tree / link.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(alternative, tree / link.lstrip("/"))
    _proc_version(release, tree)


def _lay_out_flat(release, tree, driver_root, libdir, bindir, firmware_dir, data_dirs, gbm=False):
    """One library directory (``vdpau/`` below it), one bin directory, the firmware directory and the
    Vulkan/EGL files (``data_dirs``: ``{directory under usr/share: where it goes}``), as NVIDIA's own
    installer lays the driver out: each library with its SONAME link, and the packages' ``libX.so`` links."""
    unpacked = _unpacked(release)
    root = tree / driver_root.lstrip("/")
    lib = root / libdir
    (lib / "vdpau").mkdir(parents=True)
    for directory in (unpacked / MULTIARCH, unpacked / MULTIARCH / "nvidia/current"):
        for entry in directory.iterdir():
            if entry.is_file() and not entry.is_symlink() and entry.name.startswith("lib"):
                target = lib / ("vdpau" if entry.name.startswith("libvdpau_") else "") / entry.name
                os.link(entry, target)
                soname = readelf_soname(target)
                if soname and soname != entry.name:
                    os.symlink(entry.name, target.parent / soname)
        for entry in directory.iterdir():
            # The packages' libX.so development links, as NVIDIA's installer leaves them too.
            if entry.is_symlink() and entry.name.startswith("lib") and entry.name.endswith(".so") \
                    and (lib / os.readlink(entry)).exists():
                os.symlink(os.readlink(entry), lib / entry.name)
            if gbm and entry.is_symlink() and entry.name == "nvidia-drm_gbm.so":
                (lib / "gbm").mkdir(exist_ok=True)
                os.symlink("../" + os.readlink(entry), lib / "gbm" / entry.name)
    (root / bindir).mkdir(parents=True, exist_ok=True)
    for binary in BINARIES:
        if (unpacked / binary).is_file():
            os.link(unpacked / binary, root / bindir / Path(binary).name)
    for source, target in data_dirs.items():
        shutil.copytree(unpacked / "usr/share" / source, root / target, copy_function=os.link)
    firmware = root / firmware_dir / release.version
    firmware.mkdir(parents=True)
    for blob in _firmware_files(release, unpacked):
        os.link(blob, firmware / blob.name)
    _proc_version(release, tree)


def _lay_out_cos(release, tree):
    # GKE keeps the Vulkan files in the driver root's vulkan/.
    _lay_out_flat(release, tree, DRIVER_ROOTS["cos"], "lib64", "bin", "firmware/nvidia", {"vulkan": "vulkan"})


def _lay_out_container(release, tree):
    _lay_out_flat(release, tree, DRIVER_ROOTS["container"], MULTIARCH, "usr/bin", "lib/firmware/nvidia",
                  {"vulkan": "usr/share/vulkan", "glvnd": "usr/share/glvnd"}, gbm=True)
    root = tree / DRIVER_ROOTS["container"].lstrip("/")
    (root / "etc").mkdir()
    (root / "etc/ld.so.conf").write_text("/%s\n" % MULTIARCH)
    # The driver container's own ld cache, made as its ldconfig makes it (-X: the links are there already).
    subprocess.run(["ldconfig", "-X", "-r", str(root)], check=True, capture_output=True)


BUILDERS = {"debian": _lay_out_debian, "cos": _lay_out_cos, "container": _lay_out_container}


def tree(release, layout):
    """A host_root holding ``release``'s driver files laid out as ``layout`` (one of LAYOUTS), the
    driver root at ``DRIVER_ROOTS[layout]``."""
    with cache_lock.held(CACHE):
        return _built_once(release, layout, BUILDERS[layout])


def debian_tree(release=BOOKWORM):
    return tree(release, "debian")


def cos_tree(release=BOOKWORM):
    return tree(release, "cos")


def _proc_version(release, tree_root):
    """The loaded kernel module's version, as a node with the driver running has it."""
    proc = tree_root / "proc/driver/nvidia"
    proc.mkdir(parents=True, exist_ok=True)
    (proc / "version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Sat Jul 19 2025\n"
                                  % release.version)


def readelf_soname(path):
    """The DT_SONAME ``readelf -d`` gives, or None."""
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    match = re.search(r"\(SONAME\)\s+Library soname: \[(.+)\]", out)
    return match.group(1) if match else None


def real_libraries(tree_root, driver_root, release):
    """``{host path: SONAME}`` of every library file of the driver under the tree's driver root: each
    ``lib*.so.<version>`` and the UNVERSIONED_LIBRARIES."""
    found = {}
    base = Path(tree_root) / driver_root.lstrip("/")
    for pattern in ("lib*.so.%s" % release.version,) + UNVERSIONED_LIBRARIES:
        for path in base.rglob(pattern):
            if path.is_file() and not path.is_symlink():
                found["/" + str(path.relative_to(tree_root))] = readelf_soname(path)
    return found
