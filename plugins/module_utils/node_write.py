# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write one text file that an action plugin edited on the controller (node side).

``node_file_write`` runs it on its own; ``toolkit_install`` runs it after the install, in the same
module run, for the toolkit's ``config.toml``. The write is a compare-and-swap on what the
controller read (``expect_sha256`` / ``expect_absent``), keeps the old file's mode and owner, can
keep a backup and validate the new file first, and goes through :meth:`NodeRoot.write` (atomic).
The caller holds the node's lock.
"""

from __future__ import annotations

import hashlib
import posixpath
import shlex

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change, file_action
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeFsError


def argument_spec():
    """The options of a write request, as node_file_write takes them (host_root aside); a fresh dict."""
    return {
        "path": {"type": "str", "required": True},
        "content": {"type": "str", "required": True},
        "mode": {"type": "str", "default": "0644"},
        "make_dirs": {"type": "bool", "default": True},
        "backup": {"type": "bool", "default": False},
        "validate": {"type": "str"},
        "expect_sha256": {"type": "str"},
        "expect_absent": {"type": "bool", "default": False},
    }


class WriteRefused(Exception):
    """Nothing was written; the message says why and what to do."""


def changed_meanwhile(host_path, current, expect_sha256, expect_absent):
    """Why the file is no longer what the caller read, or None when it still is."""
    if expect_absent and current is not None:
        return "%s appeared on the node" % host_path
    if expect_sha256 and (current is None or hashlib.sha256(current).hexdigest() != expect_sha256.lower()):
        return "%s %s on the node" % (host_path, "was removed" if current is None else "changed")
    return None


def new_result(host_path):
    return {"changed": False, "path": host_path, "dirs_created": [], "changes": []}


def write(node, request, result, check_mode, run_command):
    """Carry out ``request`` (:func:`argument_spec`, ``path`` a normalized host path) on ``node``,
    recording what was done in ``result`` (:func:`new_result`). ``run_command(argv)`` gives
    ``(rc, out, err)``, for ``validate``. Raises :class:`WriteRefused` or ``NodeFsError``."""
    host_path = result["path"]
    data = request["content"].encode("utf-8", "surrogateescape")
    try:
        mode = int(request["mode"], 8)
    except ValueError:
        raise WriteRefused("mode must be octal, such as 0644, got %r" % request["mode"]) from None
    validate = request.get("validate")
    if validate and "%s" not in validate:
        raise WriteRefused("validate must contain %%s (the new file's path), got %r" % validate)
    found = node.observe(host_path)
    if found is not None and found["type"] == "directory":
        raise WriteRefused("%s is a directory, not a file" % host_path)
    current = node.read_bytes(host_path)
    if current == data:
        return
    why = changed_meanwhile(host_path, current, request.get("expect_sha256"), request.get("expect_absent"))
    if why:
        raise WriteRefused("%s while this task ran (another run?); nothing was written. Run the task again"
                           % why)
    missing = node.missing_dirs(posixpath.dirname(host_path))
    if missing and not request["make_dirs"]:
        raise WriteRefused("the directory of %s does not exist (make_dirs is false)" % host_path)
    result.update(changed=True, dirs_created=missing)
    result["changes"] = [change(d, "created") for d in missing] + [change(host_path, file_action(current, data))]
    if check_mode:
        return
    if missing:
        node.make_dirs(missing[-1])

    def run_validate(tmp):
        argv = [part.replace("%s", tmp) for part in shlex.split(validate)]
        rc, out, err = run_command(argv)
        if rc != 0:
            raise WriteRefused("failed to validate (rc %d: %s); %s was left as it was"
                               % (rc, (err or out).strip(), host_path))

    owner = None
    if current is not None:
        owner = (found["uid"], found["gid"])
        if request["backup"]:
            result["backup_file"] = ownership.backup_name(host_path)
            try:
                node.write(result["backup_file"], current, mode=found["mode"], owner=owner)
            except NodeFsError as exc:
                raise WriteRefused("cannot keep a backup of %s, so it was not replaced: %s" % (host_path, exc)) from None
    node.write(host_path, data, mode=None if current is not None else mode, owner=owner,
               check=run_validate if validate else None)
