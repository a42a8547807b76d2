# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record a full run leaves on a node, and the rule that lets the next run skip its steps.

Standard library only, no I/O; used on the node (``node_info`` digests its look, ``node_record``
writes the record) and on the controller (``gpu_node_choices`` compares). A full run of the
``gpu_node`` role that finished its steps writes, in the kept directory, the digest of its inputs
(the role's settings, the toolkit's sources, the collection's own files) next to the digest of the
look at the node taken after its writes. A later run whose inputs have the same digest and whose
look has the same digest would change nothing, since every step decides from exactly those: it
skips the steps. Anything else (a setting, a source, a file on the node, the driver, a device
node, a new release of the collection) makes a digest differ, and the steps run as always.

A hostile node can forge a record; what that buys it is a run that leaves the node alone, which
it can have anyway by refusing the connection. The record is never read for anything else.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import mounts, node_model

RECORD_NAME = "provisioned.json"
FORMAT = 1
MOUNTINFO = "/proc/self/mountinfo"


def canonical(value):
    """The one text of a JSON value: sorted keys, no spaces, ASCII."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def digest(value):
    return hashlib.sha256(canonical(value).encode("ascii")).hexdigest()


def is_record(tree_path, name):
    """Whether ``name`` in the tree read at ``tree_path`` is a record (in a kept directory)."""
    return name == RECORD_NAME and posixpath.basename(tree_path.rstrip("/")) == ".gpu-node"


def _decoded(content):
    try:
        return base64.b64decode(content, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _stable_mounts(entry, read_ahead):
    """The mounts toolkit_install decides from (those holding an install dir), without what
    changes at each mount or boot (mount ids, peer groups): pods mount and unmount all the time."""
    text = _decoded(entry.get("content") or "")
    if text is None:
        return {"unreadable": True}
    try:
        table = mounts.parse_mountinfo(text)
    except mounts.MountinfoError:
        return {"unreadable": True}
    host_root = read_ahead.get("host_root") or "/"
    held = {}
    for host_dir, observed in sorted((read_ahead.get("installs") or {}).items()):
        mount, _path = mounts.locate(table, host_root, observed.get("resolved") or host_dir)
        held[host_dir] = None if mount is None else {
            key: mount[key] for key in ("root", "mount_point", "options", "fs_type", "source", "super_options")}
    return {"held_by": held}


def look_digest(look):
    """The digest of a look (``node_look.look``'s result with its ``read_ahead``), leaving out
    the records themselves and all of the mount table but the mounts that hold an install dir."""
    look = dict(look)
    look.pop("look_digest", None)
    read_ahead = look.get("read_ahead")
    if isinstance(read_ahead, dict):
        read_ahead = dict(read_ahead)
        read_ahead["files"] = [
            dict(entry, content=_stable_mounts(entry, read_ahead))
            if node_model.normalize_host_path(entry.get("path") or "/") == MOUNTINFO and entry.get("content") else entry
            for entry in read_ahead.get("files") or []]
        trees = {}
        for tree_path, tree in (read_ahead.get("trees") or {}).items():
            if isinstance(tree, dict) and isinstance(tree.get("files"), dict):
                tree = dict(tree, files={name: found for name, found in tree["files"].items()
                                         if not is_record(tree_path, name)})
            trees[tree_path] = tree
        read_ahead["trees"] = trees
        look["read_ahead"] = read_ahead
    return digest(look)


def record_text(inputs, look):
    """The record's text for the ``inputs`` digest and the ``look`` digest."""
    return canonical({"format": FORMAT, "inputs": inputs, "look": look, "by": "gpu_node.container_toolkit"}) + "\n"


def records_in(look):
    """Every record the look read (in any kept directory it read): ``[(path, parsed or None)]``."""
    found = []
    trees = ((look or {}).get("read_ahead") or {}).get("trees") or {}
    for tree_path, tree in sorted(trees.items()):
        files = tree.get("files") if isinstance(tree, dict) else None
        if not isinstance(files, dict):
            continue
        for name, entry in files.items():
            if is_record(tree_path, name):
                text = _decoded((entry or {}).get("content") or "")
                try:
                    parsed = json.loads(text) if text is not None else None
                except ValueError:
                    parsed = None
                found.append((posixpath.join(tree_path, name), parsed if isinstance(parsed, dict) else None))
    return found


def in_place(look, inputs):
    """Whether the look found a record of a run with the ``inputs`` digest that left the node as
    this look found it. False without a look digest (an older node_info) or an inputs digest."""
    current = (look or {}).get("look_digest")
    if not current or not inputs:
        return False
    return any(record is not None and record.get("format") == FORMAT and record.get("inputs") == inputs
               and record.get("look") == current for _path, record in records_in(look))
