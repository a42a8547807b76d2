# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node model shared by every module: host_root, driver_root, dev_root, container paths.

Pure functions only. A *host path* is a path as the node itself sees it (``/dev/nvidiactl``);
a *node path* is where the code touching files finds it (``host_root`` + host path).
"""

from __future__ import annotations

import posixpath

DRIVER_ROOT_CANDIDATES = (
    "/run/nvidia/driver",
    "/home/kubernetes/bin/nvidia",
    "/var/lib/nvidia",
    "/",
)

DEFAULT_LIBRARY_SEARCH_PATHS = (
    "lib64",
    "usr/lib64",
    "usr/lib/x86_64-linux-gnu",
    "lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "lib/aarch64-linux-gnu",
    "usr/lib",
    "lib",
)

# The driver's own subfolders of a library search path, searched after it: VDPAU drivers live in
# vdpau/ (libvdpau_nvidia.so.<version>: lib64/vdpau/ on COS, usr/lib/<multiarch>/vdpau/ on Debian), and
# Debian keeps the driver's real files in usr/lib/<multiarch>/nvidia/current/, reaching only some of
# them through alternatives links one level up.
LIBRARY_SUBFOLDERS = ("vdpau",)
MULTIARCH_LIBRARY_SUBFOLDERS = ("nvidia/current",)
MULTIARCH_SUFFIX = "-linux-gnu"


def library_search_dirs(search_paths):
    """The directories, relative to driver_root, that discovery searches for driver libraries: each
    of ``search_paths`` followed by its driver subfolders (:data:`LIBRARY_SUBFOLDERS`, and for a
    multiarch directory such as ``usr/lib/x86_64-linux-gnu`` also :data:`MULTIARCH_LIBRARY_SUBFOLDERS`),
    each once, in that order."""
    found = []
    for rel in search_paths:
        rel = normalize_host_path(rel).lstrip("/")
        subfolders = LIBRARY_SUBFOLDERS
        if rel.endswith(MULTIARCH_SUFFIX):
            subfolders = LIBRARY_SUBFOLDERS + MULTIARCH_LIBRARY_SUBFOLDERS
        for directory in [rel] + [posixpath.join(rel, sub) if rel else sub for sub in subfolders]:
            if directory not in found:
                found.append(directory)
    return found


# What marks a directory as a driver root: the CUDA driver library.
DRIVER_MARKER_PREFIX = "libcuda.so."

# What shows a container engine is on a node: its daemon's binary or its configuration (host paths).
# Ordered as engines are configured; containerd first, as Docker runs on it.
CONTAINER_ENGINE_MARKS = (
    ("containerd", ("/usr/bin/containerd", "/usr/local/bin/containerd", "/etc/containerd/config.toml")),
    ("docker", ("/usr/bin/dockerd", "/usr/local/bin/dockerd", "/etc/docker/daemon.json")),
    ("crio", ("/usr/bin/crio", "/usr/local/bin/crio", "/etc/crio/crio.conf", "/etc/crio/crio.conf.d")),
)

# Where the toolkit's binaries go unless install_dir says otherwise.
DEFAULT_INSTALL_DIR = "/usr/local/nvidia/toolkit"

# Where the NVIDIA device nodes are, relative to dev_root.
DEVICE_GLOBS = ("dev/nvidia*", "dev/nvidia-caps/*", "dev/nvidia-caps-imex-channels/*")


class NodeError(Exception):
    """What a module cannot do on the node; the message says what to set. ``details``: data for the
    module's result (e.g. the paths searched), kept out of the message so that it stays short."""

    def __init__(self, message, **details):
        super().__init__(message)
        self.details = details


def normalize_host_path(path):
    """Return ``path`` as an absolute, normalised host path."""
    if not path:
        return "/"
    normalised = posixpath.normpath("/" + path.lstrip("/"))
    # normpath keeps a leading '//' (POSIX allows it to be special); we never want it.
    return "/" + normalised.lstrip("/")


def node_path(host_root, host_path):
    """Where the host path ``host_path`` is found by code that sees the node at ``host_root``."""
    relative = normalize_host_path(host_path).lstrip("/")
    root = host_root or "/"
    return posixpath.join(root, relative) if relative else root


def host_path_of(host_root, path_on_node):
    """Inverse of :func:`node_path`: strip ``host_root`` from a path found under it."""
    root = posixpath.normpath(host_root or "/")
    path = posixpath.normpath(path_on_node)
    if root == "/":
        return normalize_host_path(path)
    if path == root:
        return "/"
    if not path.startswith(root + "/"):
        raise ValueError("%s is not under host_root %s" % (path_on_node, host_root))
    return normalize_host_path(path[len(root):])


def os_release_id(text):
    """The ``ID`` of an os-release file's text, unquoted and lower-cased; ``""`` when there is none."""
    for line in (text or "").splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name == "ID":
            return value.strip().strip("\"'").lower()
    return ""


def container_engines(exists):
    """The engines on a node: ``{engine: [the marks of CONTAINER_ENGINE_MARKS found]}``, in that
    order, for the host paths for which ``exists(path)`` is true."""
    found = {}
    for engine, marks in CONTAINER_ENGINE_MARKS:
        present = [mark for mark in marks if exists(mark)]
        if present:
            found[engine] = present
    return found


def join_host(base, *parts):
    """Join host path ``base`` with relative parts, keeping the result a host path."""
    return normalize_host_path(posixpath.join(normalize_host_path(base), *[p.lstrip("/") for p in parts]))


def is_under(path, root):
    """True when host path ``path`` is ``root`` or below it."""
    path = normalize_host_path(path)
    root = normalize_host_path(root)
    return root == "/" or path == root or path.startswith(root + "/")


def container_path(host_path, driver_root, container_driver_root=None):
    """Where a driver file at ``host_path`` appears inside containers.

    Paths under ``driver_root`` lose that prefix (``/home/kubernetes/bin/nvidia/lib64/x`` ->
    ``/lib64/x``) or, with ``container_driver_root``, are re-rooted under it
    (``/usr/local/nvidia/lib64/x``). Other paths are unchanged.
    """
    host_path = normalize_host_path(host_path)
    driver_root = normalize_host_path(driver_root)
    if not is_under(host_path, driver_root):
        return host_path
    relative = host_path[len(driver_root):].lstrip("/") if driver_root != "/" else host_path.lstrip("/")
    return join_host(container_driver_root or "/", relative)


def choose_driver_root(candidates, has_driver):
    """First candidate for which ``has_driver(candidate)`` is true, else None."""
    for candidate in candidates:
        if has_driver(candidate):
            return candidate
    return None


def choose_dev_root(driver_root, driver_root_has_nvidiactl):
    """``driver_root`` when it holds ``dev/nvidiactl`` (a driver container), else ``/``."""
    if driver_root_has_nvidiactl and normalize_host_path(driver_root) != "/":
        return normalize_host_path(driver_root), "driver_root holds dev/nvidiactl"
    return "/", "host /dev (driver_root has no dev/nvidiactl)"


def version_key(version):
    """``"535.104.12"`` -> ``(535, 104, 12)``, for ordering driver versions."""
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def sorted_versions(versions):
    """Driver versions, newest first."""
    return sorted(versions, key=version_key, reverse=True)


def choose_library_version(kernel_version, library_versions):
    """The version of the user-space libraries to use: the kernel module's when it is among
    ``library_versions``, else the newest of them; None when there are none."""
    if not library_versions:
        return None
    if kernel_version in library_versions:
        return kernel_version
    return sorted_versions(library_versions)[0]


def version_mismatch_message(kernel_version, library_versions, driver_root):
    """What to say when the loaded kernel module and the libraries under driver_root differ."""
    return (
        "kernel module %s, libraries %s found under %s: containers given these libraries fail (CUDA and NVML "
        "refuse a driver/library version mismatch). After a driver upgrade, reboot or reload the nvidia kernel "
        "module; or set driver_root to where the %s libraries are"
        % (kernel_version, ", ".join(sorted_versions(library_versions)), driver_root, kernel_version)
    )


def node_argument_spec(driver=False, read_ahead=False):
    """Argument spec for the node model options, as documented in the ``node`` doc fragment
    (``read_ahead``: its ``READ_AHEAD`` part, for the modules whose action plugin reads node files)."""
    spec = {"host_root": {"type": "path", "default": "/"}}
    if read_ahead:
        spec["read_ahead"] = {"type": "dict"}
    if driver:
        spec.update(
            driver_root={"type": "str", "default": "auto"},
            dev_root={"type": "str", "default": "auto"},
            library_search_paths={
                "type": "list",
                "elements": "str",
                "default": list(DEFAULT_LIBRARY_SEARCH_PATHS),
            },
        )
    return spec
