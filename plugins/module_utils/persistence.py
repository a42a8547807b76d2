# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What to keep across reboots, and what has to change to get there (pure, no I/O).

On Container-Optimized OS ``/etc`` and ``/var/run`` are tmpfs and GKE writes the container engine's
config (containerd's, or Docker's ``daemon.json`` on older images) again at boot, so provisioning
keeps copies in a directory that survives, next to a script that puts them back (see the gpu_node
role). The names inside that directory are fixed here; that script uses the same names.
"""

from __future__ import annotations

import hashlib
import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config, edit_journal, node_record

PROVISIONED_CONFIG = "containerd-provisioned.toml"
BASE_CONFIG = "containerd-base.toml"
DOCKER_PROVISIONED = "docker-provisioned.json"
DOCKER_BASE = "docker-base.json"
# docker_runtime created daemon.json: the boot's config it started from is no file at all.
DOCKER_BASE_MISSING = "docker-base.missing"
DOCKER_BASE_MISSING_TEXT = "daemon.json did not exist before provisioning wrote it\n"
DOCKER_JOURNAL = "docker-journal.json"
SPEC_DIR = "cdi"
FILE_MODE = 0o644
EXEC_MODE = 0o755
# docker_runtime writes its journal readable by root only (it holds a copy of daemon.json).
JOURNAL_MODE = 0o600
# plan()'s steps, as the module's ``changes`` name them.
# --diff shows a kept file's text, except a binary or a file past this size, which it names by size
# and digest: the gpu-node-cdi program alone is about 150 KB, no preview a person reads per node.
DIFF_TEXT_LIMIT = 16 * 1024


def diff_text(data):
    """What ``--diff`` shows of a kept file's bytes ``data`` (None: absent)."""
    if data is None:
        return None
    if len(data) > DIFF_TEXT_LIMIT or b"\0" in data:
        return "(%d bytes, sha256 %s; not shown)\n" % (len(data), hashlib.sha256(data).hexdigest())
    return data.decode("utf-8", "replace")


CHANGE_ACTIONS = {"create": "created", "update": "updated", "chmod": "mode_changed", "remove": "removed"}


def spec_copy_name(spec_host_path):
    """Where a CDI spec's copy sits in the kept directory: its host path under ``cdi/``."""
    return posixpath.join(SPEC_DIR, posixpath.normpath(spec_host_path).lstrip("/"))


def is_plain_name(name):
    """Whether ``name`` stays inside the kept directory (relative, no ``..``, not under ``cdi/``)."""
    parts = name.split("/")
    return (bool(name) and not name.startswith("/") and ".." not in parts and "" not in parts
            and "." not in parts and parts[0] != SPEC_DIR)


def wanted_files(containerd_text, config_name, specs, files, executables,
                 docker_data=None, docker_journal_text=None, docker_journal_name=None):
    """``{relative name: (bytes, mode)}`` the kept directory must hold.

    ``containerd_text`` is the provisioned config (``None`` when there is none); the config it
    started from is given back from the edit journal, so it needs no read before the edit.
    ``specs`` maps each CDI spec's host path to its bytes; ``files`` maps names to text.
    ``docker_data`` is Docker's ``daemon.json`` as provisioning left it (``None``: not kept) and
    ``docker_journal_text`` docker_runtime's journal next to it (see :func:`docker_files`), whose
    host path ``docker_journal_name`` names it in errors.

    Raises edit_journal.JournalError or docker_config.ConfigError for a damaged journal.
    """
    wanted = docker_files(docker_data, docker_journal_text,
                          docker_journal_name or docker_config.journal_path(docker_config.DEFAULT_PATH))
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


def docker_files(data, journal_text, journal_name):
    """The copies that put ``daemon.json`` back: the provisioned bytes; with docker_runtime's journal,
    the journal itself (the file is not undoable without it) and the config the first edit started
    from, its ``original``, or the marker that there was none.

    Without a journal nothing says what the boot's config is to be compared with, so only the
    provisioned copy is kept and the boot script leaves ``daemon.json`` alone.
    """
    if data is None:
        return {}
    wanted = {DOCKER_PROVISIONED: (data, FILE_MODE)}
    journal = docker_config.load_journal(journal_text, journal_name)
    if journal is None:
        return wanted
    wanted[DOCKER_JOURNAL] = (journal_text.encode("utf-8"), JOURNAL_MODE)
    original = journal.get("original")
    if original is None:
        wanted[DOCKER_BASE_MISSING] = (DOCKER_BASE_MISSING_TEXT.encode("utf-8"), FILE_MODE)
    else:
        wanted[DOCKER_BASE] = (original.encode("utf-8"), FILE_MODE)
    return wanted


def plan(wanted, current):
    """The steps from ``current`` to ``wanted``: ``[(name, action)]``, sorted by name.

    ``current`` maps each file in the kept directory to ``(bytes, mode)``, as ``wanted`` does (or
    both to ``(digest, mode)``: only equality is used). Actions are
    ``create``, ``update`` (bytes differ), ``chmod`` (only the mode differs) and ``remove`` (a
    copy nothing asks for any more, e.g. a spec no longer written). The run's record
    (``node_record.RECORD_NAME``) is the node_record module's, and left to it.
    """
    steps = []
    for name in sorted(set(wanted) | set(current)):
        if name == node_record.RECORD_NAME:
            continue
        if name not in wanted:
            steps.append((name, "remove"))
        elif name not in current:
            steps.append((name, "create"))
        elif current[name][0] != wanted[name][0]:
            steps.append((name, "update"))
        elif current[name][1] != wanted[name][1]:
            steps.append((name, "chmod"))
    return steps
