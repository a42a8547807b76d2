# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every container engine's rules share: the runtimes this collection registers, and which
low-level runtime (runc, crun) they wrap.

Pure, standard library only. ``containerd_config``, ``docker_config`` and ``crio_config`` are the
engines' own rules; they take these from here.
"""

from __future__ import annotations

import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import DEFAULT_INSTALL_DIR

# The runtimes registered when none are given: name, and the suffix of the binary in install_dir.
RUNTIME_SUFFIXES = (("nvidia", ""), ("nvidia-cdi", ".cdi"), ("nvidia-legacy", ".legacy"))
# The OCI runtimes the nvidia runtime wraps, in the order it looks for them when it is told none.
LOW_LEVEL_RUNTIMES = ("runc", "crun")


class ConfigError(ValueError):
    """An engine's configuration cannot be edited as asked; the message names the file or option
    and says what to do. Nothing is written."""


def default_runtimes(install_dir):
    """The runtimes registered by default: nvidia, nvidia-cdi, nvidia-legacy in ``install_dir``."""
    base = posixpath.join(install_dir, "nvidia-container-runtime")
    return [{"name": name, "binary": base + suffix} for name, suffix in RUNTIME_SUFFIXES]


def normalize_runtimes(runtimes, install_dir=None, reserved=()):
    """The ``runtimes`` option checked: ``[{name, binary}]``, each name once; empty -> the defaults.
    ``reserved``: ``{name: why}`` of names the engine refuses."""
    if not runtimes:
        return default_runtimes(install_dir or DEFAULT_INSTALL_DIR)
    result = []
    seen = set()
    for entry in runtimes:
        name = entry.get("name")
        binary = entry.get("binary")
        if not name or not binary:
            raise ConfigError("each entry of runtimes needs 'name' and 'binary', got %r" % (entry,))
        if name in seen:
            raise ConfigError("runtime %r is listed twice in runtimes" % name)
        if name in reserved:
            raise ConfigError("runtimes: the name %r is reserved (%s); choose another name" % (name, reserved[name]))
        seen.add(name)
        result.append({"name": name, "binary": binary})
    return result


def base_runtime(candidates, defined, ours, usable=None):
    """The low-level runtime the nvidia runtimes start from (copy its options, wrap its binary):
    the first of ``candidates`` (the engine's order: its default runtime first) that ``defined``
    has and ``usable(name)`` accepts (it runs OCI containers as runc does), those of ``ours`` (the
    names this collection registers, e.g. an ``nvidia`` default) last. None when there is none."""
    order = []
    for name in candidates:
        if name and name not in order:
            order.append(name)
    for name in [n for n in order if n not in ours] + [n for n in order if n in ours]:
        if name in defined and (usable is None or usable(name)):
            return name
    return None
