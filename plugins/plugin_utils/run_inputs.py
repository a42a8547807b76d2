# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run of the gpu_node role decides from besides the node (controller side).

Its settings, the contents of the toolkit's sources on the controller and the collection's own
files, as one digest (``node_record`` says what it is for). Contents, not names or dates: a source
rebuilt in place, or a collection edited in a checkout, makes a new digest.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_record

COLLECTION_ROOT = Path(__file__).resolve().parents[2]
# What decides what a run writes: the code and the roles (meta/ for runtime.yml's action groups).
COLLECTION_PARTS = ("plugins", "roles", "meta")
SKIPPED_DIRS = {"__pycache__"}


def _file_sha256(path):
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def tree_digest(path):
    """The digest of what is at ``path`` (links at the top followed): a file's bytes, or every
    entry under a directory (names, types, modes, bytes, link targets; links inside not followed)."""
    top = os.path.realpath(path)
    found = os.stat(top)
    if not stat.S_ISDIR(found.st_mode):
        return node_record.digest(["file", stat.S_IMODE(found.st_mode), _file_sha256(top)])
    entries = []
    for current, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(dirs + files):
            full = os.path.join(current, name)
            relative = os.path.relpath(full, top)
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                entries.append([relative, "link", os.readlink(full)])
            elif stat.S_ISREG(info.st_mode):
                entries.append([relative, "file", stat.S_IMODE(info.st_mode), _file_sha256(full)])
            elif stat.S_ISDIR(info.st_mode):
                entries.append([relative, "dir", stat.S_IMODE(info.st_mode)])
            else:
                entries.append([relative, "other", stat.S_IFMT(info.st_mode)])
    return node_record.digest(entries)


def collection_digest(root=COLLECTION_ROOT):
    """The digest of the collection's code and roles, as installed where this runs."""
    parts = []
    for part in COLLECTION_PARTS:
        if (Path(root) / part).is_dir():
            parts.append([part, tree_digest(Path(root) / part)])
    return node_record.digest(parts)


def _fingerprint(root):
    """Changes whenever a file of the digest is added, removed or written: names, sizes, mtimes."""
    entries = []
    for part in COLLECTION_PARTS:
        for current, dirs, files in os.walk(os.path.join(root, part)):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            for name in files:
                info = os.lstat(os.path.join(current, name))
                entries.append((current, name, info.st_size, info.st_mtime_ns))
    return node_record.digest(sorted(entries))[:16]


def collection_digest_cached(cache_dir, root=COLLECTION_ROOT):
    """:func:`collection_digest`, kept in ``cache_dir`` (the controller's temp dir of one run): every
    host's worker asks for it. Without a usable ``cache_dir`` each computes its own."""
    try:
        path = os.path.join(cache_dir, "gpu_node-collection-%s" % _fingerprint(str(root)))
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except FileNotFoundError:
        found = collection_digest(root)
        try:
            handle, temp = tempfile.mkstemp(dir=cache_dir, prefix=".gpu_node-collection-")
            with os.fdopen(handle, "w", encoding="ascii") as out:
                out.write(found)
            os.replace(temp, path)
        except OSError:
            pass
        return found
    except OSError:
        return collection_digest(root)
