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
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
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
dirs_created:
  description: Host paths of the parent directories this write created, outermost first.
  returned: always
  type: list
  elements: str
  sample: [/etc/containerd]
"""

import os
import shlex
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_model


def missing_parents(directory):
    missing = []
    while directory and not os.path.isdir(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return list(reversed(missing))


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
        ),
        supports_check_mode=True,
    )
    params = module.params
    host_root = params["host_root"]
    host_path = node_model.normalize_host_path(params["path"])
    dest = node_model.node_path(host_root, host_path)
    data = to_bytes(params["content"], errors="surrogate_or_strict")
    result = {"changed": False, "path": host_path, "dirs_created": []}
    if os.path.isdir(dest):
        module.fail_json(msg="%s is a directory, not a file" % host_path, **result)
    try:
        with open(dest, "rb") as handle:
            if handle.read() == data:
                module.exit_json(**result)
        exists = True
    except FileNotFoundError:
        exists = False
    except OSError as exc:
        module.fail_json(msg="cannot read %s: %s" % (host_path, to_native(exc)), **result)
    try:
        mode = int(params["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode must be octal, such as 0644, got %r" % params["mode"], **result)
    directory = os.path.dirname(dest)
    missing = missing_parents(directory)
    if missing and not params["make_dirs"]:
        module.fail_json(msg="the directory of %s does not exist (make_dirs is false)" % host_path, **result)
    result.update(changed=True, dirs_created=[node_model.host_path_of(host_root, d) for d in missing])
    if module.check_mode:
        module.exit_json(**result)
    tmp = None
    try:
        for made in missing:
            os.mkdir(made, 0o755)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(dest) + ".")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # a crash leaves the old file or the whole new one
        if not exists:
            os.chmod(tmp, mode)
        if params["validate"]:
            if "%s" not in params["validate"]:
                module.fail_json(msg="validate must contain %%s (the new file's path), got %r" % params["validate"],
                                 **result)
            argv = [part.replace("%s", tmp) for part in shlex.split(params["validate"])]
            rc, out, err = module.run_command(argv)
            if rc != 0:
                module.fail_json(msg="failed to validate (rc %d: %s); %s was left as it was"
                                 % (rc, (err or out).strip(), host_path), **result)
        if exists and params["backup"]:
            result["backup_file"] = node_model.host_path_of(host_root, module.backup_local(dest))
        module.atomic_move(tmp, dest)
        if not exists:
            os.chmod(dest, mode)  # atomic_move gives a new file the umask's mode
    except OSError as exc:
        module.fail_json(msg="cannot write %s (at %s): %s; the file was left as it was"
                         % (host_path, dest, to_native(exc)), **result)
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
