#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: persist_files
short_description: Keep what provisioning wrote where it survives a reboot (Container-Optimized OS)
version_added: 0.2.0
description:
  - On Container-Optimized OS C(/etc) and C(/var/run) are tmpfs and GKE writes containerd's
    configuration again at every boot. This module keeps, in one call, copies of what provisioning
    wrote in a directory that survives (under the toolkit's install dir), together with the
    files given in O(files) (the re-apply script, its unit, a driver version stamp).
  - The containerd configuration is kept as C(containerd-provisioned.toml) and, when it holds this
    collection's edits, the configuration they started from as C(containerd-base.toml). The base is
    given back from the edit journal in the provisioned file, so it is right even on a run that
    changed nothing, and needs no read before the edit.
  - Each CDI spec in O(cdi_specs) is kept as C(cdi/<host path>).
  - Files in O(dir) that nothing asks for any more (a spec no longer written) are removed.
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
attributes:
  check_mode:
    support: full
    details:
      - Reports every file it would write. A source that does not exist yet, because the run that
        writes it is in check mode too, counts as a change.
  diff_mode:
    support: full
    details: Text before and after for each kept file.
  safe_file_operations:
    support: full
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
  description: One line per file created, updated, re-moded or removed, as C(<action> <name>).
  returned: always
  type: list
  elements: str
  sample: [create containerd-provisioned.toml, update cdi/var/run/cdi/management.nvidia.com-gpu.yaml]
"""

import os
import shutil
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal, node_model, persistence


def read_bytes(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def current_files(directory):
    found = {}
    for top, dirs, names in os.walk(directory):
        dirs.sort()
        for name in names:
            path = os.path.join(top, name)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                found[os.path.relpath(path, directory)] = (read_bytes(path), stat.S_IMODE(info.st_mode))
    return found


def write_atomically(path, data, mode):
    directory = os.path.dirname(path)
    os.makedirs(directory, 0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def text_of(data):
    return None if data is None else data.decode("utf-8", "replace")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            node_model.node_argument_spec(),
            dir={"type": "str", "required": True},
            containerd_config={"type": "str"},
            cdi_specs={"type": "list", "elements": "str"},
            files={"type": "dict", "default": {}},
            executables={"type": "list", "elements": "str", "default": []},
            state={"type": "str", "default": "present", "choices": ["present", "absent"]},
        ),
        supports_check_mode=True,
    )
    params = module.params
    host_root = params["host_root"]
    kept = node_model.normalize_host_path(params["dir"])
    directory = node_model.node_path(host_root, kept)
    result = {"changed": False, "dir": kept, "changes": [], "diff": []}
    if os.path.lexists(directory) and not os.path.isdir(directory):
        module.fail_json(msg="%s exists and is not a directory; move it away so the copies kept across reboots "
                             "can go there" % kept, **result)
    current = current_files(directory) if os.path.isdir(directory) else {}

    if params["state"] == "absent":
        if os.path.isdir(directory):
            result["changes"] = ["remove %s" % name for name in sorted(current)]
            result["changed"] = True
            result["diff"] = [{"before_header": os.path.join(kept, name), "after_header": os.path.join(kept, name),
                               "before": text_of(data), "after": ""} for name, (data, _mode) in sorted(current.items())]
            if not module.check_mode:
                shutil.rmtree(directory)
        module.exit_json(**result)

    for name in params["files"]:
        if not persistence.is_plain_name(name):
            module.fail_json(msg="files: %r is not a relative name inside %s (no '..', not absolute); nothing was "
                                 "kept" % (name, kept), **result)
    pending = []
    config_text = None
    config_path = ""
    if params["containerd_config"]:
        config_path = node_model.normalize_host_path(params["containerd_config"])
        data = read_bytes(node_model.node_path(host_root, config_path))
        config_text = text_of(data)
    specs = {}
    for spec in params["cdi_specs"] or []:
        spec_path = node_model.normalize_host_path(spec)
        data = read_bytes(node_model.node_path(host_root, spec_path))
        if data is None:
            if not module.check_mode:
                module.fail_json(msg="the CDI spec %s does not exist, so there is nothing to keep; write it first "
                                     "(cdi_spec) or leave it out of cdi_specs" % spec_path, **result)
            pending.append(persistence.spec_copy_name(spec_path))
            continue
        specs[spec_path] = data
    try:
        wanted = persistence.wanted_files(config_text, config_path, specs, params["files"], params["executables"])
    except edit_journal.JournalError as exc:
        module.fail_json(msg="%s; nothing was kept" % exc, **result)
    if params["cdi_specs"] is None:
        wanted.update((name, found) for name, found in current.items()
                      if name.startswith(persistence.SPEC_DIR + "/"))
    # A spec that the same check-mode run would write: its copy would change, contents unknown yet.
    for name in pending:
        wanted[name] = current.get(name, (None, persistence.FILE_MODE))
    steps = persistence.plan(wanted, current)
    steps += [(name, "update") for name in pending if name in current]
    for name, action in sorted(steps):
        path = os.path.join(directory, name)
        before = current.get(name, (None, None))[0]
        after = wanted.get(name, (None, None))[0]
        result["changes"].append("%s %s" % (action, name))
        if action != "chmod":
            result["diff"].append({"before_header": os.path.join(kept, name), "after_header": os.path.join(kept, name),
                                   "before": text_of(before) or "",
                                   "after": "(written by this run)\n" if name in pending else text_of(after) or ""})
        if module.check_mode:
            continue
        try:
            if action == "remove":
                os.unlink(path)
            elif action == "chmod":
                os.chmod(path, wanted[name][1])
            else:
                write_atomically(path, after, wanted[name][1])
        except OSError as exc:
            module.fail_json(msg="cannot %s %s in %s: %s" % (action, name, kept, to_native(exc)), **result)
    if not module.check_mode:
        for top, _dirs, _names in os.walk(directory, topdown=False):
            if top != directory and not os.listdir(top):
                os.rmdir(top)
    result["changed"] = bool(steps)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
