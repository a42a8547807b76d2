# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What to keep across reboots, and what has to change to get there (pure, no I/O).

On Container-Optimized OS ``/etc`` and ``/var/run`` are tmpfs and GKE writes containerd's config
again at boot, so provisioning keeps copies in a directory that survives, next to a script that
puts them back (see the gpu_node role). The names inside that directory are fixed here.
"""

from __future__ import annotations

import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal

PROVISIONED_CONFIG = "containerd-provisioned.toml"
BASE_CONFIG = "containerd-base.toml"
SPEC_DIR = "cdi"
FILE_MODE = 0o644
EXEC_MODE = 0o755
# plan()'s steps, as the module's ``changes`` name them.
CHANGE_ACTIONS = {"create": "created", "update": "updated", "chmod": "mode_changed", "remove": "removed"}


def spec_copy_name(spec_host_path):
    """Where a CDI spec's copy sits in the kept directory: its host path under ``cdi/``."""
    return posixpath.join(SPEC_DIR, posixpath.normpath(spec_host_path).lstrip("/"))


def is_plain_name(name):
    """Whether ``name`` stays inside the kept directory (relative, no ``..``, not under ``cdi/``)."""
    parts = name.split("/")
    return (bool(name) and not name.startswith("/") and ".." not in parts and "" not in parts
            and "." not in parts and parts[0] != SPEC_DIR)


def wanted_files(containerd_text, config_name, specs, files, executables):
    """``{relative name: (bytes, mode)}`` the kept directory must hold.

    ``containerd_text`` is the provisioned config (``None`` when there is none); the config it
    started from is given back from the edit journal, so it needs no read before the edit.
    ``specs`` maps each CDI spec's host path to its bytes; ``files`` maps names to text.
    """
    wanted = {}
    if containerd_text is not None:
        wanted[PROVISIONED_CONFIG] = (containerd_text.encode("utf-8"), FILE_MODE)
        if edit_journal.has_journal(containerd_text):
            base = edit_journal.undo_text(containerd_text, config_name)
            wanted[BASE_CONFIG] = (base.encode("utf-8"), FILE_MODE)
    for host_path, data in specs.items():
        wanted[spec_copy_name(host_path)] = (data, FILE_MODE)
    for name, text in files.items():
        wanted[name] = (text.encode("utf-8"), EXEC_MODE if name in executables else FILE_MODE)
    return wanted


def plan(wanted, current):
    """The steps from ``current`` to ``wanted``: ``[(name, action)]``, sorted by name.

    ``current`` maps each file in the kept directory to ``(bytes, mode)``. Actions are
    ``create``, ``update`` (bytes differ), ``chmod`` (only the mode differs) and ``remove`` (a
    copy nothing asks for any more, e.g. a spec no longer written).
    """
    steps = []
    for name in sorted(set(wanted) | set(current)):
        if name not in wanted:
            steps.append((name, "remove"))
        elif name not in current:
            steps.append((name, "create"))
        elif current[name][0] != wanted[name][0]:
            steps.append((name, "update"))
        elif current[name][1] != wanted[name][1]:
            steps.append((name, "chmod"))
    return steps
