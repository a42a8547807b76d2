"""A listing of a whole fake node tree, to prove that a run left it as it was."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def listing(root):
    """``{relative path: (type, mode, uid, gid, size, sha256, link target, rdev)}`` of the whole tree.

    Regular files carry their size and sha256, links their target, device nodes (major, minor).
    Directory sizes are left out: they are the file system's bookkeeping (ext4 never shrinks a
    directory), not something a node holds. Links to directories are listed, not followed.
    """
    root = Path(root)
    found = {}
    for top, dirs, names in os.walk(root):
        for name in sorted(dirs + names):
            path = Path(top) / name
            info = os.lstat(path)
            mode = info.st_mode
            kind, size, digest, target, rdev = "other", None, None, None, None
            if stat.S_ISDIR(mode):
                kind = "dir"
            elif stat.S_ISREG(mode):
                kind, size = "file", info.st_size
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(mode):
                kind, target = "link", os.readlink(path)
            elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                kind = "char" if stat.S_ISCHR(mode) else "block"
                rdev = (os.major(info.st_rdev), os.minor(info.st_rdev))
            elif stat.S_ISSOCK(mode):
                kind = "socket"
            found[path.relative_to(root).as_posix()] = (kind, oct(stat.S_IMODE(mode)), info.st_uid, info.st_gid,
                                                        size, digest, target, rdev)
    return found


def differences(before, after):
    """``(only before, only after, changed)`` between two listings: sorted relative paths."""
    return (sorted(set(before) - set(after)), sorted(set(after) - set(before)),
            sorted(p for p in set(before) & set(after) if before[p] != after[p]))
