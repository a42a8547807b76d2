# -*- coding: utf-8 -*-
"""Make the collection importable as ``ansible_collections.gpu_node.container_toolkit``.

ansible-test runs from inside ``ansible_collections/gpu_node/container_toolkit``; a plain
``pytest`` from a git checkout gets the same layout through a symlink under ``.cache/``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def collections_root():
    if REPO.parent.name == "gpu_node" and REPO.parent.parent.name == "ansible_collections":
        return REPO.parent.parent.parent
    root = REPO / ".cache" / "collections"
    link = root / "ansible_collections" / "gpu_node" / "container_toolkit"
    if not link.is_symlink():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(REPO)
    return root


_ROOT = str(collections_root())
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", _ROOT)
sys.path.insert(0, str(REPO / "tests" / "support"))

pytest_plugins = ["fakenode_fixtures"]
