#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done by the action plugin of the same name (plugins/action/k3s_runtime.py).

DOCUMENTATION = r"""
module: k3s_runtime
short_description: Give the NVIDIA runtimes to the containerd of k3s or RKE2 the way they take them
version_added: 0.3.0
description:
  - k3s and RKE2 write their containerd's C(config.toml) (under C(/var/lib/rancher/k3s/agent/etc/containerd/)
    or C(/var/lib/rancher/rke2/agent/etc/containerd/)) anew at every start, and add the C(nvidia)
    runtimes to it themselves when they find C(nvidia-container-runtime) in C(/usr/local/nvidia/toolkit)
    or C(/usr/bin) (or on their service's C(PATH)). This module never edits that file.
  - With O(set_as_default), it sets C(default-runtime) to C(nvidia) in a drop-in of their configuration,
    C(/etc/rancher/<k3s|rke2>/config.yaml.d/99-gpu-node-container-toolkit.yaml).
  - Only for a runtime they do not add themselves (one of O(runtimes) whose binary is not where they
    look, or with another name) it writes a template beside the config, built on theirs
    (C({{ template "base" . }}) and the runtime tables after it), C(config.toml.tmpl) where the config
    is version 2, C(config-v3.toml.tmpl) where it is version 3 (containerd 2.x). An existing template
    that this module did not write is never changed; the task fails naming it.
  - Both files open with this collection's record (inside a Go template comment in the template, so
    that it is not rendered); O(state=absent) removes them, and the directories writing them created.
  - The result says which service to restart (RV(service)) and, in RV(generated_problems), what the
    config they generated at their last start lacks of what this module expects there. Restart the
    service when RV(restart_required) is true, then run the module again (in check mode) to check it.
requirements:
  - On the controller, Python 3.11 or later (C(tomllib)), else the Python package C(tomlkit).
  - Nothing on the node beyond Python 3's standard library.
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
  - gpu_node.container_toolkit.node.READ_AHEAD
  - gpu_node.container_toolkit.attributes.NODE_GROUP
  - gpu_node.container_toolkit.attributes.CONFIG_EDIT
attributes:
  diff_mode:
    details: The diff shows the drop-in and the template before and after.
options:
  distribution:
    description:
      - V(auto) finds k3s or RKE2 on the node by its generated containerd config and its systemd units
        (C(k3s), C(k3s-agent), C(rke2-server), C(rke2-agent)); the task fails when neither is there.
    type: str
    choices: [auto, k3s, rke2]
    default: auto
  install_dir:
    description:
      - Host directory of the installed toolkit. In C(/usr/local/nvidia/toolkit) (the default) or
        C(/usr/bin), k3s and RKE2 find the runtime themselves; anywhere else the C(nvidia) runtime goes
        into a template.
    type: path
    default: /usr/local/nvidia/toolkit
  runtimes:
    description:
      - The runtimes wanted, as a list of name and binary. Without it, only C(nvidia)
        (C(<install_dir>/nvidia-container-runtime)), the runtime k3s and RKE2 document; they add
        C(nvidia-experimental) and, in recent releases, C(nvidia-cdi) themselves where they find them.
    type: list
    elements: dict
    suboptions:
      name:
        description: The runtime handler's name, as a RuntimeClass's C(handler) names it.
        type: str
        required: true
      binary:
        description: Host path of the runtime's executable.
        type: str
        required: true
  set_as_default:
    description: Make C(nvidia) containerd's default runtime (C(default-runtime) in the drop-in).
    type: bool
    default: false
  state:
    description: V(present) writes what is needed; V(absent) removes what this module wrote.
    type: str
    choices: [present, absent]
    default: present
  backup:
    description:
      - Keep a timestamped copy of each file before it is replaced or removed; RV(backup_files) maps it
        to its copy (or to null when this run created it).
    type: bool
    default: false
  remove_backups:
    description: With O(state=absent), remove the copies O(backup) made of this module's files.
    type: bool
    default: false
notes:
  - The facts this module rests on (search paths, template names, the C(config.yaml.d) drop-in) are
    listed with their sources in the collection's C(docs/k3s-rke2.md).
  - A config of version 1 (k3s releases older than the C(base) template) cannot be given a template,
    so a runtime that needs one is refused there.
seealso:
  - module: gpu_node.container_toolkit.containerd_runtime
"""

EXAMPLES = r"""
---
- name: Make nvidia the default runtime of k3s's containerd
  gpu_node.container_toolkit.k3s_runtime:
    set_as_default: true
    backup: true
  register: k3s_edit

- name: Restart k3s only when something changed
  ansible.builtin.service:
    name: "{{ k3s_edit.service }}"
    state: restarted
  when: k3s_edit.restart_required

- name: Remove what the module wrote
  gpu_node.container_toolkit.k3s_runtime:
    state: absent
"""

RETURN = r"""
changed:
  description: Whether a file was (or, in check mode, would be) written or removed.
  returned: always
  type: bool
  sample: true
restart_required:
  description: True when a file changed; restart RV(service) so that the config is generated again.
  returned: always
  type: bool
  sample: true
path:
  description: Host path of the containerd config k3s or RKE2 generates.
  returned: success
  type: str
  sample: /var/lib/rancher/k3s/agent/etc/containerd/config.toml
distribution:
  description: V(k3s) or V(rke2).
  returned: success
  type: str
  sample: k3s
service:
  description: The systemd unit to restart (the enabled one of the distribution's units).
  returned: success
  type: str
  sample: k3s-agent
socket:
  description: The socket their containerd answers on.
  returned: success
  type: str
  sample: /run/k3s/containerd/containerd.sock
config_version:
  description: The generated config's version (1, 2 or 3), or null when it does not exist yet.
  returned: success
  type: int
  sample: 2
template:
  description: The template they read for a config of RV(config_version).
  returned: success
  type: str
  sample: /var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl
drop_in:
  description: Host path of this module's drop-in of their configuration.
  returned: success
  type: str
  sample: /etc/rancher/k3s/config.yaml.d/99-gpu-node-container-toolkit.yaml
extra_runtimes:
  description: The runtimes that go into the template, because they would not add them themselves.
  returned: success
  type: list
  elements: str
  sample: []
expected:
  description: What the generated config must show after a restart (C(runtimes), C(default)).
  returned: success
  type: dict
  sample: {runtimes: {nvidia: /usr/local/nvidia/toolkit/nvidia-container-runtime}, default: nvidia}
generated_problems:
  description: What the config generated at the last start lacks of RV(expected), in words.
  returned: success
  type: list
  elements: str
  sample: ["runtime nvidia is missing"]
generated_notes:
  description: Runtimes there that run another binary than RV(expected) names (found first where they look).
  returned: success
  type: list
  elements: str
  sample: []
generated_ok:
  description: True when nothing changed and RV(generated_problems) is empty.
  returned: success
  type: bool
  sample: true
changes:
  description:
    - What this run changed (or, in check mode, would have), one entry per difference.
    - Each template and drop-in is V(created), V(updated) or V(removed); a directory this module created and
      O(state=absent) tried to remove is V(removed) (V(kept) when it is not empty), and so is each copy
      O(remove_backups) removes.
    - Before this release each entry was a line in words; the entries are now of the shape every module
      of the collection returns.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The host path of the file or directory.
      type: str
      sample: /etc/rancher/k3s/config.yaml.d/99-gpu-node-container-toolkit.yaml
    action:
      description: What happened to it.
      type: str
      choices: [created, updated, removed, kept]
      sample: created
    reason:
      description: Why, in words.
      type: str
      returned: when there is more to say than the action
      sample: "created by this module; not empty"
  sample:
    - {path: /etc/rancher/k3s/config.yaml.d/99-gpu-node-container-toolkit.yaml, action: created}
backup_files:
  description: Each file written or removed mapped to its copy, or to null when this run created it.
  returned: when O(backup=true) and a file was written or removed
  type: dict
  sample: {/etc/rancher/k3s/config.yaml.d/99-gpu-node-container-toolkit.yaml: null}
removed_backups:
  description: Host paths of the copies O(remove_backups=true) removed.
  returned: when O(remove_backups=true) and O(state=absent)
  type: list
  elements: str
  sample: []
removed_dirs:
  description: The directories writing the files created, removed again because they were empty.
  returned: when O(state=absent) removed them
  type: list
  elements: str
  sample: [/etc/rancher/k3s/config.yaml.d]
"""

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.action_module import action_only_main


def main():
    action_only_main(argument_specs.k3s_runtime())


if __name__ == "__main__":
    main()
