"""One builder at a time for a tree cached under ``.cache``.

pytest-xdist's workers all ask for a cached tree at once; two of them building into the same
directory break each other's tree (a debootstrap whose target another worker removed fails half way
through configuring packages).
"""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path


@contextlib.contextmanager
def held(cache_dir):
    """Hold the exclusive lock of ``cache_dir`` (created if missing) for the ``with`` block."""
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".lock", "w", encoding="ascii") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
