# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading node files for the controller (node side, standard library only).

One shape for what was read, whichever module reads it: ``node_files_info`` (one task's reads) and
``node_info``'s ``read_ahead`` (what the later tasks of a run will read, taken in the look
at the node that starts it). The action plugins take either (``plugin_utils.node_files``).

- a file: ``{"path", "resolved", "exists", "isdir", "content" (base64), "error"}``, symlinks
  resolved inside ``host_root``;
- a tree: every regular file under a directory, ``{relative name: {"content", "mode"}}``, links not
  followed (their names listed) and the temporary files of killed runs left out, as ``persist_files``
  sees its directory; a file over ``TREE_CONTENT_LIMIT`` bytes is sent as ``{"sha256", "size",
  "mode"}``: the controller only compares such files (the kept ``gpu-node-cdi``, some 180 KB), and
  every later task of the run is given what the look returned;
- an install: what ``toolkit_install`` observes of its directory to decide (each entry's type,
  mode, owner, link target and the SHA-256 of a file; the directories it would create; the euid),
  with ``/proc/self/mountinfo`` read as a file, so that a toolkit in place needs no module run.
"""

from __future__ import annotations

import base64
import hashlib
import os
import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_fs, node_model

MAX_SIZE = 16 * 1024 * 1024
TREE_CONTENT_LIMIT = 64 * 1024
MOUNTINFO = "/proc/self/mountinfo"


def read_file(node, host_path, max_size=MAX_SIZE):
    """The entry for ``host_path``: what ``node_files_info`` returns for one of its ``paths``."""
    entry = {"path": host_path, "resolved": host_path, "exists": False, "isdir": False}
    try:
        resolved = node.resolve(host_path)
    except node_fs.NodeFsError as exc:  # a link loop: something is there
        entry.update(exists=True, error=str(exc))
        return entry
    entry["resolved"] = resolved
    found = node.observe(resolved)
    if found is None:
        return entry
    entry.update(exists=True, isdir=found["type"] == "directory")
    if entry["isdir"]:
        return entry
    if found["size"] > max_size:
        entry["error"] = "larger than %d bytes" % max_size
        return entry
    try:
        data = node.read_bytes(resolved, max_size=max_size)
    except node_fs.NodeFsError as exc:
        entry["error"] = str(exc)
        return entry
    if data is None:  # gone since it was looked at
        entry["exists"] = False
    else:
        entry["content"] = base64.b64encode(data).decode("ascii")
    return entry


def exists(node, host_path):
    """Whether ``host_path`` is there (links resolved inside host_root; a link loop counts)."""
    try:
        return node.exists(node.resolve(host_path))
    except node_fs.NodeFsError:
        return True


def tree_files(node, real_dir):
    """``({relative name: (bytes, mode)}, [host paths of the subdirectories])`` under the
    directory ``real_dir`` (a resolved host path): regular files only, links not followed,
    temporary files of killed runs left out."""
    found = {}
    subdirs = []

    def walk(relative):
        here = posixpath.join(real_dir, relative) if relative else real_dir
        for name in node.list_dir(here):
            if node_fs.TEMP_NAME.match(name):
                continue
            rel = posixpath.join(relative, name) if relative else name
            info = node.observe(posixpath.join(real_dir, rel))
            if info is None:
                continue
            if info["type"] == "directory":
                subdirs.append(posixpath.join(real_dir, rel))
                walk(rel)
            elif info["type"] == "file":
                found[rel] = (node.read_bytes(posixpath.join(real_dir, rel)), info["mode"])

    walk("")
    return found, subdirs


def _tree_file(data, mode):
    if len(data) > TREE_CONTENT_LIMIT:
        return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "mode": mode}
    return {"content": base64.b64encode(data).decode("ascii"), "mode": mode}


def read_tree(node, host_dir):
    """The ``trees`` entry for ``host_dir``: ``{"resolved", "exists", "files": {name: {"content",
    "mode"} or {"sha256", "size", "mode"}}, "links": [names]}``; ``exists`` is false when there is nothing there, and the entry has an ``error``
    when something other than a directory is."""
    entry = {"resolved": host_dir, "exists": False, "files": {}, "links": []}
    try:
        resolved = node.resolve(host_dir)
    except node_fs.NodeFsError as exc:
        entry.update(exists=True, error=str(exc))
        return entry
    entry["resolved"] = resolved
    if not node.exists(resolved):
        return entry
    entry["exists"] = True
    if not node.is_dir(resolved):
        entry["error"] = "not a directory"
        return entry
    files, _subdirs = tree_files(node, resolved)
    entry["files"] = {name: _tree_file(data, mode) for name, (data, mode) in files.items() if data is not None}
    # Not followed, but named: a reader that would follow them knows it cannot answer from here.
    entry["links"] = [name for name in node.list_dir(resolved)
                      if (node.observe(posixpath.join(resolved, name)) or {}).get("type") == "symlink"]
    return entry


def observe_install(node, host_dir):
    """The ``installs`` entry for ``host_dir``: ``{"resolved", "dir", "entries", "missing_dirs",
    "euid"}``; ``dir`` is what is at the resolved path (None: nothing), ``entries`` every name in it
    (temporary files of killed runs left out) observed with its digest. An ``error`` replaces them
    when the path cannot be resolved."""
    try:
        resolved = node.resolve(host_dir)
    except node_fs.NodeFsError as exc:
        return {"resolved": host_dir, "error": str(exc)}
    found = node.observe(resolved)
    entries = {}
    if found is not None and found["type"] == "directory":
        for name in node.list_dir(resolved):
            if not node_fs.TEMP_NAME.match(name):
                entries[name] = node.observe(posixpath.join(resolved, name), digest=True)
    return {"resolved": resolved, "dir": found, "entries": entries, "missing_dirs": node.missing_dirs(resolved),
            "euid": os.geteuid()}


def read_ahead(node, files=(), trees=(), exist=(), installs=()):
    """What ``node_info`` returns as ``read_ahead``: each of ``files`` read, each of
    ``trees`` listed, each of ``installs`` observed (and the mount table read), and which of
    ``exist`` and of the directories above ``files`` exist (``checked`` names every path whose
    existence was asked, ``existing`` those that exist)."""
    installs = [node_model.normalize_host_path(d) for d in installs]
    wanted = [node_model.normalize_host_path(p) for p in files]
    if installs and MOUNTINFO not in wanted:
        wanted.append(MOUNTINFO)
    checked = []
    for host_path in list(exist) + [d for p in wanted for d in _parents(p)]:
        host_path = node_model.normalize_host_path(host_path)
        if host_path not in checked:
            checked.append(host_path)
    return {
        "files": [read_file(node, p) for p in wanted],
        "trees": {node_model.normalize_host_path(d): read_tree(node, node_model.normalize_host_path(d)) for d in trees},
        "installs": {d: observe_install(node, d) for d in installs},
        "checked": checked,
        "existing": [p for p in checked if exists(node, p)],
    }


def _parents(host_path):
    found = []
    current = posixpath.dirname(host_path)
    while current not in ("/", ""):
        found.append(current)
        current = posixpath.dirname(current)
    return found
