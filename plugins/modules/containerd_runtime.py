#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done by the action plugin of the same name (plugins/action/containerd_runtime.py).

DOCUMENTATION = r"""
module: containerd_runtime
short_description: Register the NVIDIA runtimes in containerd's configuration, keeping the file intact
version_added: 0.1.0
description:
  - Adds (or removes) the C(nvidia), C(nvidia-cdi) and C(nvidia-legacy) runtimes in a containerd
    C(config.toml), editing the file itself, in place. Comments, order and spacing outside the
    edited keys are kept, and the file is never rewritten from C(containerd config dump).
  - The file is read from the node, edited on the controller line by line, and written back
    atomically only when its bytes change. After every edit the new text is parsed again and
    must mean exactly what was asked; otherwise the task fails naming the file and the key,
    and nothing is written. Tables split across the file, dotted keys and any indentation
    are edited where they are. Nothing needs to be installed on the node.
  - The config version is read from the file (no C(version) key means 1). For a missing or
    empty file, O(config_version=auto) asks the node's C(containerd --version) (1.x gives 2,
    2.0 to 2.2 give 3, 2.3 and later give 4) and uses 2 when containerd is not found. With
    O(host_root) other than V(/) the node's binary is never run (it would run on this machine,
    with its rights), so the version is 2, which every containerd from 1.3 on reads (2.x migrates
    it as it loads), unless O(config_version) says otherwise.
  - Runtimes live under C(plugins."io.containerd.grpc.v1.cri".containerd.runtimes) (version 2),
    C(plugins."io.containerd.cri.v1.runtime".containerd.runtimes) (versions 3 and 4) or
    C(plugins.cri.containerd.runtimes) (version 1). When the file also holds CRI tables of
    another version, which containerd ignores, the result warns and names the table
    containerd reads.
  - A new runtime starts as a copy of the runtime that really runs runc-compatible
    containers (C(runtime_type) C(io.containerd.runc.v2) or v1), in this order; the default runtime, else
    C(runc), else C(crun), else another runtime of the file, else an existing runtime of
    O(runtimes) (an C(nvidia) default on a node without C(runc)). A default such as
    C(kata-qemu) is passed over. So C(SystemdCgroup) and other options are inherited. It
    then gets O(runtime_type), O(container_annotations) and C(options.BinaryName) (version 1
    also C(options.Runtime)).
  - A runtime of O(runtimes) that the file already has (cloud GPU images and k3s ship one
    named C(nvidia)) keeps its table; only the keys that differ are replaced, and each
    replaced line is recorded.
  - A C(runtimes) table in the file replaces containerd's built-in one. When the default runtime
    is C(runc) and the file has no entry for it, a minimal C(runc) entry is added so containerd
    keeps its default runtime; no C(runc) entry is added in other cases.
  - A version 1 file whose C([plugins.cri.containerd.default_runtime]) table has a
    C(runtime_type) makes containerd register that table as the runtime C(default) and ignore
    C(default_runtime_name); there O(set_as_default) sets that table's C(runtime_type) and
    C(options) instead.
  - What O(state=absent) needs is kept in the file itself, in comments that start with
    C(gpu_node.container_toolkit). A line this module replaced carries its original text
    (C(was "<the original line>")); a line it added is marked C(added); tables it added sit
    between C(begin) and C(end) comment lines.
    O(state=absent) puts back every original line and removes every added one, so a file
    that O(state=present) changed gets its original bytes back, whatever was changed.
  - Files that their owner writes anew at every start (k3s and RKE2 generate C(config.toml) from
    C(config.toml.tmpl) and head it C(DO NOT EDIT)) are refused with a message naming
    M(gpu_node.container_toolkit.k3s_runtime), which gives them the runtimes their way.
    A file that starts with a UTF-8 byte order mark is refused with that reason.
  - containerd does not reload its config; restart it when RV(restart_required) is true.
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
  diff_mode:
    details: The diff shows the text of each file before and after.
options:
  path:
    description:
      - Host path of containerd's root config file.
      - When it is a symlink, its target (resolved inside O(host_root)) is edited and the
        result says so in RV(symlinks).
    type: str
    default: /etc/containerd/config.toml
  install_dir:
    description:
      - Host directory of the installed toolkit; the default O(runtimes) point into it.
    type: path
    default: /usr/local/nvidia/toolkit
  runtimes:
    description:
      - The runtimes to register, as a list of name and binary.
      - Defaults to C(nvidia) (C(<install_dir>/nvidia-container-runtime)), C(nvidia-cdi)
        (C(….cdi)) and C(nvidia-legacy) (C(….legacy)).
      - The first entry is the one O(set_as_default) makes the default.
    type: list
    elements: dict
    suboptions:
      name:
        description: The runtime's name, the CRI runtime handler.
        type: str
        required: true
      binary:
        description: Host path of the runtime's executable, set as C(options.BinaryName).
        type: str
        required: true
  runtime_type:
    description: The containerd shim of each runtime.
    type: str
    default: io.containerd.runc.v2
  set_as_default:
    description:
      - Make the first of O(runtimes) containerd's C(default_runtime_name).
      - The previous value is recorded in the file and put back by O(state=absent), or by a
        later run with O(set_as_default=false).
    type: bool
    default: false
  enable_cdi:
    description:
      - Set the CRI plugin's C(enable_cdi). Left alone when not given.
      - containerd reads it from 1.7 on; when the file changes and the node's containerd is
        older (Debian 12 ships 1.6), the key is written anyway and the result warns.
      - The previous value is recorded and put back by O(state=absent).
    type: bool
  enable_cri:
    description:
      - When the root config's C(disabled_plugins) turns containerd's CRI plugin off (C(cri) in a
        version 1 file, as Docker's C(containerd.io) package ships it; C(io.containerd.grpc.v1.cri)
        or, in version 3, C(io.containerd.cri.v1.runtime) / C(io.containerd.cri.v1.images)),
        take those entries out, so that the kubelet and C(crictl) get CRI and the runtimes.
        The line is recorded and put back by O(state=absent).
      - Without it, such a file is still edited, the result warns and RV(cri_disabled_by) names
        the entries; the runtimes are then unused except by a client of containerd's own API.
    type: bool
    default: false
  cdi_spec_dirs:
    description:
      - Set the CRI plugin's C(cdi_spec_dirs). Left alone when not given.
      - The previous value is recorded and put back by O(state=absent).
    type: list
    elements: str
  container_annotations:
    description:
      - Set each runtime of O(runtimes)'s C(container_annotations), the annotations containerd
        passes on to the runtime. The default lets CDI device annotations reach the NVIDIA
        runtime, as NVIDIA's own installer sets it.
      - An empty list leaves the key alone.
    type: list
    elements: str
    default: ['cdi.k8s.io/*']
  config_version:
    description:
      - The config version. V(auto) reads it from the file, or for a missing or empty file
        asks the node's containerd when O(host_root=/) (else 2).
      - A number that differs from the file's own version is an error; this module does not
        migrate configs.
    type: str
    choices: [auto, '1', '2', '3', '4']
    default: auto
  drop_in:
    description:
      - Host path of a drop-in file. The runtimes go there, with the root config's own
        version, and O(path) only gets the drop-in in its C(imports) (existing imports are
        kept, no duplicates, nothing added when an import glob already covers it).
      - containerd before 2.1 replaces, rather than merges, a plugin's table from C(imports);
        a drop-in that held only C(runtimes.nvidia) would make C(runc), C(sandbox_image) and
        the CNI C(bin_dir) vanish. So for config versions 1 to 3 the drop-in carries a copy of
        the root's whole CRI plugin table plus the runtimes. The trade-off is that later
        edits of that table in the root are shadowed by the drop-in until this module runs
        again (each run re-copies it). For version 4 (containerd 2.3 and later, which
        merges) the drop-in holds only the runtimes and the settings of this module.
      - A runtime the root already has is overridden in the drop-in; O(state=absent) removes
        the import and the drop-in file, so the root's own runtime is in force again.
    type: str
  state:
    description:
      - V(present) registers the runtimes; V(absent) undoes what V(present) did.
    type: str
    choices: [present, absent]
    default: present
  backup:
    description:
      - Keep a timestamped copy of a file before it is replaced; RV(backup_files) maps each file
        written to its copy, and RV(backup_file) is the root config's copy.
    type: bool
    default: false
  remove_backups:
    description:
      - With O(state=absent), also remove the copies that O(backup) made of O(path) and O(drop_in)
        while they held this module's edits, so that nothing of the provisioning is left behind.
      - A copy counts when it sits next to its file, is named as Ansible names backups
        (C(<name>.<pid>.<YYYY-MM-DD@HH:MM:SS>~)), and either holds this module's comments (a copy of
        an edited file) or holds exactly the text the file is given back (the copy the first edit
        made of the original, which is the file again). Any other file is left alone.
      - A copy that this run makes itself (O(backup=true)) is kept.
    type: bool
    default: false
  validate:
    description:
      - A command run on the node against the new file before it replaces the old one, with
        C(%s) for its path, like M(ansible.builtin.copy). The file is left alone when it fails.
      - In drop-in mode it runs for each file written.
    type: str
notes:
  - Files are touched at O(host_root) joined with their host path; paths written into the
    config (C(BinaryName), C(imports)) are host paths and never contain O(host_root).
  - The file's mode and owner are kept; a new file gets the default mode of M(ansible.builtin.copy).
  - A file this module creates from nothing opens with a C(gpu_node.container_toolkit) C(created) comment
    naming the directories the write created. O(state=absent) removes such a file when nothing else
    is left in it once the edits are undone, without a backup (nothing in it was anyone else's),
    and then those directories, each only when it is empty. A file that existed before, even a
    blank one, gets its original bytes back and stays.
  - An unchanged re-run parses the file once (with Python's C(tomllib), else C(tomlkit)) and
    writes nothing.
seealso:
  - module: gpu_node.container_toolkit.toolkit_config
  - module: ansible.builtin.copy
"""

EXAMPLES = r"""
---
- name: Register the nvidia runtimes (GKE on Container-Optimized OS), enable CDI
  gpu_node.container_toolkit.containerd_runtime:
    install_dir: /home/kubernetes/bin/nvidia/toolkit
    enable_cdi: true
    backup: true
  register: containerd_edit

- name: Restart containerd only when its effective config changed
  ansible.builtin.service:
    name: containerd
    state: restarted
  when: containerd_edit.restart_required

- name: Make nvidia the default runtime, through a drop-in file
  gpu_node.container_toolkit.containerd_runtime:
    drop_in: /etc/containerd/conf.d/99-nvidia.toml
    set_as_default: true

- name: Remove the runtimes again and restore the previous default runtime
  gpu_node.container_toolkit.containerd_runtime:
    state: absent
"""

RETURN = r"""
changed:
  description: Whether a file was (or, in check mode, would be) written or removed.
  returned: always
  type: bool
  sample: true
restart_required:
  description:
    - True only when containerd's effective configuration changed (not for comment-only
      changes) and a file was written; containerd must then be restarted.
  returned: always
  type: bool
  sample: true
path:
  description: Host path of the root config file that was edited (a symlink's target).
  returned: always
  type: str
  sample: /etc/containerd/config.toml
drop_in:
  description: Host path of the drop-in file.
  returned: when O(drop_in) is set
  type: str
  sample: /etc/containerd/conf.d/99-nvidia.toml
cri_disabled_by:
  description:
    - The entries of the root config's C(disabled_plugins) that turn containerd's CRI plugin off
      after this run; empty when CRI loads. Non-empty means the registered runtimes are not used
      by the kubelet or C(crictl) (see O(enable_cri)).
  returned: when the file was edited with O(state=present)
  type: list
  elements: str
  sample: ["cri"]
config_version:
  description: The containerd config version that was edited.
  returned: when the file was edited
  type: int
  sample: 2
config_version_source:
  description: Where RV(config_version) came from.
  returned: when the file was edited
  type: str
  sample: containerd 2.0 on the node
changes:
  description:
    - What this run changed (or, in check mode, would have), one entry per difference.
    - A setting that differed is V(updated) on its file (V(created) when the file was missing), named in C(setting).
    - A file or directory removed by O(state=absent) is V(removed) (a directory this module created, V(kept)
      when it is not empty), and so is each copy O(remove_backups) removes.
    - Before this release each entry was a line in words; the entries are now of the shape every module
      of the collection returns, the words kept in C(setting) and C(reason).
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The host path of the file or directory.
      type: str
      sample: /etc/containerd/config.toml
    action:
      description: What happened to it.
      type: str
      choices: [created, updated, removed, kept]
      sample: updated
    setting:
      description: The setting of the file that differed; absent where the change is the whole file's.
      type: str
      returned: when one setting of the file differed
      sample: runtime nvidia
    reason:
      description: Why, or what the setting was and is now, in words.
      type: str
      returned: when there is more to say than the action
      sample: "missing (added, copied from runc)"
  sample:
    - {path: /etc/containerd/config.toml, action: updated, setting: runtime nvidia, reason: "missing (added, copied from runc)"}
    - {path: /etc/containerd/config.toml, action: updated, setting: enable_cdi, reason: "False -> True"}
warnings:
  description: Things containerd would do differently from what the file seems to say.
  returned: when there is something to warn about
  type: list
  elements: str
  sample: ['config.toml declares version 2, so containerd reads plugins."io.containerd.grpc.v1.cri" and ignores plugins."io.containerd.cri.v1.runtime"']
symlinks:
  description: A line for each configured path that is a symlink, naming the target that was edited.
  returned: when O(path) or O(drop_in) is a symlink
  type: list
  elements: str
  sample: ["/etc/containerd/config.toml is a symlink; edited its target /home/containerd/config.toml"]
backup_file:
  description:
    - Host path of the backup copy of the root config, RV(path). Never a drop-in's backup; those
      are in RV(backup_files).
  returned: when O(backup=true) and RV(path) was replaced
  type: str
  sample: /etc/containerd/config.toml.12345.2024-01-01@10:00:00~
backup_files:
  description:
    - Each file this run wrote (RV(path), RV(drop_in)), mapped to the host path of its backup copy, or
      to null when the file did not exist before (this run created it; to roll back, remove it).
    - To roll back, restore each file from its own backup and remove those mapped to null. A drop-in
      removed by O(state=absent) is not listed.
  returned: when O(backup=true) and a file was written
  type: dict
  sample:
    /etc/containerd/config.toml: /etc/containerd/config.toml.1.2024-01-01@10:00:00~
    /etc/containerd/conf.d/99-nvidia.toml: null
removed_dirs:
  description:
    - O(state=absent) - the directories that this module created for the files it removed, and
      removed again because they were empty. Empty in check mode.
  returned: when O(state=absent) removed a file this module created
  type: list
  elements: str
  sample: [/etc/containerd]
removed_backups:
  description: Host paths of the backup copies O(remove_backups) removed (would remove, in check mode).
  returned: when O(remove_backups=true) and O(state=absent) (empty when there was none)
  type: list
  elements: str
  sample: [/etc/containerd/config.toml.4242.2024-01-01@10:00:00~]
"""

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.action_module import action_only_main


def main():
    action_only_main(argument_specs.containerd_runtime())


if __name__ == "__main__":
    main()
