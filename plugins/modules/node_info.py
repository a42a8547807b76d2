#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: node_info
short_description: Look at a GPU node once, for the steps of a run that follow
version_added: 0.3.0
description:
  - The look that starts a run of the gpu_node role. It returns the facts
    M(gpu_node.container_toolkit.nvidia_driver_info) returns (the driver, the GPUs, the device
    nodes, the node's os-release ID, k3s or RKE2, its container engines), and in the same call the
    files the later tasks will read (O(read_ahead)), so that a task that changes nothing needs no
    round trip to the node.
  - Reads files only, with Python's standard library. Every path returned is a host path, and
    symlinks are resolved inside O(host_root), as M(gpu_node.container_toolkit.nvidia_driver_info)
    resolves them.
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
  - gpu_node.container_toolkit.node.DRIVER
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
  read_ahead:
    description:
      - Files the tasks after this one will read, taken in the same call, so that they need no
        round trip to the node of their own when they change nothing. The result is RV(read_ahead);
        the collection's action plugins take it as their O(gpu_node.container_toolkit.toolkit_config#module:read_ahead)
        option.
      - Without it the module returns what M(gpu_node.container_toolkit.nvidia_driver_info) returns.
      - Only what is named here is read; with the driver found, the C(ldconfig) candidates
        M(gpu_node.container_toolkit.toolkit_config) chooses from for the driver root, and the
        C(containerd) binaries M(gpu_node.container_toolkit.containerd_runtime) asks for its version,
        are checked for existence too.
    type: dict
    suboptions:
      files:
        description: Host paths of files to read; the directories above each are checked for existence.
        type: list
        elements: str
        default: []
      trees:
        description: Host paths of directories whose regular files are all read (links not followed).
        type: list
        elements: str
        default: []
      exist:
        description: Host paths checked for existence only.
        type: list
        elements: str
        default: []
      installs:
        description:
          - Host paths of toolkit install directories, observed as
            M(gpu_node.container_toolkit.toolkit_install) does before it decides (each entry with
            its SHA-256), with C(/proc/self/mountinfo) read as one of the O(read_ahead.files).
        type: list
        elements: str
        default: []
seealso:
  - module: gpu_node.container_toolkit.nvidia_driver_info
    description: What the facts in the result are (every value it returns, this module returns too).
  - module: gpu_node.container_toolkit.node_files_info
"""

EXAMPLES = r"""
---
- name: Look at the node, reading ahead what containerd_runtime will read
  gpu_node.container_toolkit.node_info:
    read_ahead:
      files: [/etc/containerd/config.toml]
  register: look

- name: Register the runtimes, with no round trip when nothing changes
  gpu_node.container_toolkit.containerd_runtime:
    read_ahead: "{{ look.read_ahead }}"
"""

RETURN = r"""
driver_version:
  description:
    - The driver version, as M(gpu_node.container_toolkit.nvidia_driver_info) returns it, and with
      it every other value that module returns.
  returned: when the driver is found
  type: str
  sample: 535.104.12
look_digest:
  description:
    - The digest of this look (every value returned but this one, with the mount table reduced to
      the mounts holding an install dir, and the records left out), as
      M(gpu_node.container_toolkit.node_record) writes it; the gpu_node role compares it with the
      record of the last full run.
  returned: when O(read_ahead) is set and the driver is found
  type: str
  sample: 0f3c2e6d9b1a7c4e5f8a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70
read_ahead:
  description:
    - What O(read_ahead) asked for, read in this call. Pass it on unchanged to the action plugins'
      O(gpu_node.container_toolkit.toolkit_config#module:read_ahead) option, and only for files no
      task has written since.
  returned: when O(read_ahead) is set
  type: dict
  contains:
    files:
      description:
        - One entry per O(read_ahead.files), as M(gpu_node.container_toolkit.node_files_info) returns
          RV(gpu_node.container_toolkit.node_files_info#module:files).
      type: list
      elements: dict
    trees:
      description:
        - Per O(read_ahead.trees) host path, C(resolved), C(exists), C(files), each file's relative
          name to its base64 C(content) and C(mode) (a file over 64 KiB to its C(sha256), C(size)
          and C(mode) instead), and C(links), the names of the symlinks in it.
      type: dict
    installs:
      description:
        - Per O(read_ahead.installs) host path, C(resolved), C(dir) (what is there), C(entries)
          (each name in it to its type, mode, owner, link target or SHA-256), C(missing_dirs) and
          C(euid); or C(error).
      type: dict
    driver:
      description:
        - The driver facts of this call (C(facts), as returned at the top level but for
          C(device_node_changes)), the C(warnings) they raised, and the C(params) they were found
          with (O(driver_root), O(dev_root), O(library_search_paths)), for
          M(gpu_node.container_toolkit.cdi_spec) to build its spec from.
      type: dict
    host_root:
      description: The O(host_root) the paths are under.
      type: str
    checked:
      description: Every host path whose existence was checked.
      type: list
      elements: str
    existing:
      description: Those of RV(read_ahead.checked) that exist.
      type: list
      elements: str
"""

from ansible.module_utils.basic import AnsibleModule

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_look, node_model


def main():
    module = AnsibleModule(
        argument_spec=dict(node_model.node_argument_spec(driver=True), read_ahead=node_look.READ_AHEAD_SPEC),
        supports_check_mode=True,
    )
    node_look.exit_with_look(module, module.params["read_ahead"])


if __name__ == "__main__":
    main()
