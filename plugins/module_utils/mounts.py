# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/proc/self/mountinfo``: which mount holds a path, and whether it is writable and exec.

Pure functions, no I/O.
"""

from __future__ import annotations

import re

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_model

_OCTAL = re.compile(r"\\([0-7]{3})")


class MountinfoError(Exception):
    pass


def unescape(field):
    """mountinfo escapes space, tab, newline and backslash as ``\\NNN`` octal."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text):
    """One dict per line: ``mount_id``, ``parent_id``, ``root``, ``mount_point``, ``options``
    (per-mount, a list), ``fs_type``, ``source``, ``super_options`` (a list)."""
    mounts = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        try:
            sep = fields.index("-", 6)
            mounts.append({
                "mount_id": int(fields[0]),
                "parent_id": int(fields[1]),
                "root": unescape(fields[3]),
                "mount_point": unescape(fields[4]),
                "options": fields[5].split(","),
                "fs_type": fields[sep + 1],
                "source": unescape(fields[sep + 2]),
                "super_options": fields[sep + 3].split(",") if len(fields) > sep + 3 else [],
            })
        except (ValueError, IndexError):
            raise MountinfoError("line %d of mountinfo is not a mount: %r" % (number, line)) from None
    return mounts


def find_mount(mounts, path):
    """The mount holding ``path``: the deepest mount point above it, the later one on a tie
    (a mount stacked on the same point hides the earlier one)."""
    best = None
    for mount in mounts:
        if node_model.is_under(path, mount["mount_point"]):
            if best is None or len(mount["mount_point"]) >= len(best["mount_point"]):
                best = mount
    return best


def locate(mounts, host_root, host_path):
    """``(mount, path_in_table)`` for host path ``host_path`` on a node seen at ``host_root``.

    When ``host_root`` is not ``/``, the table may be the one of the namespace this code runs
    in (mount points include ``host_root``) or the node's own (host paths). The first is
    assumed when some mount point lies at or under ``host_root``.
    """
    root = node_model.normalize_host_path(host_root or "/")
    if root != "/" and any(node_model.is_under(m["mount_point"], root) for m in mounts):
        path = node_model.node_path(root, host_path)
    else:
        path = node_model.normalize_host_path(host_path)
    return find_mount(mounts, path), path


def is_read_only(mount):
    return "ro" in mount["options"] or "ro" in mount["super_options"]


def is_noexec(mount):
    return "noexec" in mount["options"]


def remount_exec_options(mount):
    """``mount -o`` value that makes a bind mount of ``mount`` exec, keeping its other flags."""
    kept = [opt for opt in mount["options"] if opt not in ("noexec", "exec") and not opt.startswith("shared:")]
    return ",".join(["remount", "bind", "exec"] + kept)


def describe(mount):
    return "%s (%s, options %s)" % (mount["mount_point"], mount["fs_type"], ",".join(mount["options"]))
