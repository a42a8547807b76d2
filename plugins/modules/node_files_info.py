#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: node_files_info
short_description: Read several files on a node in one call, symlinks resolved inside host_root
version_added: 0.2.0
description:
  - Reads each file of O(paths) and says which of O(exist) exist, in one module run. The
    collection's action plugins (M(gpu_node.container_toolkit.containerd_runtime),
    M(gpu_node.container_toolkit.toolkit_config)) use it, so that a run which changes nothing
    costs them one round trip to the node.
  - Symlinks are resolved inside O(host_root), as the node itself resolves them (an absolute
    link target is under O(host_root)).
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
attributes:
  check_mode:
    support: full
    details: The module only reads files.
  diff_mode:
    support: N/A
    details: The module changes nothing.
  safe_file_operations:
    support: N/A
    details: The module writes no files.
  idempotent:
    support: full
  platform:
    platforms: posix
options:
  paths:
    description: Host paths of the files to read.
    type: list
    elements: str
    default: []
  exist:
    description: Host paths to check for existence only.
    type: list
    elements: str
    default: []
  max_size:
    description: Files larger than this many bytes are not read (RV(files[].error) says so).
    type: int
    default: 16777216
"""

EXAMPLES = r"""
---
- name: Read containerd's config and a drop-in
  gpu_node.container_toolkit.node_files_info:
    paths: [/etc/containerd/config.toml, /etc/containerd/conf.d/99-nvidia.toml]
    exist: [/usr/bin/containerd, /home/kubernetes/bin/containerd]
  register: node_files
"""

RETURN = r"""
files:
  description: One entry per O(paths), in order.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The host path as asked for.
      type: str
    resolved:
      description: The host path it leads to, symlinks resolved inside O(host_root).
      type: str
    exists:
      description: Whether RV(files[].resolved) exists.
      type: bool
    isdir:
      description: Whether it is a directory (then it is not read).
      type: bool
    content:
      description: The file's bytes, base64-encoded; absent when it does not exist or could not be read.
      type: str
    error:
      description: Why it could not be read, when it exists but could not.
      type: str
existing:
  description: The host paths of O(exist) that exist, in order.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_fs, node_model, node_reads


def main():
    module = AnsibleModule(
        argument_spec=dict(
            node_model.node_argument_spec(),
            paths={"type": "list", "elements": "str", "default": []},
            exist={"type": "list", "elements": "str", "default": []},
            max_size={"type": "int", "default": node_reads.MAX_SIZE},
        ),
        supports_check_mode=True,
    )
    params = module.params
    node = node_fs.NodeRoot(params["host_root"])
    files = [node_reads.read_file(node, node_model.normalize_host_path(path), params["max_size"])
             for path in params["paths"]]
    existing = [path for path in params["exist"] if node_reads.exists(node, path)]
    module.exit_json(changed=False, files=files, existing=existing)


if __name__ == "__main__":
    main()
