"""A directory tree as data, to compare before and after a run."""

from __future__ import annotations

import hashlib
import os
import stat


def snapshot(root):
    """Every entry under ``root``: type, mode, owner, size, mtime, device number, link target, content hash."""
    entries = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            entry = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid,
                     info.st_size, info.st_mtime_ns, info.st_rdev)
            if stat.S_ISLNK(info.st_mode):
                entry += (os.readlink(path),)
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    entry += (hashlib.sha256(handle.read()).hexdigest(),)
            entries[os.path.relpath(path, root)] = entry
    return entries
