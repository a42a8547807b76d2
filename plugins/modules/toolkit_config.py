#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done by the action plugin of the same name (plugins/action/toolkit_config.py).

DOCUMENTATION = r"""
module: toolkit_config
short_description: Write the NVIDIA Container Toolkit's config.toml
version_added: 0.1.0
description:
  - Writes the C(config.toml) read by C(nvidia-container-runtime), its hook and
    C(nvidia-container-cli), by default at C(<install_dir>/.config/nvidia-container-runtime/config.toml),
    where the wrappers installed by M(gpu_node.container_toolkit.toolkit_install) point.
  - The file is read from the node, edited on the controller with C(tomlkit) and written back
    atomically only when its bytes change. Only the keys this module manages are set; comments,
    other keys and tables a user added are kept.
  - "Sets C(nvidia-container-cli.root) (O(driver_root)), C(.path), C(.ldconfig), C(.load-kmods);
    C(nvidia-container-runtime.mode), C(.runtimes), C(.modes.cdi.default-kind),
    C(.modes.cdi.annotation-prefixes), C(.modes.cdi.spec-dirs); C(nvidia-container-runtime-hook.path)
    and C(.skip-mode-detection); C(nvidia-ctk.path); and anything in O(settings)."
requirements:
  - "On the controller: Python 3.11 or later (the edited text is checked with its C(tomllib)), or
    C(tomlkit) 0.14 or later on older Pythons (C(pip install -r requirements.txt) installs it)."
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
  check_mode:
    details: Nothing is written in check mode.
  diff_mode:
    details: The diff shows the file's text before and after.
options:
  path:
    description:
      - Host path of the config file.
      - Defaults to C(<install_dir>/.config/nvidia-container-runtime/config.toml).
    type: str
  install_dir:
    description: Host directory of the installed toolkit binaries.
    type: path
    default: /usr/local/nvidia/toolkit
  driver_root:
    description:
      - Host path of the driver's files, written as C(nvidia-container-cli.root).
      - On GKE's Container-Optimized OS this is V(/home/kubernetes/bin/nvidia).
      - V(auto) takes the first of V(/run/nvidia/driver), V(/home/kubernetes/bin/nvidia),
        V(/var/lib/nvidia) and V(/) that holds C(libcuda.so.1) in one of the node model's default
        library directories, and fails when none does. Pass the C(driver_root)
        that M(gpu_node.container_toolkit.nvidia_driver_info) found to use the same driver as the CDI specs
        (the collection's roles do).
    type: str
    default: auto
  ldconfig:
    description:
      - The C(nvidia-container-cli.ldconfig) value; a leading C(@) means a host path.
      - V(auto) uses C(@/sbin/ldconfig.real) when that exists under O(host_root), else
        C(@/sbin/ldconfig). The driver root's own ldconfig is used only when O(driver_root) is a
        full filesystem (it has C(etc/ld.so.cache) and an C(sbin/ldconfig)), as in a driver
        container; GKE's driver directory has no C(sbin/), so it is never pointed into.
    type: str
    default: auto
  runtime_mode:
    description:
      - C(nvidia-container-runtime.mode), how the runtime gives containers their GPUs.
      - O(mode) is its former name, kept as an alias (elsewhere in Ansible C(mode) means file
        permissions).
    type: str
    choices: [auto, cdi, legacy, csv]
    default: auto
    aliases: [mode]
  runtimes:
    description:
      - C(nvidia-container-runtime.runtimes), the low-level runtimes it runs.
      - By default, the C(BinaryName) of the C(runc) runtime in O(containerd_config) when that is
        set, else V(runc) and V(crun).
    type: list
    elements: str
  containerd_config:
    description: Host path of containerd's config, read for the default of O(runtimes).
    type: str
    default: /etc/containerd/config.toml
  default_kind:
    description: C(nvidia-container-runtime.modes.cdi.default-kind). Left alone when not given.
    type: str
  annotation_prefixes:
    description: C(nvidia-container-runtime.modes.cdi.annotation-prefixes). Left alone when not given.
    type: list
    elements: str
  spec_dirs:
    description: C(nvidia-container-runtime.modes.cdi.spec-dirs). Left alone when not given.
    type: list
    elements: str
  settings:
    description:
      - Any other keys, as a nested dict of tables and values; for example a C(nvidia-container-cli)
        dict holding C(debug) sets C(nvidia-container-cli.debug). See the examples.
      - Merged over the keys set by the other options.
    type: dict
    default: {}
  state:
    description:
      - V(present) writes the file; V(absent) removes a file V(present) created, and only while it holds
        nothing but the keys this module sets (with O(settings), those too).
      - A file V(present) created opens with a C(gpu_node.container_toolkit) C(created) comment naming the
        directories its write created (C(.config/nvidia-container-runtime) under O(install_dir)); V(absent)
        removes those again, each only when it is empty, and none but the file's own directory and its parents.
      - A file that was there before V(present) edited it is the administrator's, and keys added by hand since
        make a created file theirs too; V(absent) leaves such a file as it is and says why (RV(kept)).
    type: str
    choices: [present, absent]
    default: present
  backup:
    description: Keep a timestamped copy of the file before it is replaced.
    type: bool
    default: false
notes:
  - Paths written into the file are host paths and never contain O(host_root).
seealso:
  - module: gpu_node.container_toolkit.toolkit_install
  - module: gpu_node.container_toolkit.containerd_runtime
"""

EXAMPLES = r"""
---
- name: Configure the toolkit on GKE's Container-Optimized OS
  gpu_node.container_toolkit.toolkit_config:
    install_dir: /home/kubernetes/bin/nvidia/toolkit
    driver_root: /home/kubernetes/bin/nvidia

- name: CDI mode, with a debug log
  gpu_node.container_toolkit.toolkit_config:
    driver_root: /home/kubernetes/bin/nvidia
    runtime_mode: cdi
    default_kind: nvidia.com/gpu
    spec_dirs: [/etc/cdi, /var/run/cdi]
    settings:
      nvidia-container-runtime:
        log-level: debug
"""

RETURN = r"""
changed:
  description: Whether the file was (or, in check mode, would be) written or removed.
  returned: always
  type: bool
  sample: true
path:
  description: Host path of the config file (a symlink's target).
  returned: always
  type: str
  sample: /home/kubernetes/bin/nvidia/toolkit/.config/nvidia-container-runtime/config.toml
changes:
  description:
    - What this run changed (or, in check mode, would have), one entry per difference.
    - A setting that differed is V(updated) on its file (V(created) when the file was missing), named in C(setting).
    - With O(state=absent), the file is V(removed), or V(kept) with the reason (a file this module did not
      create, or one holding keys it does not set); each directory made for it is V(removed) (V(kept) when
      it is not empty).
    - Before this release each entry was a line in words; the entries are now of the shape every module
      of the collection returns, the words kept in C(setting) and C(reason).
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The host path of the file or directory.
      type: str
      sample: /etc/nvidia-container-runtime/config.toml
    action:
      description: What happened to it.
      type: str
      choices: [created, updated, removed, kept]
      sample: updated
    setting:
      description: The setting of the file that differed; absent where the change is the whole file's.
      type: str
      returned: when one setting of the file differed
      sample: nvidia-container-cli.root
    reason:
      description: Why, or what the setting was and is now, in words.
      type: str
      returned: when there is more to say than the action
      sample: "'/' -> '/home/kubernetes/bin/nvidia'"
  sample:
    - path: /etc/nvidia-container-runtime/config.toml
      action: updated
      setting: nvidia-container-cli.root
      reason: "'/' -> '/home/kubernetes/bin/nvidia'"
driver_root:
  description: The C(nvidia-container-cli.root) value written.
  returned: when O(state=present)
  type: str
  sample: /home/kubernetes/bin/nvidia
driver_root_source:
  description: Why RV(driver_root) was chosen.
  returned: when O(state=present)
  type: str
  sample: "auto: found /home/kubernetes/bin/nvidia/lib64/libcuda.so.1"
ldconfig:
  description: The C(nvidia-container-cli.ldconfig) value written.
  returned: when O(state=present)
  type: str
  sample: "@/sbin/ldconfig"
ldconfig_source:
  description: Why RV(ldconfig) was chosen.
  returned: when O(state=present)
  type: str
  sample: the host's /sbin/ldconfig
settings:
  description: The whole file's content after the edit, as data.
  returned: when O(state=present)
  type: dict
  sample: {nvidia-container-cli: {root: /home/kubernetes/bin/nvidia, ldconfig: "@/sbin/ldconfig"}}
symlinks:
  description: A line when O(path) is a symlink, naming the target that was edited.
  returned: when O(path) is a symlink
  type: list
  elements: str
  sample: ["/etc/nvidia-container-runtime/config.toml is a symlink; edited its target /x/config.toml"]
backup_file:
  description: Host path of the backup copy.
  returned: when O(backup=true) and the file was replaced
  type: str
  sample: /usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml.123.2024-01-01@10:00:00~
kept:
  description: O(state=absent) - why the file was left as it is (this module did not create it, or keys were added to it).
  returned: when O(state=absent) left an existing file alone
  type: str
  sample: "it holds keys this module does not set (nvidia-container-cli.debug), added since it was created"
removed_dirs:
  description: O(state=absent) - the directories created for the file that were removed again (empty in check mode).
  returned: when O(state=absent) removed a file this module created
  type: list
  elements: str
  sample: [/usr/local/nvidia/toolkit/.config/nvidia-container-runtime, /usr/local/nvidia/toolkit/.config]
"""

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.action_module import action_only_main


def main():
    action_only_main(argument_specs.toolkit_config())


if __name__ == "__main__":
    main()
