# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Discover the NVIDIA driver on a node seen at ``host_root``.

This is the one place that reads the node for driver facts; the parsing and the decisions it
needs live in the pure modules ``elf``, ``ldcache``, ``procfs`` and ``node_model``. Every path
it returns is a host path: ``host_root`` never appears in the result.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import stat

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import elf, ldcache, node_fs, node_model, procfs

BINARY_NAMES = (
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
)
# /usr first: on a merged-/usr node (/bin a link to usr/bin) the binaries keep the path their packages give them.
BINARY_DIRS = ("usr/bin", "bin", "usr/sbin", "sbin")
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
# NVIDIA libraries whose file name carries their own version rather than the driver's: the EGL
# platform libraries, and NvAPI's libnvidia-api.so.1, which the driver ships beside the others and
# which applications dlopen by that name (NVIDIA's generator mounts it only with its
# enable-explicit-driver-libraries feature flag; here it is always mounted).
EXTRA_LIBRARY_RE = re.compile(r"^(libnvidia-egl-(wayland|gbm|xcb|xlib)\.so\.\d+(\.\d+)*|libnvidia-api\.so\.1)$")
# Names of the driver's libraries and their links (libcuda.so.1, libnvidia-ml.so, libGLX_nvidia.so.0).
NVIDIA_LIBRARY_NAME_RE = re.compile(r"^(libcuda|libnv[\w-]*|lib\w*_nvidia)\.so(\.\d+)*$")
VERSION_SUFFIX_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")
# A driver library of some driver version (libnvidia-ml.so.530.30.02): a 3-digit major, as every
# driver release has, so that libnvpair.so.3.0.0 (ZFS) is not taken for one.
OTHER_VERSION_LIBRARY_RE = re.compile(r"^(lib.+)\.so\.(\d{3}\.\d+(\.\d+)?)$")
# A development link, libX.so, beside the driver's libX.so.<version>.
DEV_LINK_RE = re.compile(r"^lib.+\.so$")
# Driver libraries that NVIDIA ships without an ELF SONAME (nothing links to them by SONAME): no warning.
UNNAMED_LIBRARY_PREFIXES = ("libnvidia-vulkan-producer.so.",)
# How many names a warning lists before it says "and N more" (the whole list is result data).
MESSAGE_NAMES = 3
# One read that holds the ELF and program headers (and, in small libraries, everything else).
ELF_HEAD_SIZE = 4096


class DiscoveryError(node_model.NodeError):
    """The node does not hold what discovery needs; the message says what to set."""


def resolve_in_root(root, path):
    """Resolve symlinks in ``path`` as if ``root`` were ``/`` (chroot semantics), with
    :meth:`node_fs.NodeRoot.resolve`.

    ``root`` is a directory on this machine; ``path`` an absolute path inside it. Returns the
    resolved path inside ``root`` (not including it). Absolute link targets stay inside ``root``.
    A link loop raises DiscoveryError.
    """
    try:
        return node_fs.NodeRoot(root).resolve(path)
    except node_fs.NodeFsError as exc:
        raise DiscoveryError(str(exc)) from None


def some(names, limit=MESSAGE_NAMES):
    """``a, b, c and 2 more``: a list short enough for a message."""
    names = list(names)
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += " and %d more" % (len(names) - limit)
    return shown


class _Discovery:
    def __init__(self, host_root, library_search_paths):
        self.host_root = host_root
        self.node = node_fs.NodeRoot(host_root)
        self.search_paths = list(library_search_paths)
        self.warnings = []
        # The driver root as named (by the option or auto-detection) and where it really is, both
        # host paths; they differ when the driver root, or a directory above it, is a symlink.
        self.named_root = self.real_root = "/"
        self.dangling = []
        self.dev_links = []
        self.vdpau_links = []
        self.skipped = []
        self.library_version = None

    def on_node(self, host_path):
        return self.node.path(host_path)

    def real(self, host_path):
        """``host_path`` with every symlink resolved inside host_root, as the node resolves it."""
        try:
            return self.node.resolve(host_path)
        except node_fs.NodeFsError as exc:
            raise DiscoveryError(str(exc)) from None

    def here(self, host_path):
        """Where this machine finds ``host_path``, links resolved inside host_root (never outside it)."""
        return self.on_node(self.real(host_path))

    def named(self, real_path):
        """A real host path under the driver root, re-expressed under the driver root as named."""
        if self.real_root != self.named_root and node_model.is_under(real_path, self.real_root):
            relative = real_path[len(self.real_root):] if self.real_root != "/" else real_path
            return node_model.join_host(self.named_root, relative)
        return real_path

    def read_text(self, host_path):
        """The text of ``host_path`` (links resolved inside host_root), or None when it cannot be read."""
        try:
            return self.node.read_text(self.real(host_path))
        except (node_fs.NodeFsError, DiscoveryError):
            return None

    def names(self, real_dir, pattern="*"):
        """Sorted names in ``real_dir`` (a host path, links already resolved) that match the glob
        ``pattern``; hidden names only when the pattern starts with a dot, as in a shell."""
        try:
            names = self.node.list_dir(real_dir)
        except OSError:
            return []
        return [name for name in names if fnmatch.fnmatchcase(name, pattern)
                and (pattern.startswith(".") or not name.startswith("."))]

    def describe(self, host_path):
        """``X``, or ``X (a link to Y)`` when ``X`` resolves elsewhere inside host_root."""
        real = self.real(host_path)
        return host_path if real == host_path else "%s (a link to %s)" % (host_path, real)

    # --- driver root -------------------------------------------------------------------
    def library_dirs(self, driver_root):
        """The library directories searched (the search paths and the driver's subfolders of them,
        see :func:`node_model.library_search_dirs`), as host paths under ``driver_root``."""
        return [node_model.join_host(driver_root, rel) for rel in node_model.library_search_dirs(self.search_paths)]

    def libcuda_candidates(self, driver_root):
        real_root = self.real(driver_root)
        if not os.path.isdir(self.on_node(real_root)):
            return []
        for directory in self.library_dirs(real_root):
            try:
                names = self.names(self.real(directory))
            except DiscoveryError:
                continue
            found = [name for name in names if name.startswith(node_model.DRIVER_MARKER_PREFIX)]
            if found:
                return [posixpath.join(directory, name) for name in found]
        return [path for name, path in self.ld_cache_entries(real_root, quiet=True) if name.startswith("libcuda.so.")]

    def resolve_driver_root(self, requested):
        """``(driver_root as named, its real host path, how it was chosen)``."""
        if requested != "auto":
            driver_root = node_model.normalize_host_path(requested)
            real_root = self.real(driver_root)
            full = self.on_node(real_root)
            if not os.path.exists(full):
                raise DiscoveryError(
                    "driver_root %s does not exist under host_root %s; set driver_root to the host "
                    "directory holding the driver's files, or to 'auto'" % (self.describe(driver_root), self.host_root)
                )
            if not os.path.isdir(full):
                raise DiscoveryError(
                    "driver_root %s is a file, not a directory, under host_root %s; set driver_root to the host "
                    "directory holding the driver's files (its lib64/ or usr/lib/ with libcuda.so.*), or to 'auto'"
                    % (self.describe(driver_root), self.host_root)
                )
            return driver_root, real_root, "set by the driver_root option"
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
        return chosen, self.real(chosen), "auto: first of %s holding libcuda.so.*" % ", ".join(
            node_model.DRIVER_ROOT_CANDIDATES)

    def resolve_dev_root(self, requested):
        """``(dev_root, how it was chosen, whether a warning already said what is wrong with it)``."""
        if requested != "auto":
            dev_root = node_model.normalize_host_path(requested)
            full = self.here(dev_root)
            problem = None
            if not os.path.exists(full):
                problem = "dev_root %s does not exist under host_root %s" % (self.describe(dev_root), self.host_root)
            elif not os.path.isdir(full):
                problem = "dev_root %s is a file, not a directory, under host_root %s" % (
                    self.describe(dev_root), self.host_root)
            elif not os.path.isdir(self.here(node_model.join_host(dev_root, "dev"))):
                problem = "dev_root %s has no dev/ directory under host_root %s" % (dev_root, self.host_root)
            if problem:
                self.warnings.append(problem + ": no device nodes found. Set dev_root to the host directory "
                                     "whose dev/ holds nvidia* (usually /), or to 'auto'")
            return dev_root, "set by the dev_root option", problem is not None
        has_ctl = os.path.exists(self.here(node_model.join_host(self.real_root, "dev/nvidiactl")))
        dev_root, source = node_model.choose_dev_root(self.named_root, has_ctl)
        return dev_root, source, False

    # --- version -----------------------------------------------------------------------
    def kernel_version(self):
        """The loaded kernel module's version from /proc/driver/nvidia/version, or None."""
        text = self.read_text("/proc/driver/nvidia/version")
        if text is None:
            return None
        try:
            return procfs.parse_driver_version(text)
        except procfs.ProcFormatError as exc:
            self.warnings.append("ignoring /proc/driver/nvidia/version: %s" % exc)
            return None

    def library_versions(self):
        """``{version: source}`` of the ``libcuda.so.<version>`` files under the driver root (else of
        ``libnvidia-ml.so.<version>``), from the search paths and the driver root's ld.so.cache."""
        for prefix in ("libcuda.so.", "libnvidia-ml.so."):
            found = {}
            for rel in node_model.library_search_dirs(self.search_paths):
                directory = node_model.join_host(self.real_root, rel)
                try:
                    names = self.names(self.real(directory))
                except DiscoveryError:
                    continue
                for name in names:
                    suffix = name[len(prefix):]
                    if not (name.startswith(prefix) and VERSION_SUFFIX_RE.match(suffix)):
                        continue
                    try:
                        if not os.path.isfile(self.here(posixpath.join(directory, name))):
                            continue
                    except DiscoveryError:
                        continue
                    found.setdefault(suffix, "%s suffix of %s" % (
                        prefix.rstrip("."), node_model.join_host(self.named_root, rel, name)))
            for name, path in self.ld_cache_entries(self.real_root, quiet=True):
                base = posixpath.basename(resolve_in_root(self.on_node(self.real_root), path))
                if name.startswith(prefix) and VERSION_SUFFIX_RE.match(base[len(prefix):]):
                    found.setdefault(base[len(prefix):], "%s suffix in %s/etc/ld.so.cache" % (
                        prefix.rstrip("."), self.named_root.rstrip("/")))
            if found:
                return found
        return {}

    def versions(self):
        """``(driver_version, its source, library_version)``.

        The driver version is the loaded kernel module's, else the libraries'. The library version
        is that of the ``libcuda.so.<version>`` found (the kernel module's when it is among them);
        a different one is a warning: containers would get libraries the kernel module refuses.
        """
        kernel = self.kernel_version()
        found = self.library_versions()
        library = node_model.choose_library_version(kernel, found)
        if kernel is not None and library is not None and library != kernel:
            self.warnings.append(node_model.version_mismatch_message(kernel, found, self.named_root))
        elif kernel is None and len(found) > 1:
            self.warnings.append("libraries of several driver versions under driver_root %s: %s; using %s" % (
                self.named_root, some(node_model.sorted_versions(found), 5), library))
        if kernel is not None:
            return kernel, "/proc/driver/nvidia/version", library
        if library is not None:
            return library, found[library], library
        raise DiscoveryError(
            "cannot tell the driver version: /proc/driver/nvidia/version is missing under host_root %s "
            "and no libcuda.so.<version> or libnvidia-ml.so.<version> is in %s. Is the driver installed "
            "at driver_root %s?" % (self.host_root, ", ".join(self.library_dirs(self.named_root)), self.named_root)
        )

    # --- libraries ---------------------------------------------------------------------
    def ld_cache_entries(self, driver_root, quiet=False):
        cache = node_model.join_host(driver_root, "etc/ld.so.cache")
        try:
            real = self.real(cache)
        except DiscoveryError:
            return []
        if not os.path.isfile(self.on_node(real)):
            return []
        try:
            return ldcache.parse(self.node.read_bytes(real))
        except (node_fs.NodeFsError, ldcache.LdCacheError) as exc:
            if not quiet:
                self.warnings.append("ignoring %s: %s" % (self.named(cache), exc))
            return []

    def read_soname(self, host_path, path_here=None):
        """The SONAME of ``host_path`` (``path_here``: where this machine sees it, when known)."""
        try:
            fd = os.open(path_here or self.on_node(host_path), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise elf.ElfError("not a regular file")
                head = os.pread(fd, ELF_HEAD_SIZE, 0)

                def read(offset, size):
                    if offset + size <= len(head):
                        return head[offset:offset + size]
                    return os.pread(fd, size, offset)

                return elf.soname_from_reader(read, info.st_size)
            finally:
                os.close(fd)
        except (OSError, elf.ElfError) as exc:
            self.warnings.append("skipping library %s: %s" % (self.named(host_path), exc))
            return False

    def libraries(self, version):
        """The driver's libraries of ``version``: real files (links followed inside host_root), as
        host paths under the driver root as named. Dangling links go to ``self.dangling``; the
        ``libX.so`` links that lead to one of them to ``self.dev_links``; libraries of other driver
        versions, left out, to ``self.skipped``."""
        self.library_version = version
        wanted = re.compile(r"^lib.+\.so\.%s$" % re.escape(version))
        seen = set()
        found = []
        dangling = {}
        dev_links = {}  # named link path -> real library path
        vdpau_links = {}  # the same, for links in a vdpau/ folder to a library elsewhere (Debian's)
        skipped = {}

        def other_version(name):
            match = OTHER_VERSION_LIBRARY_RE.match(name)
            if match and match.group(2) != version and NVIDIA_LIBRARY_NAME_RE.match(name) \
                    and not EXTRA_LIBRARY_RE.match(name):
                return match.group(2)
            return None

        def is_driver_library(name):
            return wanted.match(name) or EXTRA_LIBRARY_RE.match(name)

        def add(real, path_here=None, found_at=None):
            if real in seen:
                return
            seen.add(real)
            if not self.mountable(self.named(found_at or real), real):
                return
            soname = self.read_soname(real, path_here)
            if soname is not False:
                found.append({"path": self.named(real), "soname": soname})

        for directory in self.library_dirs(self.real_root):
            try:
                real_dir = self.real(directory)
            except DiscoveryError:
                continue
            for name in self.names(real_dir):
                ours = is_driver_library(name)
                if not (ours or NVIDIA_LIBRARY_NAME_RE.match(name)):
                    continue
                path = posixpath.join(real_dir, name)
                entry = self.node.observe(path) or {}
                if entry.get("type") == "symlink":
                    try:
                        real = self.real(path)
                    except DiscoveryError as exc:
                        self.warnings.append("skipping library %s: %s" % (self.named(path), exc))
                        continue
                    if not os.path.isfile(self.on_node(real)):
                        dangling.setdefault(self.named(path), entry["target"])
                    elif ours and is_driver_library(posixpath.basename(real)):
                        add(real, found_at=path)
                    elif DEV_LINK_RE.match(name) and posixpath.basename(real).startswith(name + "."):
                        dev_links.setdefault(self.named(path), real)
                    elif posixpath.basename(real_dir) == "vdpau" and posixpath.dirname(real) != real_dir:
                        vdpau_links.setdefault(self.named(path), real)
                elif ours and entry.get("type") == "file":
                    add(path, self.on_node(path))
                elif entry.get("type") == "file":
                    found_version = other_version(name)
                    if found_version:
                        skipped.setdefault(self.named(path), found_version)
        for _name, path in self.ld_cache_entries(self.real_root):
            in_driver = resolve_in_root(self.on_node(self.real_root), path)
            try:
                real = self.real(node_model.join_host(self.real_root, in_driver))
            except DiscoveryError:
                continue
            if is_driver_library(posixpath.basename(real)) and os.path.isfile(self.on_node(real)):
                add(real)
        self.dangling = [{"path": path, "target": dangling[path]} for path in sorted(dangling)]
        taken = {lib["path"] for lib in found}
        self.dev_links = [{"path": path, "library": self.named(dev_links[path])} for path in sorted(dev_links)
                          if self.named(dev_links[path]) in taken]
        self.vdpau_links = [{"path": path, "library": self.named(vdpau_links[path])} for path in sorted(vdpau_links)
                            if self.named(vdpau_links[path]) in taken]
        self.skipped = [{"path": path, "version": skipped[path]} for path in sorted(skipped)]
        return sorted(found, key=lambda lib: lib["path"])

    def library_warnings(self, libraries):
        """Warnings for libraries without a SONAME and for dangling links."""
        unnamed = [lib["path"] for lib in libraries if not lib["soname"]
                   and not posixpath.basename(lib["path"]).startswith(UNNAMED_LIBRARY_PREFIXES)]
        if unnamed:
            cuda = [path for path in unnamed if posixpath.basename(path).startswith("libcuda.so.")]
            message = ("driver libraries without an ELF SONAME, so containers get no SONAME link for them: %s"
                       % some(unnamed))
            if cuda:
                message += ("; %s has none, so containers get no libcuda.so.1 and CUDA applications "
                            "cannot load it" % cuda[0])
            self.warnings.append(message + " (nvidia_driver_info's libraries have them all, with soname null)")
        if self.skipped:
            versions = node_model.sorted_versions({entry["version"] for entry in self.skipped})
            self.warnings.append(
                "not mounting %d libraries of other driver versions (%s) than %s, left by an unfinished upgrade or "
                "removal (nvidia_driver_info's skipped_libraries has them all): %s" % (
                    len(self.skipped), ", ".join(versions), self.library_version,
                    some(entry["path"] for entry in self.skipped)))
        if self.dangling:
            self.warnings.append("dangling links in the driver's library directories (the files they point "
                                 "to are missing; nvidia_driver_info's dangling_links has them all): %s" % some(
                                     "%s -> %s" % (d["path"], d["target"]) for d in self.dangling))

    # --- other driver files ------------------------------------------------------------
    def binaries(self):
        found = []
        for name in BINARY_NAMES:
            for directory in BINARY_DIRS:
                try:
                    real = self.real(node_model.join_host(self.real_root, directory, name))
                except DiscoveryError:
                    continue
                if self.mountable(node_model.join_host(self.named_root, directory, name), real, name):
                    found.append(node_model.join_host(self.named_root, directory, name))
                    break
        return found

    def firmware(self, version):
        found = {}
        for directory in FIRMWARE_DIRS:
            rel = posixpath.join(directory, version)
            real_dir = self.real(node_model.join_host(self.real_root, rel))
            for name in self.names(real_dir, "gsp*.bin"):
                named = node_model.join_host(self.named_root, rel, name)
                real = self.real(posixpath.join(real_dir, name))
                if self.mountable(named, real, "gsp*.bin"):
                    found.setdefault(real, named)
        return sorted(found.values())

    def config_files(self):
        found = {}
        for directory, pattern in CONFIG_FILE_GLOBS:
            real_dir = self.real(node_model.join_host(self.real_root, directory))
            for name in self.names(real_dir, pattern):
                named = node_model.join_host(self.named_root, directory, name)
                real = self.real(posixpath.join(real_dir, name))
                if self.mountable(named, real, pattern):
                    found.setdefault(real, named)
        return sorted(found.values())

    def mountable(self, named, real, pattern=None):
        """Whether the driver file found at ``named`` (``real`` once its links are resolved) may be
        mounted into every GPU container: a regular file that every user of the node may read, whose
        own name, when ``pattern`` is given, is one of that kind. A link planted in the driver's
        directories to a node secret (``/etc/shadow``) is skipped with a warning naming both."""
        found = self.node.observe(real)
        if not found or found["type"] != "file":
            return False
        via = "" if real == named else " (a link to %s)" % real
        if not found["mode"] & stat.S_IROTH:
            self.warnings.append("not mounting %s%s into containers: it is not readable by every user of the node "
                                 "(mode %04o), as driver files are" % (named, via, found["mode"]))
            return False
        if pattern and not fnmatch.fnmatchcase(posixpath.basename(real), pattern):
            self.warnings.append("not mounting %s%s into containers: the file it names is not called %s, as driver "
                                 "files of its kind are" % (named, via, pattern))
            return False
        return True

    def ipc_sockets(self):
        """Sockets and IPC directories that exist, each once (``/var/run`` is usually a link to ``/run``)."""
        found = {}
        roots = ["/"] if self.named_root == "/" else ["/", self.named_root]
        for root in roots:
            for path, wanted in [(p, "socket") for p in IPC_SOCKETS] + [(p, "directory") for p in IPC_DIRS]:
                host_path = node_model.join_host(root, path)
                try:
                    real = self.real(host_path)
                except DiscoveryError:
                    continue
                if (self.node.observe(real) or {}).get("type") == wanted:
                    found.setdefault(real, host_path)
        return list(found.values())

    # --- kernel side -------------------------------------------------------------------
    def gpus(self):
        try:
            bus_dirs = self.names(self.real("/proc/driver/nvidia/gpus"))
        except DiscoveryError:
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
        """NVIDIA character devices under ``dev_root`` (links in it resolved inside host_root);
        ``host_path`` is under ``dev_root`` as named."""
        nodes = []
        for pattern in DEVICE_GLOBS:
            directory, name_pattern = posixpath.split(pattern)
            try:
                real_dir = self.real(node_model.join_host(dev_root, directory))
            except DiscoveryError:
                continue
            for name in self.names(real_dir, name_pattern):
                info = self.node.observe(posixpath.join(real_dir, name))
                if info is None or info["type"] != "char":
                    continue
                container = "/" + posixpath.join(directory, name)
                nodes.append({
                    "path": container,
                    "host_path": node_model.join_host(dev_root, container),
                    "major": info["major"],
                    "minor": info["minor"],
                    "mode": "%04o" % info["mode"],
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
        """True when /proc/driver/nvidia exists or /proc/modules lists nvidia."""
        if os.path.isdir(self.on_node("/proc/driver/nvidia")):
            return True
        text = self.read_text("/proc/modules")
        return text is not None and "nvidia" in procfs.parse_modules(text)


def auto_dev_root(host_root, driver_root="auto", library_search_paths=None):
    """``(dev_root, how it was chosen)`` for ``dev_root: auto``, as :func:`discover_node` chooses it,
    without discovering the rest: ``driver_root`` when it holds ``dev/nvidiactl``, else ``/``.

    When ``driver_root`` is ``auto`` and no driver root is found, the host's ``/dev`` (``/``): the
    kernel side may be there without the user-space files. A ``driver_root`` that is set but is
    not a directory raises DiscoveryError.
    """
    if library_search_paths is None:
        library_search_paths = node_model.DEFAULT_LIBRARY_SEARCH_PATHS
    node = _Discovery(host_root, library_search_paths)
    try:
        node.named_root, node.real_root, _source = node.resolve_driver_root(driver_root)
    except DiscoveryError:
        if driver_root != "auto":
            raise
        return "/", "host /dev (no driver root found under host_root %s)" % host_root
    dev_root, source, _warned = node.resolve_dev_root("auto")
    return dev_root, source


def discover_node(host_root, driver_root="auto", dev_root="auto", library_search_paths=None):
    """Everything the collection needs to know about the node's driver, as a dict of host paths.

    Symlinks are resolved inside ``host_root``, as the node resolves them. Paths of driver files
    are under ``driver_root`` as named (by the option or auto-detection), even when it is a link:
    ``driver_root_resolved`` says where it leads. Container paths then do not depend on the link.
    """
    if not os.path.isdir(host_root):
        raise DiscoveryError("host_root %s does not exist or is not a directory; set host_root to where the node's / is seen" % host_root)
    if library_search_paths is None:
        library_search_paths = node_model.DEFAULT_LIBRARY_SEARCH_PATHS
    node = _Discovery(host_root, library_search_paths)
    root, real_root, root_source = node.resolve_driver_root(driver_root)
    node.named_root, node.real_root = root, real_root
    devroot, dev_source, dev_warned = node.resolve_dev_root(dev_root)
    version, version_source, library_version = node.versions()
    libraries = node.libraries(library_version or version)
    node.library_warnings(libraries)
    loaded = node.kernel_module_loaded()
    device_nodes = node.device_nodes(devroot)
    if not loaded:
        node.warnings.append(
            "the nvidia kernel module is not loaded (no /proc/driver/nvidia and no nvidia in /proc/modules "
            "under host_root %s): no GPUs and no device nodes until it is (modprobe nvidia; on Container-Optimized "
            "OS the GPU driver installer loads it)" % host_root)
    elif not device_nodes and not dev_warned:
        node.warnings.append("no NVIDIA device nodes under dev_root %s: looked for %s under host_root %s" % (
            devroot, ", ".join(node_model.join_host(devroot, g) for g in DEVICE_GLOBS), host_root))
    return {
        "driver_root": root,
        "driver_root_resolved": real_root,
        "driver_root_source": root_source,
        "dev_root": devroot,
        "dev_root_source": dev_source,
        "driver_version": version,
        "driver_version_source": version_source,
        "library_version": library_version,
        "library_search_paths": list(library_search_paths),
        "libraries": libraries,
        "dangling_links": node.dangling,
        "dev_links": node.dev_links,
        "vdpau_links": node.vdpau_links,
        "skipped_libraries": node.skipped,
        "binaries": node.binaries(),
        "firmware": node.firmware(version),
        "config_files": node.config_files(),
        "ipc_sockets": node.ipc_sockets(),
        "gpus": node.gpus(),
        "device_nodes": device_nodes,
        "mig_minors": node.mig_minors(),
        "kernel_module_loaded": loaded,
        "warnings": node.warnings,
    }
