#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done by the action plugin of the same name (plugins/action/gpu_node_look.py).

DOCUMENTATION = r"""
module: gpu_node_look
short_description: Start a run of the gpu_node role in one task - check its variables, look at the node, take its choices
version_added: 0.3.0
description:
  - The first task of the C(gpu_node) role, and the only one of a run that finds the node as the last full run
    left it. In order, it
  - checks that every variable set under O(prefix) is one of the role's (the options of O(options_file)'s C(main)
    entry point, O(known) or O(allowed)) and that O(host_root) is absolute, and fails naming each one otherwise,
    before it reads anything on the node;
  - looks at the node with M(gpu_node.container_toolkit.node_info) (one module run), with O(read_ahead);
  - takes the platform, the container engines, the CDI refresh and the problems that stop the run from that look
    and O(settings), as the P(gpu_node.container_toolkit.gpu_node_choices#filter) filter does, and returns them as
    RV(choices); it fails, naming the setting to change, when there is a problem;
  - with O(skip_unchanged), digests the run's inputs (every option's value, those of O(other_inputs), the host's
    name and distribution, the contents of O(sources) on the controller, the collection's own files), so that
    RV(choices.in_place) says whether the node is as the last full run with the same inputs left it
    (the record M(gpu_node.container_toolkit.node_record) wrote) and RV(choices.record) whether this run
    records it at its end.
  - The result is the look's, as M(gpu_node.container_toolkit.node_info) returns it, with RV(choices).
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
    details: It only reads; a run in check mode is not one that records the node.
  diff_mode:
    support: N/A
    details: It changes nothing.
  safe_file_operations:
    support: N/A
    details: It writes no files.
  idempotent:
    support: full
  platform:
    platforms: posix
options:
  read_ahead:
    description: Passed to M(gpu_node.container_toolkit.node_info) (O(gpu_node.container_toolkit.node_info#module:read_ahead)).
    type: dict
  settings:
    description:
      - The role's settings without their C(gpu_node_) prefix, as the
        P(gpu_node.container_toolkit.gpu_node_choices#filter) filter takes them, with C(toolkit_install_method)
        and C(verifying) (the C(verify) playbook's run, which never skips).
    type: dict
    required: true
  needs_driver:
    description: Fail when the look finds no driver (the role's C(present) with CDI on).
    type: bool
    default: true
  options_file:
    description: The role's C(meta/argument_specs.yml) on the controller; its C(main) entry point's options are the role's variables.
    type: path
    required: true
  prefix:
    description: The role's variable prefix.
    type: str
    default: gpu_node_
  known:
    description: Names under O(prefix) that are not options but are the role's (what it registers, what its playbooks take).
    type: list
    elements: str
    default: []
  allowed:
    description: Regular expressions of names under O(prefix) that belong to the user (matched against the whole name).
    type: list
    elements: str
    default: []
  skip_unchanged:
    description: Digest the run's inputs, so that the steps can be skipped where the node's record matches them.
    type: bool
    default: false
  other_inputs:
    description: Variables of the other roles the run passes on as they are; their values are part of the inputs.
    type: list
    elements: str
    default: []
  sources:
    description:
      - The toolkit's sources; a path is found as the C(copy) module finds it, a URL counts as given (its checksum is
        an option). One that cannot be read here means no inputs digest, and so no skip.
    type: list
    elements: str
    default: []
  remote_src:
    description: O(sources) are on the node; their contents cannot be digested here, so nothing is skipped.
    type: bool
    default: false
seealso:
  - module: gpu_node.container_toolkit.node_info
  - module: gpu_node.container_toolkit.node_record
  - plugin: gpu_node.container_toolkit.gpu_node_choices
    plugin_type: filter
"""

EXAMPLES = r"""
---
- name: Look at the node and check the run can finish
  gpu_node.container_toolkit.gpu_node_look:
    host_root: /tmp/node
    settings: {state: present, container_engines: auto, containerd_restart_mode: none}
    options_file: "{{ role_path }}/meta/argument_specs.yml"
    known: [gpu_node_driver]
  register: gpu_node_driver

- name: Say what the look chose
  ansible.builtin.debug:
    msg: "{{ gpu_node_driver.choices.platform }}: {{ gpu_node_driver.choices.engines | join(', ') }}"
"""

RETURN = r"""
driver_version:
  description: The look's result, as M(gpu_node.container_toolkit.node_info) returns it (this and every other value).
  returned: when the driver is found
  type: str
  sample: 535.104.12
choices:
  description: The role's choices.
  returned: when the variables passed the check and the look was taken
  type: dict
  contains:
    platform:
      description: The node's platform, one of the C(vars/<platform>.yml) (empty when it cannot be told).
      type: str
      sample: cos
    engines:
      description: The container engines to configure.
      type: list
      elements: str
      sample: [containerd]
    problems:
      description: What stops the run, each naming the setting to change (the task fails when there is one).
      type: list
      elements: str
      sample: []
    in_place:
      description: The node is as the last full run with the same inputs left it; the steps are skipped.
      type: bool
      sample: true
    record:
      description: This run records the node at its end.
      type: bool
      sample: false
    inputs_digest:
      description: The digest of the run's inputs that a record holds (empty where nothing is skipped or recorded).
      type: str
      sample: 3b1f0c6e9d2a4b5c6d7e8f9012345678901234567890abcdef1234567890abcd
  sample:
    platform: cos
    engines: [containerd]
    cdi_refresh: true
    cdi_refresh_units: false
    kept_configs: [containerd]
    dev_char_links: false
    device_nodes_in_place: true
    left_to_boot: false
    problems: []
    in_place: true
    record: true
    inputs_digest: 3b1f0c6e9d2a4b5c6d7e8f9012345678901234567890abcdef1234567890abcd
"""

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.action_module import action_only_main


def main():
    action_only_main(argument_specs.gpu_node_look())


if __name__ == "__main__":
    main()
