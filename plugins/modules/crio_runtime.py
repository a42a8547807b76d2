#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done by the action plugin of the same name (plugins/action/crio_runtime.py).

DOCUMENTATION = r"""
module: crio_runtime
short_description: Register the NVIDIA runtimes in CRI-O with a drop-in of their own
version_added: 0.2.0
description:
  - Writes a CRI-O drop-in (O(path), in C(crio.conf.d)) with a C([crio.runtime.runtimes.<name>])
    table for each of O(runtimes). Each starts from the settings CRI-O gives the node's low-level
    runtime handler, then points C(runtime_path) at the toolkit's wrapper and sets
    C(runtime_type = "oci") (C("pod") when the low-level runtime is of that type, run under conmon-rs),
    as C(nvidia-ctk runtime configure --runtime=crio) does. A low-level runtime of type C(vm) is refused.
  - The low-level runtime is C(crio.runtime.default_runtime) (unless it is one of O(runtimes)), else
    C(crun), else C(runc). Its settings are the ones CRI-O uses. CRI-O reads O(config_path) first, then
    every file under the drop-in directory (at any depth, any name) in lexical order. A key such as
    C(default_runtime) takes the last value a file gives it, but a C([crio.runtime.runtimes.<name>])
    table is replaced whole by a later file that defines it again; the keys only the earlier table
    set are not used. C(inherit_default_runtime) and C(runtime_config_path) are not copied
    (the first would make CRI-O replace the wrapper's path with the default runtime's).
  - C(crio.conf) and the other drop-ins are read, never written. The drop-in is this module's alone
    (its first line says so); a file at O(path) without that line is refused and left as it is.
  - The drop-in's head records the directories writing it created and a digest of what follows.
    A drop-in changed by hand since is still this module's to rewrite or remove, but not before a
    copy of it is kept beside the drop-in directory (as O(backup) names copies), whatever O(backup)
    says; a warning names the copy, and O(remove_backups) leaves it.
  - Every key written is checked against the types CRI-O takes for a runtime handler (from the
    comments CRI-O's own C(crio config) template writes, and crio.conf(5)) and the text is parsed
    again before it is written. A file CRI-O would refuse, or that cannot be read as TOML, fails the
    task naming the file; nothing is written then.
  - Nothing needs to be installed on the node. CRI-O must be restarted when RV(restart_required) is true.
requirements:
  - On the controller, Python 3.11 or later (C(tomllib)), else the Python package C(tomlkit) (see the
    collection's C(requirements.txt)).
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
    details: The diff shows the drop-in before and after.
options:
  path:
    description:
      - Host path of the drop-in. CRI-O reads every file of its drop-in directory (C(crio --config-dir),
        default C(/etc/crio/crio.conf.d)) in lexical order, and a later file's runtime table replaces an
        earlier one of the same name whole, so a high number makes this drop-in's runtimes the ones CRI-O uses.
    type: str
    default: /etc/crio/crio.conf.d/99-nvidia.toml
  config_path:
    description: Host path of CRI-O's main configuration file (C(crio --config)), read first; it need not exist.
    type: str
    default: /etc/crio/crio.conf
  install_dir:
    description: Host directory of the installed toolkit; the default O(runtimes) point into it.
    type: path
    default: /usr/local/nvidia/toolkit
  runtimes:
    description:
      - The runtimes to register, as a list of name and binary, as in
        M(gpu_node.container_toolkit.containerd_runtime).
      - Defaults to C(nvidia) (C(<install_dir>/nvidia-container-runtime)), C(nvidia-cdi)
        (C(….cdi)) and C(nvidia-legacy) (C(….legacy)). The first is the one O(set_as_default) makes
        the default.
    type: list
    elements: dict
    suboptions:
      name:
        description: The runtime handler's name, as a RuntimeClass's C(handler) names it.
        type: str
        required: true
      binary:
        description: Host path of the runtime's executable, written as C(runtime_path).
        type: str
        required: true
  set_as_default:
    description:
      - Set C(crio.runtime.default_runtime) to the first of O(runtimes) in the drop-in. The files CRI-O read
        before it are not changed, so removing the drop-in gives the previous default back.
    type: bool
    default: false
  state:
    description: V(present) writes the drop-in; V(absent) removes it, and the directories writing it created.
    type: str
    choices: [present, absent]
    default: present
  backup:
    description:
      - Keep a timestamped copy of the drop-in before it is replaced or removed; RV(backup_files) maps it
        to its copy (or to null when this run created it). The copy goes beside the drop-in directory,
        hidden (C(/etc/crio/.99-nvidia.toml.<pid>.<date>@<time>~)), never into it, where CRI-O would read it.
    type: bool
    default: false
  remove_backups:
    description:
      - With O(state=absent), remove the copies O(backup) made of the drop-in (those whose first line
        says this module wrote them), then the directories writing the drop-in created, when empty.
    type: bool
    default: false
notes:
  - Files are touched at O(host_root) joined with their host path; the paths written into the drop-in
    are host paths and never contain O(host_root).
  - CRI-O is not packaged in Debian 12, where this collection is tested; the module is tested against
    the option names and types CRI-O documents, and against configurations real projects ship (see the
    collection's C(tests/fixtures/crio/SOURCES.md)).
seealso:
  - module: gpu_node.container_toolkit.containerd_runtime
  - module: gpu_node.container_toolkit.docker_runtime
"""

EXAMPLES = r"""
---
- name: Register the nvidia runtimes in CRI-O
  gpu_node.container_toolkit.crio_runtime:
    backup: true
  register: crio_edit

- name: Restart CRI-O only when the drop-in changed
  ansible.builtin.service:
    name: crio
    state: restarted
  when: crio_edit.restart_required

- name: Remove the drop-in again
  gpu_node.container_toolkit.crio_runtime:
    state: absent
"""

RETURN = r"""
changed:
  description: Whether the drop-in was (or, in check mode, would be) written or removed.
  returned: always
  type: bool
  sample: true
restart_required:
  description: True when the drop-in changed; restart CRI-O.
  returned: always
  type: bool
  sample: true
path:
  description: Host path of the drop-in.
  returned: always
  type: str
  sample: /etc/crio/crio.conf.d/99-nvidia.toml
changes:
  description:
    - What this run changed (or, in check mode, would have), one entry per difference.
    - The drop-in is V(created), V(updated) or V(removed); a directory this module created and
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
      sample: /etc/crio/crio.conf.d/99-nvidia.toml
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
    - {path: /etc/crio/crio.conf.d/99-nvidia.toml, action: created}
base_runtime:
  description: The runtime handler whose settings the runtimes start from.
  returned: when O(state=present)
  type: str
  sample: crun
base_sources:
  description:
    - The file whose table for RV(base_runtime) CRI-O uses - the last file that defines it, as a later
      definition replaces an earlier one whole. Empty when no file defines it.
  returned: when O(state=present)
  type: list
  elements: str
  sample: [/etc/crio/crio.conf.d/10-crun.conf]
default_runtime:
  description: C(crio.runtime.default_runtime) as the other files set it, or null when none does.
  returned: when O(state=present)
  type: str
  sample: crun
read:
  description: The files read, in CRI-O's order (the drop-in excepted).
  returned: when O(state=present)
  type: list
  elements: str
  sample: [/etc/crio/crio.conf, /etc/crio/crio.conf.d/10-crun.conf]
notes:
  description: What the runtimes were built from, when it is worth knowing.
  returned: when there is something to say
  type: list
  elements: str
  sample: ["crun is not defined in /etc/crio/crio.conf: the runtimes start from CRI-O's built-in settings"]
backup_files:
  description: The drop-in mapped to the host path of its copy, or to null when this run created it.
  returned: when O(backup=true) and the drop-in was written or removed
  type: dict
  sample: {/etc/crio/crio.conf.d/99-nvidia.toml: /etc/crio/.99-nvidia.toml.1.2024-01-01@10:00:00~}
backup_file:
  description: The drop-in's copy, as in RV(backup_files).
  returned: when O(backup=true) and a copy was made
  type: str
  sample: /etc/crio/.99-nvidia.toml.1.2024-01-01@10:00:00~
removed_backups:
  description: Host paths of the copies O(remove_backups=true) removed (would remove, in check mode).
  returned: when O(remove_backups=true) and O(state=absent) (empty when there was none)
  type: list
  elements: str
  sample: [/etc/crio/.99-nvidia.toml.1.2024-01-01@10:00:00~]
removed_dirs:
  description: The directories writing the drop-in created, removed again because they were empty.
  returned: when O(state=absent) removed them
  type: list
  elements: str
  sample: [/etc/crio/crio.conf.d, /etc/crio]
"""

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.action_module import action_only_main


def main():
    action_only_main(argument_specs.crio_runtime())


if __name__ == "__main__":
    main()
