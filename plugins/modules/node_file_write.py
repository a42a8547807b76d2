#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

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

from ansible.module_utils.basic import AnsibleModule

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_model, node_write
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeFsError, NodeRoot


def main():
    module = AnsibleModule(
        argument_spec=dict(node_model.node_argument_spec(), **node_write.argument_spec()),
        mutually_exclusive=[("expect_sha256", "expect_absent")],
        supports_check_mode=True,
    )
    node = NodeRoot(module.params["host_root"])
    result = node_write.new_result(node_model.normalize_host_path(module.params["path"]))
    try:
        with node.locked():
            node_write.write(node, module.params, result, module.check_mode, module.run_command)
    except (node_write.WriteRefused, NodeFsError) as exc:
        module.fail_json(msg=str(exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
