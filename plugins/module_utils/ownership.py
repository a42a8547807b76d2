# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one record of what this collection created on a node, and the one rule for trusting it.

Standard library only, no I/O. Every file the collection owns or edits says which directories its
write created (``state=absent`` removes them again when they are empty), in one format: a JSON list
of host paths, outermost first. A text file (TOML, YAML, a CRI-O drop-in) carries it on a comment
line (:func:`created_line`); a JSON document (Docker's journal, the toolkit manifest) in its
``created_dirs`` member. The node can be hostile, so a record read back is never trusted as it
stands: :func:`removable` keeps only the owning file's own directory and its parents, and the
callers remove only directories that are still empty.

Backups (``backup: true``) are named here too, as Ansible names them, so that ``remove_backups``
finds exactly the copies this collection made.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import time

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import is_under, normalize_host_path

TAG = "gpu_node.container_toolkit"
KEY = "created_dirs"
# Opens a file this collection created from nothing. The words between "created" and the list may
# say what state=absent does with the file; readers take the list only.
CREATED = "# %s: created" % TAG
CREATED_RE = re.compile(r"^# " + re.escape(TAG) + r": created\b[^\r\n\[]*(\[[^\r\n]*\])[ \t]*(?=\r?$)", re.M)
REMOVES_EDITED = "this file when nothing else is in it"
REMOVES_OWNED = "this file"
# Records written by earlier releases, read (only in the files that carried them) so that a node
# they provisioned is undone in full: CRI-O drop-ins listed the directories space-separated, CDI
# specs as a JSON list of their own.
LEGACY_CRIO = (re.compile(r"^# created directories: ([^\n]*)$", re.M), str.split)
LEGACY_CDI = (re.compile(r"^# created_dirs: (\[[^\n]*\])[^\n]*$", re.M), json.loads)
# Ends the head of a file this collection writes whole (a CRI-O drop-in): a digest of what follows,
# so that state=absent can tell a file changed by hand since, and keep a copy of it.
WRITTEN_RE = re.compile(r"^# " + re.escape(TAG) + r": wrote sha256:([0-9a-f]{16})\b[^\n]*\n", re.M)
BACKUP_STAMP = r"\.[0-9]+\.[0-9]{4}-[0-9]{2}-[0-9]{2}@[0-9]{2}:[0-9]{2}:[0-9]{2}~"


def outermost_first(dirs):
    return sorted(set(dirs), key=lambda d: (d.count("/"), d))


def deepest_first(dirs):
    """The order directories are removed in: a child before its parent."""
    return sorted(set(dirs), key=lambda d: (-d.count("/"), d))


def _host_paths(value):
    """``value`` as a list of host paths, or None when it is not one (a damaged or forged record)."""
    if not isinstance(value, list) or not all(isinstance(d, str) and d.startswith("/") and "\0" not in d
                                              for d in value):
        return None
    return value


def created_line(dirs, removes=REMOVES_EDITED):
    """The comment line that opens a file this collection creates: ``dirs``, the host paths of the
    directories writing it created. ``removes``: what state=absent does with the file."""
    return "%s; state=absent removes %s, then these directories when empty: %s" % (
        CREATED, removes, json.dumps(outermost_first(dirs)))


def record_in_text(text, legacy=None):
    """``(line, dirs)`` for the record a text file carries, else None (no record, or a damaged one).
    ``legacy``: the earlier form this kind of file may carry (:data:`LEGACY_CRIO`, :data:`LEGACY_CDI`)."""
    match = CREATED_RE.search(text or "")
    if match:
        try:
            dirs = _host_paths(json.loads(match.group(1)))
        except ValueError:
            dirs = None
        return (match.group(0), dirs) if dirs is not None else None
    if legacy is not None:
        pattern, parse = legacy
        match = pattern.search(text or "")
        if match:
            try:
                dirs = _host_paths(parse(match.group(1)))
            except ValueError:
                dirs = None
            return (match.group(0), dirs) if dirs is not None else None
    return None


def dirs_in_text(text, legacy=None):
    """The directories a text file's record lists (``[]`` when it has none)."""
    record = record_in_text(text, legacy)
    return record[1] if record else []


def dirs_in_document(document):
    """The ``created_dirs`` of a JSON document this collection wrote. Raises ValueError when the
    member is there but is not a list of host paths."""
    dirs = _host_paths(document.get(KEY, []) if isinstance(document, dict) else None)
    if dirs is None:
        raise ValueError("bad %r" % KEY)
    return dirs


def _digest(body):
    return hashlib.sha256(body.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def signed(head, body):
    """A whole file: ``head`` (comment lines, each ending in a newline), the line recording the
    digest of ``body``, then ``body``."""
    return "%s# %s: wrote sha256:%s (state=absent keeps a copy of this file if it is changed)\n%s" % (
        head, TAG, _digest(body), body)


def changed_since_written(text):
    """Whether a :func:`signed` file is no longer as written (False for a file without the line:
    written before there was one, and trusted)."""
    match = WRITTEN_RE.search(text or "")
    return match is not None and _digest(text[match.end():]) != match.group(1)


def without_record(text, legacy=None):
    """``text`` without its record line (in either form) and its written line."""
    text = WRITTEN_RE.sub("", text or "", count=1)
    for pattern in (CREATED_RE,) + ((legacy[0],) if legacy else ()):
        text = pattern.sub("", text, count=1)
    return text


def same_but_record(current, new, legacy):
    """Whether ``new`` differs from ``current`` only in the form of the record (an earlier release's
    line, the same directories; no written line yet): the two mean the same to the engine, and a
    file is not rewritten, nor its engine restarted across a fleet, for that alone."""
    if current is None or new is None or current == new:
        return current == new
    return (without_record(current, legacy) == without_record(new, legacy)
            and set(dirs_in_text(current, legacy)) == set(dirs_in_text(new, legacy)))


def removable(owner, dirs):
    """Those of ``dirs`` (a record read from the node file at host path ``owner``) that the file may
    remove, deepest first: its own directory and that directory's parents, never ``/``. Whatever else
    a forged record lists (``/etc``, ``/home/user/.ssh``, a path with ``..``) is dropped."""
    directory = posixpath.dirname(normalize_host_path(owner))
    kept = set()
    for entry in dirs:
        if not isinstance(entry, str) or "\0" in entry:
            continue
        entry = normalize_host_path(entry)
        if entry != "/" and is_under(directory, entry):
            kept.add(entry)
    return deepest_first(kept)


def dir_changes(dirs, removed, check_mode):
    """A result's ``changes`` entry for each of ``dirs`` a removal tried (``removed``: those it did).
    In check mode none is removed, and whether one would be empty cannot be told: each is reported
    as removed, when empty."""
    out = []
    for d in dirs:
        if d in removed:
            out.append(change(d, "removed", "created by this module"))
        elif check_mode:
            out.append(change(d, "removed", "created by this module; removed only when empty"))
        else:
            out.append(change(d, "kept", "created by this module; not empty"))
    return out


def backup_name(host_path, hidden_in=None):
    """Where a timestamped copy of ``host_path`` goes, named as Ansible's ``backup`` names them
    (``<name>.<pid>.<YYYY-MM-DD@HH:MM:SS>~``). ``hidden_in``: a directory to put it in instead, as a
    dot file (an engine that reads every file in the file's own directory would read the copy)."""
    stamp = "%d.%s~" % (os.getpid(), time.strftime("%Y-%m-%d@%H:%M:%S"))
    if hidden_in is None:
        return "%s.%s" % (host_path, stamp)
    return posixpath.join(hidden_in, ".%s.%s" % (posixpath.basename(host_path), stamp))


def backup_pattern(*host_paths, hidden=False):
    """A regular expression matching the names :func:`backup_name` gives copies of ``host_paths``."""
    names = "|".join(re.escape(posixpath.basename(p)) for p in host_paths)
    return r"^%s(%s)%s$" % (r"\." if hidden else "", names, BACKUP_STAMP)
