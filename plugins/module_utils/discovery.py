# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Discover the NVIDIA driver on a node seen at ``host_root``.

This is the one place that reads the node for driver facts; the parsing and the decisions it
needs live in the pure modules ``elf``, ``ldcache``, ``procfs`` and ``node_model``. Every path
it returns is a host path: ``host_root`` never appears in the result.
"""

from __future__ import annotations

import glob
import os
import posixpath
import re
import stat

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import elf, ldcache, node_model, procfs

BINARY_NAMES = (
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
)
BINARY_DIRS = ("bin", "usr/bin", "sbin", "usr/sbin")
FIRMWARE_DIRS = ("lib/firmware/nvidia", "usr/lib/firmware/nvidia", "firmware/nvidia")
# (dir relative to driver_root, file glob); COS keeps the Vulkan files directly under driver_root.
CONFIG_FILE_GLOBS = tuple(
    (posixpath.join(prefix, sub), "*nvidia*.json")
    for prefix in ("etc", "usr/share", "")
    for sub in ("vulkan/icd.d", "vulkan/implicit_layer.d", "glvnd/egl_vendor.d", "egl/egl_external_platform.d")
) + tuple((d, "nvidia-application-profiles-*") for d in ("usr/share/nvidia", "share/nvidia"))
IPC_SOCKETS = (
    "/run/nvidia-persistenced/socket",
    "/var/run/nvidia-persistenced/socket",
    "/run/nvidia-fabricmanager/socket",
    "/var/run/nvidia-fabricmanager/socket",
)
IPC_DIRS = ("/tmp/nvidia-mps",)
DEVICE_GLOBS = node_model.DEVICE_GLOBS
# NVIDIA libraries that carry their own version rather than the driver's.
EXTRA_LIBRARY_RE = re.compile(r"^libnvidia-egl-(wayland|gbm|xcb|xlib)\.so\.\d+(\.\d+)*$")
# Names of the driver's libraries and their links (libcuda.so.1, libnvidia-ml.so, libGLX_nvidia.so.0).
NVIDIA_LIBRARY_NAME_RE = re.compile(r"^(libcuda|libnv[\w-]*|lib\w*_nvidia)\.so(\.\d+)*$")
VERSION_SUFFIX_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")
# How many names a warning lists before it says "and N more" (the whole list is result data).
MESSAGE_NAMES = 3
MAX_SYMLINKS = 40
# One read that holds the ELF and program headers (and, in small libraries, everything else).
ELF_HEAD_SIZE = 4096


class DiscoveryError(Exception):
    """The node does not hold what discovery needs; the message says what to set.

    ``details``: data for the module's result (e.g. the paths searched), kept out of the
    message so that it stays short.
    """

    def __init__(self, message, **details):
        super().__init__(message)
        self.details = details


def resolve_in_root(root, path):
    """Resolve symlinks in ``path`` as if ``root`` were ``/`` (chroot semantics).

    ``root`` is a directory on this machine; ``path`` an absolute path inside it. Returns the
    resolved path inside ``root`` (not including it). Absolute link targets stay inside ``root``.
    """
    parts = [p for p in node_model.normalize_host_path(path).split("/") if p]
    resolved = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        candidate = "/" + "/".join(resolved + [part])
        full = node_model.node_path(root, candidate)
        if os.path.islink(full):
            hops += 1
            if hops > MAX_SYMLINKS:
                raise DiscoveryError("too many levels of symbolic links at %s" % candidate)
            target = os.readlink(full)
            if target.startswith("/"):
                resolved = []
            parts = [p for p in target.split("/") if p] + parts
            continue
        resolved.append(part)
    return "/" + "/".join(resolved)


class _Discovery:
    def __init__(self, host_root, library_search_paths):
        self.host_root = host_root
        self.search_paths = list(library_search_paths)
        self.warnings = []

    def on_node(self, host_path):
        return node_model.node_path(self.host_root, host_path)

    def exists(self, host_path):
        return os.path.exists(self.on_node(host_path))

    def read_text(self, host_path):
        try:
            with open(self.on_node(host_path), encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return None

    # --- driver root -------------------------------------------------------------------
    def library_dirs(self, driver_root):
        return [node_model.join_host(driver_root, rel) for rel in self.search_paths]

    def libcuda_candidates(self, driver_root):
        for directory in self.library_dirs(driver_root):
            try:
                names = os.listdir(self.on_node(directory))
            except OSError:
                continue
            found = sorted(name for name in names if name.startswith(node_model.DRIVER_MARKER_PREFIX))
            if found:
                return [posixpath.join(directory, name) for name in found]
        return [path for name, path in self.ld_cache_entries(driver_root, quiet=True) if name.startswith("libcuda.so.")]

    def resolve_driver_root(self, requested):
        if requested != "auto":
            driver_root = node_model.normalize_host_path(requested)
            if not os.path.isdir(self.on_node(driver_root)):
                raise DiscoveryError(
                    "driver_root %s does not exist under host_root %s; set driver_root to the host "
                    "directory holding the driver's files, or to 'auto'" % (driver_root, self.host_root)
                )
            return driver_root, "set by the driver_root option"
        chosen = node_model.choose_driver_root(node_model.DRIVER_ROOT_CANDIDATES, self.libcuda_candidates)
        if chosen is None:
            searched = []
            for candidate in node_model.DRIVER_ROOT_CANDIDATES:
                searched.extend(posixpath.join(d, "libcuda.so.*") for d in self.library_dirs(candidate))
                searched.append(node_model.join_host(candidate, "etc/ld.so.cache"))
            raise DiscoveryError(
                "no NVIDIA driver found under host_root %s: no libcuda.so.* under %s (the paths searched are in "
                "the result's searched). Set driver_root to the host directory holding the driver (for example "
                "/home/kubernetes/bin/nvidia on GKE's COS), or library_search_paths if its libraries live elsewhere"
                % (self.host_root, ", ".join(node_model.DRIVER_ROOT_CANDIDATES)), searched=searched)
        return chosen, "auto: first of %s holding libcuda.so.*" % ", ".join(node_model.DRIVER_ROOT_CANDIDATES)

    def resolve_dev_root(self, requested, driver_root):
        if requested != "auto":
            dev_root = node_model.normalize_host_path(requested)
            if not os.path.isdir(self.on_node(node_model.join_host(dev_root, "dev"))):
                self.warnings.append("dev_root %s has no dev/ directory under host_root %s" % (dev_root, self.host_root))
            return dev_root, "set by the dev_root option"
        has_ctl = os.path.exists(self.on_node(node_model.join_host(driver_root, "dev/nvidiactl")))
        return node_model.choose_dev_root(driver_root, has_ctl)

    # --- version -----------------------------------------------------------------------
    def driver_version(self, driver_root):
        text = self.read_text("/proc/driver/nvidia/version")
        if text is not None:
            try:
                return procfs.parse_driver_version(text), "/proc/driver/nvidia/version"
            except procfs.ProcFormatError as exc:
                self.warnings.append("ignoring /proc/driver/nvidia/version: %s" % exc)
        for prefix in ("libcuda.so.", "libnvidia-ml.so."):
            for directory in self.library_dirs(driver_root):
                pattern = os.path.join(glob.escape(self.on_node(directory)), prefix + "*.*")
                for path in sorted(glob.glob(pattern)):
                    suffix = os.path.basename(path)[len(prefix):]
                    if re.match(r"^\d+\.\d+(\.\d+)?$", suffix):
                        return suffix, "%s suffix of %s" % (prefix.rstrip("."), posixpath.join(directory, os.path.basename(path)))
            for name, path in self.ld_cache_entries(driver_root, quiet=True):
                real = resolve_in_root(self.on_node(driver_root), path)
                base = posixpath.basename(real)
                if name.startswith(prefix) and re.match(r"^\d+\.\d+(\.\d+)?$", base[len(prefix):]):
                    return base[len(prefix):], "%s suffix in %s/etc/ld.so.cache" % (prefix.rstrip("."), driver_root)
        raise DiscoveryError(
            "cannot tell the driver version: /proc/driver/nvidia/version is missing under host_root %s "
            "and no libcuda.so.<version> or libnvidia-ml.so.<version> is in %s. Is the driver installed "
            "at driver_root %s?" % (self.host_root, ", ".join(self.library_dirs(driver_root)), driver_root)
        )

    # --- libraries ---------------------------------------------------------------------
    def ld_cache_entries(self, driver_root, quiet=False):
        cache = node_model.join_host(driver_root, "etc/ld.so.cache")
        path = self.on_node(cache)
        if not os.path.isfile(path):
            return []
        try:
            with open(path, "rb") as handle:
                return ldcache.parse(handle.read())
        except (OSError, ldcache.LdCacheError) as exc:
            if not quiet:
                self.warnings.append("ignoring %s: %s" % (cache, exc))
            return []

    def read_soname(self, host_path, path_here=None):
        """The SONAME of ``host_path`` (``path_here``: where this machine sees it, when known)."""
        try:
            fd = os.open(path_here or self.on_node(host_path), os.O_RDONLY)
            try:
                head = os.pread(fd, ELF_HEAD_SIZE, 0)

                def read(offset, size):
                    if offset + size <= len(head):
                        return head[offset:offset + size]
                    return os.pread(fd, size, offset)

                return elf.soname_from_reader(read)
            finally:
                os.close(fd)
        except (OSError, elf.ElfError) as exc:
            self.warnings.append("skipping library %s: %s" % (host_path, exc))
            return False

    def libraries(self, driver_root, version):
        wanted = re.compile(r"^lib.+\.so\.%s$" % re.escape(version))
        seen = set()
        found = []

        def is_driver_library(name):
            return wanted.match(name) or EXTRA_LIBRARY_RE.match(name)

        def add(real, path_here=None):
            if real in seen:
                return
            seen.add(real)
            soname = self.read_soname(real, path_here)
            if soname is not False:
                found.append({"path": real, "soname": soname})

        for directory in self.library_dirs(driver_root):
            real_dir = resolve_in_root(self.host_root, directory)
            try:
                entries = sorted(os.scandir(self.on_node(real_dir)), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if not is_driver_library(entry.name):
                    continue
                if entry.is_symlink():
                    real = resolve_in_root(self.host_root, posixpath.join(real_dir, entry.name))
                    if is_driver_library(posixpath.basename(real)) and os.path.isfile(self.on_node(real)):
                        add(real)
                elif entry.is_file():
                    add(posixpath.join(real_dir, entry.name), entry.path)
        for _name, path in self.ld_cache_entries(driver_root):
            in_driver = resolve_in_root(self.on_node(driver_root), path)
            real = resolve_in_root(self.host_root, node_model.join_host(driver_root, in_driver))
            if is_driver_library(posixpath.basename(real)) and os.path.isfile(self.on_node(real)):
                add(real)
        return sorted(found, key=lambda lib: lib["path"])

    # --- other driver files ------------------------------------------------------------
    def binaries(self, driver_root):
        found = []
        for name in BINARY_NAMES:
            for directory in BINARY_DIRS:
                host_path = node_model.join_host(driver_root, directory, name)
                if os.path.isfile(self.on_node(host_path)):
                    found.append(host_path)
                    break
        return found

    def firmware(self, driver_root, version):
        found = {}
        for directory in FIRMWARE_DIRS:
            host_dir = node_model.join_host(driver_root, directory, version)
            for path in sorted(glob.glob(os.path.join(glob.escape(self.on_node(host_dir)), "gsp*.bin"))):
                host_path = posixpath.join(host_dir, os.path.basename(path))
                found.setdefault(resolve_in_root(self.host_root, host_path), host_path)
        return sorted(found.values())

    def config_files(self, driver_root):
        found = {}
        for directory, pattern in CONFIG_FILE_GLOBS:
            host_dir = node_model.join_host(driver_root, directory)
            for path in sorted(glob.glob(os.path.join(glob.escape(self.on_node(host_dir)), pattern))):
                if os.path.isfile(path):
                    host_path = posixpath.join(host_dir, os.path.basename(path))
                    found.setdefault(resolve_in_root(self.host_root, host_path), host_path)
        return sorted(found.values())

    def ipc_sockets(self, driver_root):
        found = []
        roots = ["/"] if driver_root == "/" else ["/", driver_root]
        for root in roots:
            for socket_path in IPC_SOCKETS:
                host_path = node_model.join_host(root, socket_path)
                try:
                    if stat.S_ISSOCK(os.stat(self.on_node(host_path)).st_mode):
                        found.append(host_path)
                except OSError:
                    pass
            for dir_path in IPC_DIRS:
                host_path = node_model.join_host(root, dir_path)
                if os.path.isdir(self.on_node(host_path)):
                    found.append(host_path)
        return found

    # --- kernel side -------------------------------------------------------------------
    def gpus(self):
        base = self.on_node("/proc/driver/nvidia/gpus")
        try:
            bus_dirs = sorted(os.listdir(base))
        except OSError:
            return []
        gpus = []
        for bus in bus_dirs:
            info_path = "/proc/driver/nvidia/gpus/%s/information" % bus
            text = self.read_text(info_path)
            if text is None:
                self.warnings.append("skipping GPU %s: cannot read %s" % (bus, info_path))
                continue
            try:
                gpus.append(procfs.parse_gpu_information(text, bus))
            except procfs.ProcFormatError as exc:
                self.warnings.append("skipping GPU %s: %s in %s" % (bus, exc, info_path))
        gpus.sort(key=lambda gpu: gpu["pci_bus_id"])
        for index, gpu in enumerate(gpus):
            gpu["index"] = index
        return gpus

    def device_nodes(self, dev_root):
        nodes = []
        for pattern in DEVICE_GLOBS:
            on_node = os.path.join(glob.escape(self.on_node(dev_root)), pattern)
            for path in sorted(glob.glob(on_node)):
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                if not stat.S_ISCHR(info.st_mode):
                    continue
                container = "/" + os.path.relpath(path, self.on_node(dev_root))
                nodes.append({
                    "path": container,
                    "host_path": node_model.join_host(dev_root, container),
                    "major": os.major(info.st_rdev),
                    "minor": os.minor(info.st_rdev),
                    "mode": "%04o" % stat.S_IMODE(info.st_mode),
                })
        return nodes

    def mig_minors(self):
        text = self.read_text("/proc/driver/nvidia-caps/mig-minors")
        minors = {}
        for line in (text or "").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                minors[parts[0]] = int(parts[1])
        return minors

    def kernel_module_loaded(self):
        text = self.read_text("/proc/modules")
        if text is not None:
            return "nvidia" in procfs.parse_modules(text)
        return self.exists("/proc/driver/nvidia/version")


def discover_node(host_root, driver_root="auto", dev_root="auto", library_search_paths=None):
    """Everything the collection needs to know about the node's driver, as a dict of host paths."""
    if not os.path.isdir(host_root):
        raise DiscoveryError("host_root %s does not exist or is not a directory; set host_root to where the node's / is seen" % host_root)
    if library_search_paths is None:
        library_search_paths = node_model.DEFAULT_LIBRARY_SEARCH_PATHS
    node = _Discovery(host_root, library_search_paths)
    root, root_source = node.resolve_driver_root(driver_root)
    devroot, dev_source = node.resolve_dev_root(dev_root, root)
    version, version_source = node.driver_version(root)
    return {
        "driver_root": root,
        "driver_root_source": root_source,
        "dev_root": devroot,
        "dev_root_source": dev_source,
        "driver_version": version,
        "driver_version_source": version_source,
        "library_search_paths": list(library_search_paths),
        "libraries": node.libraries(root, version),
        "binaries": node.binaries(root),
        "firmware": node.firmware(root, version),
        "config_files": node.config_files(root),
        "ipc_sockets": node.ipc_sockets(root),
        "gpus": node.gpus(),
        "device_nodes": node.device_nodes(devroot),
        "mig_minors": node.mig_minors(),
        "kernel_module_loaded": node.kernel_module_loaded(),
        "warnings": node.warnings,
    }
