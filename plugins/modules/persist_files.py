#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: persist_files
short_description: Keep what provisioning wrote where it survives a reboot (Container-Optimized OS)
version_added: 0.2.0
description:
  - On Container-Optimized OS C(/etc) and C(/var/run) are tmpfs and GKE writes the container engine's
    configuration again at every boot. This module keeps, in one call, copies of what provisioning
    wrote in a directory that survives (under the toolkit's install dir), together with the
    files given in O(files) (the re-apply script, its unit, a driver version stamp).
  - The containerd configuration is kept as C(containerd-provisioned.toml) and, when it holds this
    collection's edits, the configuration they started from as C(containerd-base.toml). The base is
    given back from the edit journal in the provisioned file, so it is right even on a run that
    changed nothing, and needs no read before the edit.
  - Docker's C(daemon.json) (older GKE images) is kept as C(docker-provisioned.json). When
    M(gpu_node.container_toolkit.docker_runtime) edited it, its journal (the hidden file next to
    C(daemon.json)) is kept as C(docker-journal.json) (mode C(0600), as that module writes it), and the
    configuration the first edit started from, the journal's copy of it, as C(docker-base.json), or
    C(docker-base.missing) when that module created the file.
  - Each CDI spec in O(cdi_specs) is kept as C(cdi/<host path>).
  - Files in O(dir) that nothing asks for any more (a spec no longer written) are removed.
  - Symlinks in O(dir), O(containerd_config), O(docker_config) and O(cdi_specs) are followed inside
    O(host_root), as the node resolves them. Links inside O(dir) are not kept files and are left alone.
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
  - gpu_node.container_toolkit.node.READ_AHEAD
attributes:
  check_mode:
    support: full
    details:
      - Reports every file it would write. A source that does not exist yet, because the run that
        writes it is in check mode too, counts as a change.
  diff_mode:
    support: full
    details:
      - Text before and after for each kept file. A file over 16 KiB or with a NUL byte (the
        C(gpu-node-cdi) program is about 150 KB) is shown as its size and SHA-256 instead.
  safe_file_operations:
    support: full
    details: A temporary file left by a killed run is removed by the next one and is not reported.
  idempotent:
    support: full
  platform:
    platforms: posix
options:
  dir:
    description: Host path of the directory kept across reboots. It is created when missing.
    type: str
    required: true
  containerd_config:
    description: Host path of containerd's configuration as provisioning left it; not kept when omitted or missing.
    type: str
  docker_config:
    description:
      - Host path of Docker's C(daemon.json) as provisioning left it; not kept when omitted or missing.
      - Its journal is read from the same directory, where M(gpu_node.container_toolkit.docker_runtime)
        keeps it. A journal that is damaged fails the module, and nothing is kept.
    type: str
  cdi_specs:
    description:
      - Host paths of the CDI specs to keep; copies of other specs are removed.
      - When omitted, the spec copies already kept are left as they are (a run that did not
        write specs, such as one limited with C(--tags containerd)).
    type: list
    elements: str
  files:
    description: More files to keep, name in O(dir) to text.
    type: dict
    default: {}
  executables:
    description: Names in O(files) written with mode C(0755); the others get C(0644).
    type: list
    elements: str
    default: []
  state:
    description: V(absent) removes O(dir) and everything in it.
    type: str
    choices: [present, absent]
    default: present
notes:
  - The module holds the node's lock (an C(flock) on O(host_root)) from reading the files to writing
    the copies. A second run on the same node waits up to 60 seconds for it, then fails naming the
    process that holds it.
  - A write that fails (a full disk, a read-only O(dir)) leaves that copy as it was; RV(changes) in
    the failure lists the ones made before it.
seealso:
  - module: gpu_node.container_toolkit.containerd_runtime
  - module: gpu_node.container_toolkit.cdi_spec
"""

EXAMPLES = r"""
---
- name: Keep the containerd config, the CDI spec and the boot script on a COS node
  gpu_node.container_toolkit.persist_files:
    dir: /home/kubernetes/bin/nvidia/toolkit/.gpu-node
    containerd_config: /etc/containerd/config.toml
    cdi_specs: [/var/run/cdi/management.nvidia.com-gpu.yaml]
    files:
      driver-version: "535.104.12\n"
      reapply.sh: "{{ lookup('ansible.builtin.template', 'reapply.sh.j2') }}"
    executables: [reapply.sh]

- name: Keep Docker's daemon.json on a COS node that runs Docker
  gpu_node.container_toolkit.persist_files:
    dir: /home/kubernetes/bin/nvidia/toolkit/.gpu-node
    docker_config: /etc/docker/daemon.json
    files:
      reapply.sh: "{{ lookup('ansible.builtin.template', 'reapply.sh.j2') }}"
    executables: [reapply.sh]

- name: Remove the copies
  gpu_node.container_toolkit.persist_files:
    dir: /home/kubernetes/bin/nvidia/toolkit/.gpu-node
    state: absent
"""

RETURN = r"""
dir:
  description: Host path of the kept directory.
  returned: always
  type: str
  sample: /home/kubernetes/bin/nvidia/toolkit/.gpu-node
changes:
  description:
    - Each path this run created, updated, changed the mode of or removed (or, in check mode, would
      have) - the kept files, and the directories made for them or left empty by them. With
      O(state=absent), every kept file and then O(dir) itself.
    - Before this release each entry was a line C(<action> <name>); the entries are now of the shape
      every module of the collection returns.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The host path.
      type: str
      sample: /home/kubernetes/bin/nvidia/toolkit/.gpu-node/containerd-provisioned.toml
    action:
      description: What happened to it.
      type: str
      choices: [created, updated, mode_changed, removed]
      sample: created
  sample:
    - path: /home/kubernetes/bin/nvidia/toolkit/.gpu-node/containerd-provisioned.toml
      action: created
    - path: /home/kubernetes/bin/nvidia/toolkit/.gpu-node/cdi/var/run/cdi/management.nvidia.com-gpu.yaml
      action: updated
"""

import posixpath

from ansible.module_utils.basic import AnsibleModule

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import (
    argument_specs,
    docker_config,
    edit_journal,
    node_fs,
    node_model,
    node_reads,
    persistence,
)
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change

PENDING_TEXT = "(written by this run)\n"


def text_of(data):
    return None if data is None else data.decode("utf-8", "replace")


def read_source(node, host_path):
    """The bytes of a file to keep (links resolved inside host_root), or None when it is not there."""
    return node.read_bytes(node.resolve(host_path))


def remove_all(module, node, kept, real_dir, result):
    """state=absent: the kept directory and everything in it."""
    if not node.is_dir(real_dir):
        return
    current, _subdirs = node_reads.tree_files(node, real_dir)
    names = sorted(current)
    if not module.check_mode:
        node.remove_tree(real_dir)
    result["changed"] = True
    result["changes"] = [change(posixpath.join(kept, name), "removed") for name in names]
    result["changes"].append(change(kept, "removed"))
    result["diff"] = [node_fs.text_diff(posixpath.join(kept, name), persistence.diff_text(current[name][0]),
                                        posixpath.join(kept, name), None) for name in names]


def wanted_files(module, node, kept, current):
    """``(wanted, pending)``: what the kept dir must hold, and the spec copies whose source the same
    check-mode run would write."""
    params = module.params
    for name in params["files"]:
        if not persistence.is_plain_name(name):
            module.fail_json(msg="files: %r is not a relative name inside %s (no '..', not absolute); nothing was "
                                 "kept" % (name, kept), changed=False, dir=kept, changes=[], diff=[])
    config_text = None
    config_path = ""
    if params["containerd_config"]:
        config_path = node_model.normalize_host_path(params["containerd_config"])
        config_text = text_of(read_source(node, config_path))
    docker_data = docker_journal_text = None
    docker_journal = ""
    if params["docker_config"]:
        docker_path = node_model.normalize_host_path(params["docker_config"])
        docker_journal = docker_config.journal_path(docker_path)
        docker_data = read_source(node, docker_path)
        docker_journal_text = text_of(read_source(node, docker_journal))
    specs = {}
    pending = []
    for spec in params["cdi_specs"] or []:
        spec_path = node_model.normalize_host_path(spec)
        data = read_source(node, spec_path)
        if data is None:
            if not module.check_mode:
                module.fail_json(msg="the CDI spec %s does not exist, so there is nothing to keep; write it first "
                                     "(cdi_spec) or leave it out of cdi_specs" % spec_path,
                                 changed=False, dir=kept, changes=[], diff=[])
            pending.append(persistence.spec_copy_name(spec_path))
            continue
        specs[spec_path] = data
    try:
        wanted = persistence.wanted_files(config_text, config_path, specs, params["files"], params["executables"],
                                          docker_data, docker_journal_text, docker_journal)
    except (edit_journal.JournalError, docker_config.ConfigError) as exc:
        module.fail_json(msg="%s; nothing was kept" % exc, changed=False, dir=kept, changes=[], diff=[])
    if params["cdi_specs"] is None:
        wanted.update((name, found) for name, found in current.items()
                      if name.startswith(persistence.SPEC_DIR + "/"))
    # A spec that the same check-mode run would write: its copy would change, contents unknown yet.
    for name in pending:
        wanted[name] = current.get(name, (None, persistence.FILE_MODE))
    return wanted, pending


def keep(module, node, kept, real_dir, result):
    """state=present: bring the kept directory to what it must hold."""

    def named(real):
        """A host path under the kept dir as it really is, re-expressed under the dir as named."""
        return kept + real[len(real_dir):] if real == real_dir or real.startswith(real_dir + "/") else real

    current, subdirs = node_reads.tree_files(node, real_dir) if node.is_dir(real_dir) else ({}, [])
    wanted, pending = wanted_files(module, node, kept, current)
    steps = persistence.plan(wanted, current)
    steps += [(name, "update") for name in pending if name in current]
    for name, action in sorted(steps):
        host_path = posixpath.join(kept, name)
        target = posixpath.join(real_dir, name)
        after = wanted.get(name, (None, None))[0]
        made = []
        if action == "create":
            made = [named(d) for d in node.missing_dirs(posixpath.dirname(target))]
            made = [d for d in made if change(d, "created") not in result["changes"]]
        if not module.check_mode:
            try:
                if action == "remove":
                    node.remove(target)
                elif action == "chmod":
                    node.chmod(target, wanted[name][1])
                else:
                    node.make_dirs(posixpath.dirname(target))
                    node.write(target, after, mode=wanted[name][1])
            except node_fs.NodeFsError as exc:
                # The changes listed were made; this one and the ones after it were not.
                module.fail_json(msg="%s; %s was left as it was" % (exc, host_path), **result)
        result["changed"] = True
        if action != "chmod":  # a mode has no text to show
            before = current.get(name, (None, None))[0]
            result["diff"].append(node_fs.text_diff(
                host_path, persistence.diff_text(before), host_path,
                PENDING_TEXT if name in pending else persistence.diff_text(after) if action != "remove" else None))
        result["changes"].extend(change(d, "created") for d in made)
        result["changes"].append(change(host_path, persistence.CHANGE_ACTIONS[action]))
    if not module.check_mode:
        removed = node.remove_empty_dirs(subdirs)
        result["changes"].extend(change(named(d), "removed") for d in removed)
        for directory in [real_dir] + subdirs:
            if directory not in removed:
                node.remove_stale_temps(directory)


def main():
    module = AnsibleModule(argument_spec=argument_specs.persist_files(), supports_check_mode=True)
    params = module.params
    kept = node_model.normalize_host_path(params["dir"])
    node = node_fs.NodeRoot(params["host_root"])
    result = {"changed": False, "dir": kept, "changes": [], "diff": []}
    try:
        with node.locked():
            real_dir = node.resolve(kept)
            if node.exists(real_dir) and not node.is_dir(real_dir):
                module.fail_json(msg="%s exists and is not a directory; move it away so the copies kept across "
                                     "reboots can go there" % kept, **result)
            if params["state"] == "absent":
                remove_all(module, node, kept, real_dir, result)
            else:
                keep(module, node, kept, real_dir, result)
    except node_fs.NodeFsError as exc:
        module.fail_json(msg=str(exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
