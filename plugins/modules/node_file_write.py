#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_file_write
short_description: Write one text file on a node atomically, in one call
version_added: 0.2.0
description:
  - Replaces the file at O(path) with O(content) when its bytes differ, through a temporary file
    in the same directory that is renamed over it; an existing file keeps its mode and owner.
  - The collection's action plugins (M(gpu_node.container_toolkit.containerd_runtime),
    M(gpu_node.container_toolkit.toolkit_config)) write with it after editing on the controller,
    so a change costs one round trip to the node instead of the three or four of
    M(ansible.builtin.copy).
  - O(path) is written as given under O(host_root); the callers resolve symlinks inside
    O(host_root) first (M(gpu_node.container_toolkit.node_files_info)).
  - The compare, the backup and the write happen while holding the node's lock (an C(flock) on
    O(host_root)), so two runs on one node take turns. With O(expect_sha256) or O(expect_absent) the
    write is a compare-and-swap; the callers pass what they read, so a file that another run
    changed between their read and this write is not overwritten.
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
  - gpu_node.container_toolkit.attributes.NODE_GROUP
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
    details: The callers report the diff; they have both texts.
  safe_file_operations:
    support: full
  idempotent:
    support: full
  platform:
    platforms: posix
options:
  path:
    description: Host path of the file.
    type: str
    required: true
  content:
    description: The file's new text (UTF-8).
    type: str
    required: true
  mode:
    description: Permissions of a new file, in octal; an existing file keeps its own.
    type: str
    default: "0644"
  make_dirs:
    description: Create missing parent directories (mode C(0755)).
    type: bool
    default: true
  backup:
    description: Keep a timestamped copy of the old file (C(<path>.<pid>.<date>@<time>~)) before replacing it.
    type: bool
    default: false
  validate:
    description: Command run on the new file before it replaces the old one; C(%s) is the temporary file's path.
    type: str
  expect_sha256:
    description:
      - SHA-256 of the file as the caller read it. When the file now holds something else, nothing
        is written and the task fails saying the file changed on the node while the task ran;
        a file that already holds O(content) is success with no change.
    type: str
  expect_absent:
    description: The caller found no file; as O(expect_sha256), for a file that appeared meanwhile.
    type: bool
    default: false
"""

EXAMPLES = r"""
---
- name: Write a file on a simulated node
  gpu_node.container_toolkit.node_file_write:
    host_root: /tmp/node
    path: /etc/containerd/config.toml
    content: "version = 2\n"
    backup: true
"""

RETURN = r"""
backup_file:
  description: Host path of the copy of the old file, when O(backup) made one.
  returned: changed and O(backup)
  type: str
  sample: /etc/containerd/config.toml.1234.2026-12-03@17:00:00~
changes:
  description: What was (or would be) done, a C(path) and an C(action) each (V(created), V(updated)).
  returned: always
  type: list
  elements: dict
  sample: [{path: /etc/containerd, action: created}, {path: /etc/containerd/config.toml, action: created}]
dirs_created:
  description: Host paths of the parent directories this write created, outermost first.
  returned: always
  type: list
  elements: str
  sample: [/etc/containerd]
"""

import hashlib
import os
import posixpath
import shlex
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_model
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeFsError, NodeRoot


class WriteRefused(Exception):
    """Nothing was written; the message says why and what to do."""


def changed_meanwhile(host_path, current, expect_sha256, expect_absent):
    """Why the file is no longer what the caller read, or None when it still is."""
    if expect_absent and current is not None:
        return "%s appeared on the node" % host_path
    if expect_sha256 and (current is None or hashlib.sha256(current).hexdigest() != expect_sha256.lower()):
        return "%s %s on the node" % (host_path, "was removed" if current is None else "changed")
    return None


def backup_name(host_path):
    """Ansible's backup naming (``<path>.<pid>.<date>@<time>~``), which the roles' cleanup matches."""
    return "%s.%d.%s~" % (host_path, os.getpid(), time.strftime("%Y-%m-%d@%H:%M:%S"))


def write(module, node, params, result):
    host_path = result["path"]
    data = to_bytes(params["content"], errors="surrogate_or_strict")
    try:
        mode = int(params["mode"], 8)
    except ValueError:
        raise WriteRefused("mode must be octal, such as 0644, got %r" % params["mode"]) from None
    validate = params["validate"]
    if validate and "%s" not in validate:
        raise WriteRefused("validate must contain %%s (the new file's path), got %r" % validate)
    found = node.observe(host_path)
    if found is not None and found["type"] == "directory":
        raise WriteRefused("%s is a directory, not a file" % host_path)
    current = node.read_bytes(host_path)
    if current == data:
        return
    why = changed_meanwhile(host_path, current, params["expect_sha256"], params["expect_absent"])
    if why:
        raise WriteRefused("%s while this task ran (another run?); nothing was written. Run the task again"
                           % why)
    missing = node.missing_dirs(posixpath.dirname(host_path))
    if missing and not params["make_dirs"]:
        raise WriteRefused("the directory of %s does not exist (make_dirs is false)" % host_path)
    result.update(changed=True, dirs_created=missing)
    result["changes"] = [{"path": d, "action": "created"} for d in missing] + [
        {"path": host_path, "action": "updated" if current is not None else "created"}]
    if module.check_mode:
        return
    if missing:
        node.make_dirs(missing[-1])

    def run_validate(tmp):
        argv = [part.replace("%s", tmp) for part in shlex.split(validate)]
        rc, out, err = module.run_command(argv)
        if rc != 0:
            raise WriteRefused("failed to validate (rc %d: %s); %s was left as it was"
                               % (rc, (err or out).strip(), host_path))

    owner = None
    if current is not None:
        owner = (found["uid"], found["gid"])
        if params["backup"]:
            result["backup_file"] = backup_name(host_path)
            try:
                node.write(result["backup_file"], current, mode=found["mode"], owner=owner)
            except NodeFsError as exc:
                raise WriteRefused("cannot keep a backup of %s, so it was not replaced: %s" % (host_path, exc)) from None
    node.write(host_path, data, mode=None if current is not None else mode, owner=owner,
               check=run_validate if validate else None)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            node_model.node_argument_spec(),
            path={"type": "str", "required": True},
            content={"type": "str", "required": True},
            mode={"type": "str", "default": "0644"},
            make_dirs={"type": "bool", "default": True},
            backup={"type": "bool", "default": False},
            validate={"type": "str"},
            expect_sha256={"type": "str"},
            expect_absent={"type": "bool", "default": False},
        ),
        mutually_exclusive=[("expect_sha256", "expect_absent")],
        supports_check_mode=True,
    )
    node = NodeRoot(module.params["host_root"])
    result = {"changed": False, "path": node_model.normalize_host_path(module.params["path"]),
              "dirs_created": [], "changes": []}
    try:
        with node.locked():
            write(module, node, module.params, result)
    except WriteRefused as exc:
        module.fail_json(msg=str(exc), **result)
    except NodeFsError as exc:
        module.fail_json(msg=str(exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
