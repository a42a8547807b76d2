# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a text file from the node and write it back, for action plugins (controller side).

The one place where the collection's action plugins touch node files:

- ``read``: ``stat`` (a symlink is followed inside ``host_root``, hop by hop) and ``slurp``.
- ``write``: only when the bytes differ; through ``ansible.builtin.copy`` (the action, as
  ``ansible.builtin.template`` does), which writes a temporary file in the target's directory
  and renames it over the target, keeps the existing file's mode and owner, makes a
  timestamped backup with ``backup`` and runs ``validate`` (``%s`` is the new file) first.
- ``remove``: ``ansible.builtin.file`` with ``state: absent``.
- check mode writes nothing; ``diff`` gives the before/after text for ``--diff``.
"""

from __future__ import annotations

import base64
import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import (
    host_path_of,
    node_path,
    normalize_host_path,
)

MAX_LINK_HOPS = 16


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

    def link_note(self):
        if not self.links:
            return None
        return "%s is a symlink; edited its target %s" % (self.requested, self.host_path)


def diff_entry(before_path, before, after_path, after):
    """A ``--diff`` entry: text before and after, with headers naming the host paths."""
    return {
        "before": before or "",
        "after": after or "",
        "before_header": before_path if before is not None else "%s (absent)" % before_path,
        "after_header": after_path if after is not None else "%s (absent)" % after_path,
    }


class NodeFiles:
    """Node file I/O on behalf of ``action`` (a ``NodeActionBase``) for one task run."""

    def __init__(self, action, task_vars):
        self._action = action
        self._task_vars = task_vars

    def _module(self, name, args):
        return self._action.run_module(name, args, self._task_vars)

    def _stat(self, path, follow=False):
        result = self._module("ansible.builtin.stat", {
            "path": path, "follow": follow, "get_checksum": False, "get_mime": False, "get_attributes": False,
        })
        if result.get("failed"):
            raise NodeFileError("could not stat %s: %s" % (path, result.get("msg")))
        return result["stat"]

    def existing(self, host_root, host_paths):
        """The host paths, of ``host_paths``, that exist on the node: one ``ls -d`` for all of them."""
        if not host_paths:
            return []
        by_node = {node_path(host_root, p): p for p in host_paths}
        result = self._module("ansible.builtin.command", {"argv": ["ls", "-d", "--"] + list(by_node)})
        if result.get("rc") is None:
            raise NodeFileError("could not list %s: %s" % (", ".join(host_paths), result.get("msg")))
        found = set(result.get("stdout", "").splitlines())
        return [by_node[p] for p in by_node if p in found]

    def read_text(self, host_root, host_path):
        """The text of ``host_path``, or None when it cannot be read (one ``slurp``, no stat)."""
        result = self._module("ansible.builtin.slurp", {"src": node_path(host_root, host_path)})
        if result.get("failed"):
            return None
        try:
            return base64.b64decode(result["content"]).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None

    def read(self, host_root, host_path):
        """Find ``host_path`` under ``host_root`` (following symlinks there) and read it as text."""
        requested = normalize_host_path(host_path)
        current = requested
        links = []
        for _hop in range(MAX_LINK_HOPS):
            stat = self._stat(node_path(host_root, current))
            if not stat.get("exists") or not stat.get("islnk"):
                break
            target = stat.get("lnk_target") or ""
            links.append(current)
            current = normalize_host_path(target if target.startswith("/")
                                          else posixpath.join(posixpath.dirname(current), target))
        else:
            raise NodeFileError("%s: too many levels of symbolic links" % requested)
        if not stat.get("exists"):
            return NodeFile(host_root, current, requested, False, None, links)
        if stat.get("isdir"):
            raise NodeFileError("%s is a directory, not a file" % current)
        result = self._module("ansible.builtin.slurp", {"src": node_path(host_root, current)})
        if result.get("failed"):
            raise NodeFileError("could not read %s: %s" % (current, result.get("msg")))
        data = base64.b64decode(result["content"])
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise NodeFileError("%s is not UTF-8 text" % current) from None
        return NodeFile(host_root, current, requested, True, text, links)

    def write(self, node_file, text, check_mode, backup=False, validate=None, mode=None):
        """Replace ``node_file`` with ``text`` when it differs. Returns (changed, backup_file)."""
        if node_file.exists and node_file.text == text:
            return False, None
        if check_mode:
            return True, None
        if not node_file.exists:
            parent = posixpath.dirname(node_file.node_path)
            made = self._module("ansible.builtin.file", {"path": parent, "state": "directory"})
            if made.get("failed"):
                raise NodeFileError("could not create the directory of %s: %s" % (node_file.host_path, made.get("msg")))
        args = {"content": text, "dest": node_file.node_path, "follow": True, "backup": bool(backup)}
        if validate:
            args["validate"] = validate
        if mode is not None and not node_file.exists:
            args["mode"] = mode
        result = self._action.run_copy(args, self._task_vars)
        if result.get("failed"):
            detail = result.get("msg") or "failed"
            output = (result.get("stderr") or result.get("stdout") or "").strip()
            if output:
                detail = "%s (rc %s: %s)" % (detail, result.get("exit_status", result.get("rc")), output)
            raise NodeFileError("could not write %s (at %s on the node); the file was left as it was: %s"
                                % (node_file.host_path, node_file.node_path, detail))
        backup_file = result.get("backup_file")
        if backup_file:
            try:
                backup_file = host_path_of(node_file.host_root, backup_file)
            except ValueError:
                pass
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

    def run(self, argv):
        """Run a command on the node; returns (rc, stdout) or (None, '') when it cannot run."""
        result = self._module("ansible.builtin.command", {"argv": argv})
        if result.get("failed") and result.get("rc") is None:
            return None, ""
        return result.get("rc"), result.get("stdout", "")
