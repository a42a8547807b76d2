#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: node_record
short_description: Record that a full run left a GPU node as it is now
version_added: 0.3.0
description:
  - The last step of a full run of the gpu_node role. It looks at the node again, exactly as
    M(gpu_node.container_toolkit.node_info) looks with the same options, and writes, in the kept
    directory O(dir), the digest of the run's inputs (O(inputs)) next to the digest of that look.
  - A later run whose look (RV(gpu_node.container_toolkit.node_info#module:look_digest)) and inputs
    match a record skips its steps, since every step decides from those and would change nothing.
  - The record is written atomically, and only when it differs; it is a file of this collection's
    kept directory, removed with it (M(gpu_node.container_toolkit.persist_files) with C(state=absent)).
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
  - gpu_node.container_toolkit.node.DRIVER
  - gpu_node.container_toolkit.attributes.NODE_GROUP
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
    details: The record is two digests; RV(changes) says whether it was written.
  safe_file_operations:
    support: full
  idempotent:
    support: full
  platform:
    platforms: posix
options:
  dir:
    description: Host path of the kept directory (the gpu_node role's C(<install dir>/.gpu-node)).
    type: str
    required: true
  inputs:
    description:
      - The digest of the run's inputs, as the gpu_node role computes it
        (M(gpu_node.container_toolkit.gpu_node_look)).
    type: str
    required: true
  read_ahead:
    description:
      - What the run's look read ahead (O(gpu_node.container_toolkit.node_info#module:read_ahead)),
        the same value, so that this look is the one the next run's look is compared with.
    type: dict
    required: true
    suboptions:
      files:
        description: As O(gpu_node.container_toolkit.node_info#module:read_ahead.files).
        type: list
        elements: str
        default: []
      trees:
        description: As O(gpu_node.container_toolkit.node_info#module:read_ahead.trees).
        type: list
        elements: str
        default: []
      exist:
        description: As O(gpu_node.container_toolkit.node_info#module:read_ahead.exist).
        type: list
        elements: str
        default: []
      installs:
        description: As O(gpu_node.container_toolkit.node_info#module:read_ahead.installs).
        type: list
        elements: str
        default: []
seealso:
  - module: gpu_node.container_toolkit.node_info
    description: The look whose digest is recorded.
"""

EXAMPLES = r"""
---
- name: Record the node as this run left it
  gpu_node.container_toolkit.node_record:
    host_root: /tmp/node
    driver_root: /home/kubernetes/bin/nvidia
    dir: /home/kubernetes/bin/nvidia/toolkit/.gpu-node
    inputs: "{{ 'settings of this run' | hash('sha256') }}"
    read_ahead:
      files: [/etc/containerd/config.toml]
"""

RETURN = r"""
path:
  description: Host path of the record.
  returned: always
  type: str
  sample: /home/kubernetes/bin/nvidia/toolkit/.gpu-node/provisioned.json
look_digest:
  description: The digest of the look taken now.
  returned: always
  type: str
  sample: 0f3c2e6d9b1a7c4e5f8a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70
dirs_created:
  description: Host paths of the directories made for the record (the kept directory), outermost first.
  returned: always
  type: list
  elements: str
  sample: []
changes:
  description: What was (or would be) done, a C(path) and an C(action) each (V(created), V(updated)).
  returned: always
  type: list
  elements: dict
  sample: [{path: /home/kubernetes/bin/nvidia/toolkit/.gpu-node/provisioned.json, action: created}]
"""

import posixpath

from ansible.module_utils.basic import AnsibleModule

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_look, node_model, node_record, node_write
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeFsError, NodeRoot


def main():
    module = AnsibleModule(
        argument_spec=dict(node_model.node_argument_spec(driver=True), read_ahead=dict(node_look.READ_AHEAD_SPEC, required=True),
                           dir={"type": "str", "required": True}, inputs={"type": "str", "required": True}),
        supports_check_mode=True,
    )
    kept = node_model.normalize_host_path(module.params["dir"])
    path = posixpath.join(kept, node_record.RECORD_NAME)
    node = NodeRoot(module.params["host_root"])
    result = node_write.new_result(path)
    try:
        with node.locked():
            # The directory first: the look sees it as the next run's look will.
            missing = node.missing_dirs(kept)
            if missing and not module.check_mode:
                node.make_dirs(missing[-1])
            try:
                look, _warnings = node_look.look(module.params, module.params["read_ahead"])
            except node_look.LookError as exc:
                module.fail_json(msg="cannot record the node as this run left it: %s" % exc, **result)
            result["look_digest"] = look["look_digest"]
            request = dict(path=path, content=node_record.record_text(module.params["inputs"], look["look_digest"]),
                           mode="0644", make_dirs=True, backup=False, validate=None, expect_sha256=None,
                           expect_absent=False)
            node_write.write(node, request, result, module.check_mode, module.run_command)
    except (node_write.WriteRefused, NodeFsError) as exc:
        module.fail_json(msg="cannot write the record %s: %s" % (path, exc), **result)
    if missing:
        result["dirs_created"] = missing
        result["changes"] = [change(d, "created") for d in missing] + [c for c in result["changes"] if c["path"] not in missing]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
