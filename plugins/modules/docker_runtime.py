#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done by the action plugin of the same name (plugins/action/docker_runtime.py).

DOCUMENTATION = r"""
module: docker_runtime
short_description: Register the NVIDIA runtimes in Docker's daemon.json, keeping the file intact
version_added: 0.2.0
description:
  - Adds (or removes) the C(nvidia), C(nvidia-cdi) and C(nvidia-legacy) runtimes in Docker's
    C(daemon.json) as C(runtimes.<name>.path) (the toolkit's wrappers under O(install_dir)) with
    an empty C(args) list, as C(nvidia-ctk runtime configure --runtime=docker) writes them. Optionally
    makes the first one C(default-runtime) and sets C(features.cdi).
  - The file is read from the node, edited on the controller and written back atomically, only
    when its bytes change. Key order, indentation (detected as two or four spaces, tabs, or a
    one-line file), line endings and every unrelated key and value stay byte for byte; a new
    member goes after the last member of its object, indented like its siblings. The new text is
    parsed again and must mean exactly what was asked. Nothing needs to be installed on the node.
  - A file that is not one JSON object, has duplicate keys, starts with a byte order mark, or
    holds C(runtimes), a runtime, C(features) or C(default-runtime) of a type dockerd refuses is
    left untouched, and the task fails naming the file, the key and its line.
  - A runtime of O(runtimes) that the file already has (NVIDIA's packages and C(nvidia-ctk) write
    one named C(nvidia)) keeps its other keys (such as C(runtimeArgs)); only its C(path) is set.
  - JSON has no comments, and dockerd refuses a C(daemon.json) with a top-level key it does not know
    (C(the following directives don't match any configuration option)), so what O(state=absent)
    needs is kept in a journal file next to it, C(.<name>.gpu_node.container_toolkit.json)
    (mode C(0600); RV(journal)). It holds the file's bytes before the first edit (or that there was
    no file), the SHA-256 of the text this module wrote, and each member it set with its earlier
    value. It is written before C(daemon.json) and removed after it is given back.
  - O(state=absent) gives back the original bytes while C(daemon.json) is still exactly what this
    module wrote; a file this module created is removed, and then the directories its write
    created, each only when empty. When someone changed the file since, only the members this
    module set that still hold its values are put back (or removed), everything else is kept,
    and a file this module created goes only when nothing else is left in it. Without a journal
    nothing is removed (a runtime someone else registered is not this module's to remove).
  - dockerd must be restarted (or sent C(SIGHUP), which reloads C(runtimes) and
    C(default-runtime)) when RV(restart_required) is true.
requirements:
  - Nothing beyond ansible-core on the controller (the file is parsed with Python's own C(json)).
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
    details: The diff shows the text of C(daemon.json) before and after (not the journal's).
options:
  path:
    description:
      - Host path of Docker's daemon configuration file (C(dockerd --config-file)).
      - When it is a symlink, its target (resolved inside O(host_root)) is edited and the result
        says so in RV(symlinks). The journal stays next to O(path).
    type: str
    default: /etc/docker/daemon.json
  install_dir:
    description:
      - Host directory of the installed toolkit; the default O(runtimes) point into it.
    type: path
    default: /usr/local/nvidia/toolkit
  runtimes:
    description:
      - The runtimes to register, as a list of name and binary, as in
        M(gpu_node.container_toolkit.containerd_runtime).
      - Defaults to C(nvidia) (C(<install_dir>/nvidia-container-runtime)), C(nvidia-cdi)
        (C(….cdi)) and C(nvidia-legacy) (C(….legacy)).
      - The first entry is the one O(set_as_default) makes the default. The name C(runc) is
        reserved by dockerd and refused.
    type: list
    elements: dict
    suboptions:
      name:
        description: The runtime's name, as C(docker run --runtime) takes it.
        type: str
        required: true
      binary:
        description: Host path of the runtime's executable, set as C(runtimes.<name>.path).
        type: str
        required: true
  set_as_default:
    description:
      - Make the first of O(runtimes) Docker's C(default-runtime).
      - The previous value is recorded in the journal and put back by O(state=absent), or by a
        later run with O(set_as_default=false).
      - dockerd refuses to start when C(default-runtime) is also given on its command line
        (C(--default-runtime)); the role's restart handler then rolls the file back.
    type: bool
    default: false
  enable_cdi:
    description:
      - Set C(features.cdi), with which Docker 25.0 and later resolve CDI device names
        (C(docker run --device nvidia.com/gpu=all)). Left alone when not given.
      - Docker before 25.0 ignores it; dockerd 20.10 (Debian 12) accepts the key, as it accepts
        any C(features) key with a boolean value, and starts as before, without CDI.
      - The previous value is recorded and put back by O(state=absent).
    type: bool
  state:
    description:
      - V(present) registers the runtimes; V(absent) undoes what V(present) did.
    type: str
    choices: [present, absent]
    default: present
  backup:
    description:
      - Keep a timestamped copy of C(daemon.json) (and of the journal) before it is replaced;
        RV(backup_files) maps each file written to its copy.
    type: bool
    default: false
  remove_backups:
    description:
      - With O(state=absent), remove the timestamped copies O(backup) made of C(daemon.json) and of its
        journal while they held this module's edits, once the file is given back; then the directories
        this module created for a file it removed, when empty. Other copies stay.
      - A copy of the journal is always this module's; a copy of C(daemon.json) is when it holds the
        text given back (the first edit's copy of the original) or a text a journal copy records as
        written by this module.
      - Roles run it after the engine was restarted on the given-back file, so that the copies a
        rollback would need are kept until then.
    type: bool
    default: false
notes:
  - Files are touched at O(host_root) joined with their host path; the paths written into
    C(daemon.json) are host paths and never contain O(host_root).
  - The file's mode and owner are kept; a new C(daemon.json) gets mode C(0644).
  - dockerd reads a runtime's arguments from C(runtimeArgs) and ignores C(args); the empty C(args)
    is written only to match what NVIDIA's tools write. An existing C(runtimeArgs) is kept.
  - dockerd refuses an empty C(daemon.json); this module treats an empty file as an empty object,
    and O(state=absent) gives its bytes back as they were.
seealso:
  - module: gpu_node.container_toolkit.containerd_runtime
  - module: gpu_node.container_toolkit.toolkit_install
"""

EXAMPLES = r"""
---
- name: Register the nvidia runtimes in Docker and enable CDI
  gpu_node.container_toolkit.docker_runtime:
    enable_cdi: true
    backup: true
  register: docker_edit

- name: Restart Docker only when daemon.json changed
  ansible.builtin.service:
    name: docker
    state: restarted
  when: docker_edit.restart_required

- name: Make nvidia Docker's default runtime (COS with Docker, toolkit under /home/kubernetes/bin/nvidia)
  gpu_node.container_toolkit.docker_runtime:
    install_dir: /home/kubernetes/bin/nvidia/toolkit
    set_as_default: true

- name: Remove the runtimes again and give daemon.json back as it was
  gpu_node.container_toolkit.docker_runtime:
    state: absent
"""

RETURN = r"""
changed:
  description: Whether a file was (or, in check mode, would be) written or removed.
  returned: always
  type: bool
  sample: true
restart_required:
  description: True when C(daemon.json) was written and means something else now; restart dockerd.
  returned: always
  type: bool
  sample: true
path:
  description: Host path of the file that was edited (a symlink's target).
  returned: always
  type: str
  sample: /etc/docker/daemon.json
journal:
  description: Host path of the journal kept for O(state=absent).
  returned: always
  type: str
  sample: /etc/docker/.daemon.json.gpu_node.container_toolkit.json
changes:
  description:
    - What this run changed (or, in check mode, would have), one entry per difference.
    - A setting that differed is V(updated) on its file (V(created) when the file was missing), named in C(setting).
    - A file or directory removed by O(state=absent) is V(removed) (the journal too; a directory this
      module created, V(kept) when it is not empty), and so is each copy O(remove_backups) removes.
    - Before this release each entry was a line in words; the entries are now of the shape every module
      of the collection returns, the words kept in C(setting) and C(reason).
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The host path of the file or directory.
      type: str
      sample: /etc/docker/daemon.json
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
      sample: "missing (added, path /usr/local/nvidia/toolkit/nvidia-container-runtime)"
  sample:
    - path: /etc/docker/daemon.json
      action: updated
      setting: runtime nvidia
      reason: "missing (added, path /usr/local/nvidia/toolkit/nvidia-container-runtime)"
    - {path: /etc/docker/daemon.json, action: updated, setting: features.cdi, reason: "unset -> true"}
warnings:
  description: Things left as they are, and why.
  returned: when there is something to warn about
  type: list
  elements: str
  sample: ["/etc/docker/daemon.json: runtimes.nvidia was changed since this module set it; kept as it is now"]
symlinks:
  description: A line naming the target that was edited, when O(path) is a symlink.
  returned: when O(path) is a symlink
  type: list
  elements: str
  sample: ["/etc/docker/daemon.json is a symlink; edited its target /var/lib/docker-config/daemon.json"]
backup_file:
  description: Host path of the backup copy of RV(path).
  returned: when O(backup=true) and RV(path) was replaced
  type: str
  sample: /etc/docker/daemon.json.12345.2024-01-01@10:00:00~
backup_files:
  description:
    - Each file this run wrote (RV(path), RV(journal)), mapped to the host path of its backup copy, or
      to null when the file did not exist before (this run created it; to roll back, remove it).
  returned: when O(backup=true) and a file was written
  type: dict
  sample:
    /etc/docker/daemon.json: /etc/docker/daemon.json.1.2024-01-01@10:00:00~
    /etc/docker/.daemon.json.gpu_node.container_toolkit.json: null
removed_backups:
  description: Host paths of the copies O(remove_backups=true) removed (would remove, in check mode).
  returned: when O(remove_backups=true) and O(state=absent) (empty when there was none)
  type: list
  elements: str
  sample: [/etc/docker/daemon.json.12345.2024-01-01@10:00:00~]
removed_dirs:
  description:
    - O(state=absent) - the directories this module created for the file it removed, and removed
      again because they were empty. Empty in check mode.
  returned: when O(state=absent) removed a file this module created
  type: list
  elements: str
  sample: [/etc/docker]
"""

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.action_module import action_only_main


def main():
    action_only_main(argument_specs.docker_runtime())


if __name__ == "__main__":
    main()
