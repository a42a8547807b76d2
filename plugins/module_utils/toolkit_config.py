# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the NVIDIA Container Toolkit's ``config.toml`` must say, as pure functions.

No I/O and standard library only: the action plugin asks the node which files exist and
passes the answers in; ``plugin_utils/toolkit_toml.py`` applies the result to the document.
"""

from __future__ import annotations

import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import (
    DEFAULT_LIBRARY_SEARCH_PATHS,
    DRIVER_ROOT_CANDIDATES,
    join_host,
    normalize_host_path,
)
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.runtimes import LOW_LEVEL_RUNTIMES

# What marks a driver root for driver_root=auto here: the CUDA driver's SONAME link, which the
# driver's installers (NVIDIA's .run, GKE's installer, the distributions' packages) all make.
DRIVER_ROOT_MARKER = "libcuda.so.1"

CONFIG_RELATIVE_PATH = ".config/nvidia-container-runtime/config.toml"
MODES = ("auto", "cdi", "legacy", "csv")
HOST_LDCONFIGS = ("/sbin/ldconfig.real", "/sbin/ldconfig")


class ToolkitConfigError(ValueError):
    """The options cannot make a valid config; the message names the option."""


def default_path(install_dir):
    """``<install_dir>/.config/nvidia-container-runtime/config.toml``, where the wrappers point."""
    return join_host(install_dir, CONFIG_RELATIVE_PATH)


def driver_root_probes(driver_root):
    """Host paths whose existence :func:`choose_driver_root` needs to know (none for an explicit value)."""
    if driver_root != "auto":
        return []
    return [join_host(root, lib, DRIVER_ROOT_MARKER) for root in DRIVER_ROOT_CANDIDATES
            for lib in DEFAULT_LIBRARY_SEARCH_PATHS]


def choose_driver_root(requested, existing):
    """The ``nvidia-container-cli.root`` value and why.

    ``auto``: the first of :data:`DRIVER_ROOT_CANDIDATES` holding :data:`DRIVER_ROOT_MARKER` in one
    of the default library directories; ``existing`` is the host paths of
    :func:`driver_root_probes` that exist on the node.
    """
    if requested != "auto":
        return normalize_host_path(requested), "driver_root option"
    existing = set(existing or ())
    for root in DRIVER_ROOT_CANDIDATES:
        for lib in DEFAULT_LIBRARY_SEARCH_PATHS:
            probe = join_host(root, lib, DRIVER_ROOT_MARKER)
            if probe in existing:
                return root, "auto: found %s" % probe
    raise ToolkitConfigError(
        "driver_root=auto found no %s under %s: set driver_root to the host path of the driver's files "
        "(gpu_node.container_toolkit.nvidia_driver_info reports it as driver_root)"
        % (DRIVER_ROOT_MARKER, ", ".join(DRIVER_ROOT_CANDIDATES)))


def ldconfig_candidates(driver_root):
    """Host paths whose existence :func:`choose_ldconfig` needs to know; for ``auto``, those of
    every driver root it may choose."""
    roots = DRIVER_ROOT_CANDIDATES if driver_root == "auto" else (driver_root,)
    paths = list(HOST_LDCONFIGS)
    for root in (normalize_host_path(r) for r in roots):
        if root != "/":
            paths += [join_host(root, p) for p in HOST_LDCONFIGS] + [join_host(root, "etc/ld.so.cache")]
    return paths


def choose_ldconfig(requested, driver_root, existing):
    """The ``nvidia-container-cli.ldconfig`` value and why.

    ``existing``: the host paths of :func:`ldconfig_candidates` that exist on the node.
    ``auto``: the driver root's own ldconfig only when the driver root is a full filesystem
    (it has ``etc/ld.so.cache`` and an ``sbin/ldconfig``: a driver container); otherwise the
    host's ``/sbin/ldconfig.real`` when present (Debian, Ubuntu), else ``/sbin/ldconfig``. A
    driver root like GKE's ``/home/kubernetes/bin/nvidia`` has no ``sbin/``, so pointing into
    it would break every container start.
    """
    if requested and requested != "auto":
        return requested, "ldconfig option"
    existing = set(existing or ())
    root = normalize_host_path(driver_root)
    if root != "/" and join_host(root, "etc/ld.so.cache") in existing:
        for path in HOST_LDCONFIGS:
            candidate = join_host(root, path)
            if candidate in existing:
                return "@" + candidate, "driver root %s is a full filesystem with %s" % (root, path)
    for path in HOST_LDCONFIGS:
        if path in existing:
            return "@" + path, "the host's %s" % path
    return "@/sbin/ldconfig", "default (no ldconfig found on the host)"


def low_level_runtimes(requested, runc_binary=None):
    """``nvidia-container-runtime.runtimes``: as given, else containerd's runc binary, else runc, crun."""
    if requested:
        return list(requested)
    if runc_binary:
        return [runc_binary]
    return list(LOW_LEVEL_RUNTIMES)


def merge(base, extra):
    """``base`` updated recursively with ``extra`` (new dicts; inputs untouched)."""
    result = dict(base)
    for key, value in (extra or {}).items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = value
    return result


def wanted_settings(install_dir, driver_root, ldconfig, mode="auto", runtimes=None, default_kind=None,
                    annotation_prefixes=None, spec_dirs=None, settings=None):
    """The nested keys the config must hold. Options left as None are not managed."""
    if mode not in MODES:
        raise ToolkitConfigError("mode must be one of %s, got %r" % (", ".join(MODES), mode))
    if settings is not None and not isinstance(settings, dict):
        raise ToolkitConfigError("settings must be a dict of TOML tables and keys, got %r" % (settings,))
    install_dir = normalize_host_path(install_dir)
    cdi = {}
    if default_kind is not None:
        if "/" not in default_kind:
            raise ToolkitConfigError("default_kind must look like vendor.com/class, got %r" % default_kind)
        cdi["default-kind"] = default_kind
    if annotation_prefixes is not None:
        cdi["annotation-prefixes"] = list(annotation_prefixes)
    if spec_dirs is not None:
        cdi["spec-dirs"] = [normalize_host_path(d) for d in spec_dirs]
    runtime = {"mode": mode, "runtimes": list(runtimes or LOW_LEVEL_RUNTIMES)}
    if cdi:
        runtime["modes"] = {"cdi": cdi}
    wanted = {
        "nvidia-container-cli": {
            "root": normalize_host_path(driver_root),
            "path": posixpath.join(install_dir, "nvidia-container-cli"),
            "ldconfig": ldconfig,
            "load-kmods": True,
        },
        "nvidia-container-runtime": runtime,
        "nvidia-container-runtime-hook": {
            "path": posixpath.join(install_dir, "nvidia-container-runtime-hook"),
            "skip-mode-detection": True,
        },
        "nvidia-ctk": {"path": posixpath.join(install_dir, "nvidia-ctk")},
    }
    return merge(wanted, settings)


def foreign_keys(data, settings=None):
    """The dotted keys of the config ``data`` that this module never sets (with ``settings``, the
    option's own keys): what someone else put in the file, which state=absent must not delete."""
    ours = {keys for keys, _value in flatten(wanted_settings("/", "/", "@/sbin/ldconfig", default_kind="a/b",
                                                             annotation_prefixes=[], spec_dirs=[], settings=settings))}
    return [".".join(keys) for keys, _value in flatten(data) if keys not in ours]


def flatten(settings, prefix=()):
    """``[(("a", "b"), value), ...]`` for each leaf of a nested dict, in order."""
    items = []
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            items.extend(flatten(value, prefix + (key,)))
        else:
            items.append((prefix + (key,), value))
    return items
