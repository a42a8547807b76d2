# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a text file from the node and write it back, for action plugins (controller side).

The one place where the collection's action plugins touch node files:

- ``read``/``read_many``/``existing``: one ``node_files_info`` run for every file a task needs
  (symlinks resolved inside ``host_root``), so a task that changes nothing costs one round trip;
  none when ``read_ahead`` (``node_info``'s result of that name) holds all of it.
- ``write``: only when the bytes differ; one ``node_file_write`` run (or, deferred, part of
  another module's run), which writes a temporary file in the target's directory and renames it
  over the target, keeps the existing file's mode and owner, makes a timestamped backup with
  ``backup`` and runs ``validate`` (``%s`` is the new file) first. It is a compare-and-swap on
  what ``read`` found, under the node's lock, so an edit another run made between this task's
  read and its write is never overwritten.
- ``remove``: ``ansible.builtin.file`` with ``state: absent``; ``remove_created_dirs``: ``rmdir``,
  which leaves a directory with anything in it alone.
- check mode writes nothing; ``--diff`` entries come from ``module_utils.node_fs.text_diff``.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import (
    host_path_of,
    node_path,
    normalize_host_path,
)

INFO_MODULE = "gpu_node.container_toolkit.node_files_info"
WRITE_MODULE = "gpu_node.container_toolkit.node_file_write"


class NodeFileError(Exception):
    """A node file could not be read or written; the message names the path."""


class NodeFile:
    """What :meth:`NodeFiles.read` found: the file to edit and its current text."""

    def __init__(self, host_root, host_path, requested, exists, text, links):
        self.host_root = host_root
        self.host_path = host_path          # the file that is edited (a symlink's target)
        self.requested = requested          # the path as asked for
        self.node_path = node_path(host_root, host_path)
        self.exists = exists
        self.text = text
        self.links = links                  # the symlinks followed, as host paths
        # What was read, for the write's compare-and-swap (text is strict UTF-8, so it gives the bytes back).
        self.sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest() if exists else None

    def link_note(self):
        if not self.links:
            return None
        return "%s is a symlink; edited its target %s" % (self.requested, self.host_path)


def _lenient_text(entry):
    try:
        return base64.b64decode(entry["content"]).decode("utf-8") if "content" in entry else None
    except (ValueError, UnicodeDecodeError):
        return None


def parent_dirs(host_path):
    """The directories above ``host_path``, innermost first, without ``/``."""
    found = []
    current = posixpath.dirname(normalize_host_path(host_path))
    while current not in ("/", ""):
        found.append(current)
        current = posixpath.dirname(current)
    return found


def missing_dirs(host_path, existing):
    """The directories that writing ``host_path`` creates, outermost first, given ``existing`` (the
    host paths of :func:`parent_dirs` that exist, as ``read_many(exist=...)`` tells)."""
    missing = []
    for directory in parent_dirs(host_path):
        if directory in existing:
            break
        missing.append(directory)
    return list(reversed(missing))


def _root(host_root):
    return posixpath.normpath(host_root) if host_root else None


class ReadAhead:
    """What ``node_info`` read for the tasks after it (its ``read_ahead`` result)."""

    def __init__(self, found):
        found = found or {}
        self.host_root = _root(found.get("host_root"))
        self.files = {entry["path"]: entry for entry in found.get("files") or () if "path" in entry}
        self.trees = found.get("trees") or {}
        self.checked = set(found.get("checked") or ())
        self.existing = set(found.get("existing") or ())
        self.installs = found.get("installs") or {}
        self.driver_found = found.get("driver")

    def answer(self, host_root, paths, exist):
        """``node_files_info``'s result for ``paths`` and ``exist``, or None unless all of it is here."""
        if _root(host_root) != self.host_root:
            return None
        if any(p not in self.files for p in paths) or any(p not in self.checked for p in exist):
            return None
        return {"files": [self.files[p] for p in paths], "existing": [p for p in exist if p in self.existing]}

    def data(self, host_root, host_path):
        """``(known, bytes or None)`` for a file read ahead (links resolved; None: it does not exist);
        known is False when it was not read ahead or could not be read."""
        found = self.answer(host_root, [host_path], ())
        entry = found["files"][0] if found else None
        if entry is None or entry.get("error") or entry.get("isdir"):
            return False, None
        if not entry["exists"]:
            return True, None
        return True, base64.b64decode(entry["content"])

    def install(self, host_root, host_dir):
        """What was observed of the install directory ``host_dir`` (``node_reads.observe_install``),
        or None when it was not, or could not be."""
        entry = self.installs.get(host_dir) if _root(host_root) == self.host_root else None
        return None if entry is None or entry.get("error") else entry

    def driver(self, host_root):
        """The look's driver facts (``{"params", "facts", "warnings"}``), or None."""
        return self.driver_found if _root(host_root) == self.host_root else None

    def tree_entry(self, host_root, host_dir):
        """The ``trees`` entry read ahead for ``host_dir`` as the look returned it (``resolved``,
        ``exists``, ``files`` with base64 contents and modes, ``links``), or None when it was not
        read ahead or could not be."""
        entry = self.trees.get(host_dir) if _root(host_root) == self.host_root else None
        return None if entry is None or entry.get("error") else entry

    def tree(self, host_root, host_dir):
        """``{relative name: (bytes, mode)}`` of the regular files under a directory read ahead
        (``{}`` when it is missing), or None when it was not read ahead, is not a directory, or holds
        a file too large for the look to send whole (:meth:`tree_digests` compares those)."""
        entry = self.tree_entry(host_root, host_dir)
        if entry is None or any("content" not in f for f in entry["files"].values()):
            return None
        return {name: (base64.b64decode(f["content"]), f["mode"]) for name, f in entry["files"].items()}

    def tree_digests(self, host_root, host_dir):
        """``{relative name: (SHA-256 hex digest, mode)}`` of the same files, large ones included, or
        None where :meth:`tree_entry` is None."""
        entry = self.tree_entry(host_root, host_dir)
        if entry is None:
            return None
        return {name: (f["sha256"] if "sha256" in f else hashlib.sha256(base64.b64decode(f["content"])).hexdigest(), f["mode"])
                for name, f in entry["files"].items()}


class NodeFiles:
    """Node file I/O on behalf of ``action`` (a ``NodeActionBase``) for one task run; ``read_ahead``
    is ``node_info``'s result of that name, or None. With ``defer_writes``, :meth:`write`
    runs nothing: it adds ``node_file_write``'s arguments to :attr:`deferred`, for the action to
    send with a module run it makes anyway (``toolkit_install``'s ``_wire``, ``config_write``)."""

    def __init__(self, action, task_vars, read_ahead=None, defer_writes=False):
        self._action = action
        self._task_vars = task_vars
        self.ahead = ReadAhead(read_ahead) if read_ahead else None
        self._defer_writes = defer_writes
        self.deferred = []

    def _module(self, name, args):
        return self._action.run_module(name, args, self._task_vars)

    def _info(self, host_root, paths, exist=()):
        if self.ahead is not None:
            known = self.ahead.answer(host_root, list(paths), list(exist))
            if known is not None:
                return known
        result = self._module(INFO_MODULE, {"host_root": host_root, "paths": list(paths), "exist": list(exist)})
        if result.get("failed"):
            wanted = ", ".join(list(paths) + list(exist))
            raise NodeFileError("could not read %s on the node: %s" % (wanted, result.get("msg")))
        return result

    def existing(self, host_root, host_paths):
        """The host paths, of ``host_paths``, that exist on the node."""
        if not host_paths:
            return []
        return self._info(host_root, [], host_paths)["existing"]

    def read_text(self, host_root, host_path):
        """The text of ``host_path``, or None when it cannot be read."""
        return self.read_many(host_root, [], texts=[host_path])[2][0]

    def read(self, host_root, host_path):
        """Find ``host_path`` under ``host_root`` (following symlinks there) and read it as text."""
        return self.read_many(host_root, [host_path])[0][0]

    def read_many(self, host_root, host_paths, exist=(), texts=()):
        """One round trip for everything a task reads: ([NodeFile], [existing path], [text or None]).

        ``host_paths`` are files to edit (errors raise :class:`NodeFileError`); ``exist`` are only
        checked; ``texts`` are read leniently (None when missing or unreadable).
        """
        wanted = [normalize_host_path(p) for p in list(host_paths) + list(texts)]
        result = self._info(host_root, wanted, exist)
        entries = result["files"]
        edited = [self._node_file(host_root, entry) for entry in entries[:len(host_paths)]]
        return edited, result["existing"], [_lenient_text(entry) for entry in entries[len(host_paths):]]

    @staticmethod
    def _node_file(host_root, entry):
        requested, current = entry["path"], entry["resolved"]
        links = [requested] if current != requested else []
        if entry.get("error"):
            raise NodeFileError("could not read %s: %s" % (current, entry["error"]))
        if not entry["exists"]:
            return NodeFile(host_root, current, requested, False, None, links)
        if entry["isdir"]:
            raise NodeFileError("%s is a directory, not a file" % current)
        try:
            text = base64.b64decode(entry["content"]).decode("utf-8")
        except UnicodeDecodeError:
            raise NodeFileError("%s is not UTF-8 text" % current) from None
        return NodeFile(host_root, current, requested, True, text, links)

    def write(self, node_file, text, check_mode, backup=False, validate=None, mode=None):
        """Replace ``node_file`` with ``text`` when it differs. Returns (changed, backup_file)."""
        if node_file.exists and node_file.text == text:
            return False, None
        if check_mode:
            return True, None
        args = {"host_root": node_file.host_root, "path": node_file.host_path, "content": text,
                "backup": bool(backup), "make_dirs": True}
        if node_file.exists:
            args["expect_sha256"] = node_file.sha256
        else:
            args["expect_absent"] = True
        if validate:
            args["validate"] = validate
        if mode is not None:
            args["mode"] = mode
        if self._defer_writes:
            self.deferred.append(args)
            return True, None
        # One round trip: node_file_write makes the missing directories, validates, keeps the backup
        # and renames the new file over the old one (which keeps its mode and owner).
        result = self._module(WRITE_MODULE, args)
        if result.get("failed"):
            detail = result.get("msg") or "failed"
            raise NodeFileError("could not write %s (at %s on the node); the file was left as it was: %s"
                                % (node_file.host_path, node_file.node_path, detail))
        backup_file = result.get("backup_file")
        return True, backup_file

    def remove(self, node_file, check_mode):
        """Remove ``node_file`` when it exists. Returns whether it did (or would)."""
        if not node_file.exists:
            return False
        if check_mode:
            return True
        result = self._module("ansible.builtin.file", {"path": node_file.node_path, "state": "absent"})
        if result.get("failed"):
            raise NodeFileError("could not remove %s: %s" % (node_file.host_path, result.get("msg")))
        return True

    def remove_created_dirs(self, host_root, records, check_mode):
        """``rmdir`` the directories this collection's records say it created, each only when it is
        empty. ``records``: ``(owner, dirs)`` pairs, ``owner`` the host path of the file whose record
        listed ``dirs``; only what :func:`ownership.removable` allows that file is touched, whatever a
        forged record lists. Returns ``(removed, changes)``: the host paths removed (none in check
        mode, where whether a directory would be empty cannot be told) and a change for each."""
        host_dirs = ownership.deepest_first(d for owner, dirs in records for d in ownership.removable(owner, dirs))
        removed = []
        if host_dirs and not check_mode:
            by_node = {node_path(host_root, d): d for d in host_dirs}
            script = 'for d in "$@"; do rmdir -- "$d" 2>/dev/null && printf "%s\\n" "$d"; done; exit 0'
            rc, stdout = self.run(["sh", "-c", script, "sh"] + [node_path(host_root, d) for d in host_dirs])
            if rc is None:
                raise NodeFileError("could not remove the directories %s" % ", ".join(host_dirs))
            removed = [by_node[p] for p in stdout.splitlines() if p in by_node]
        return removed, ownership.dir_changes(host_dirs, removed, check_mode)

    def files_under(self, host_root, host_dir):
        """Host paths of what is under ``host_dir`` at any depth that is not a directory (files and
        links; one ``find``); ``[]`` when it is missing."""
        result = self._module("ansible.builtin.find", {
            "paths": [node_path(host_root, host_dir)], "file_type": "any", "hidden": True, "recurse": True,
            "get_checksum": False,
        })
        if result.get("failed"):
            return []
        found = []
        for entry in result.get("files", []):
            if entry.get("isdir"):
                continue
            try:
                found.append(host_path_of(host_root, entry["path"]))
            except ValueError:
                continue
        return sorted(found)

    def backups_of(self, host_root, host_dir, pattern):
        """Host paths of the files in ``host_dir`` whose names match the regular expression
        ``pattern`` (one ``find``)."""
        directory = node_path(host_root, host_dir)
        result = self._module("ansible.builtin.find", {
            "paths": [directory], "patterns": [pattern], "use_regex": True, "file_type": "file",
            "hidden": True, "recurse": False, "get_checksum": False,
        })
        if result.get("failed"):
            return []
        found = []
        for entry in result.get("files", []):
            try:
                found.append(host_path_of(host_root, entry["path"]))
            except ValueError:
                continue
        return sorted(found)

    def run(self, argv):
        """Run a command on the node; returns (rc, stdout) or (None, '') when it cannot run."""
        result = self._module("ansible.builtin.command", {"argv": argv})
        if result.get("failed") and result.get("rc") is None:
            return None, ""
        return result.get("rc"), result.get("stdout", "")
