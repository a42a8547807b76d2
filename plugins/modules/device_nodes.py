#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: device_nodes
short_description: Create missing NVIDIA control device nodes
version_added: 0.1.0
description:
  - Creates whichever of C(nvidiactl) (minor 255), C(nvidia-modeset) (minor 254), C(nvidia-uvm)
    (minor 0) and C(nvidia-uvm-tools) (minor 1) are missing under C(<dev_root>/dev), as character
    devices with mode C(0666).
  - The majors come from C(<host_root>/proc/devices) - C(nvidia), or C(nvidia-frontend) on drivers
    before 550, and C(nvidia-uvm). A node whose major is absent because its kernel module is not
    loaded is skipped with a warning.
  - An existing node with the wrong type, numbers or mode is reported in RV(wrong) and, with
    O(fix=true), replaced. Directories and symbolic links are never replaced.
  - The per-GPU nodes C(nvidia0), C(nvidia1), ... are made by the kernel module and its helpers,
    not by this module.
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
attributes:
  platform:
    platforms: posix
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The diff lists each control node as it is and as it will be.
  safe_file_operations:
    support: full
    details: A node is made under a temporary name in the same directory and renamed into place.
  idempotent:
    support: full
options:
  dev_root:
    description:
      - Host path under which C(dev/nvidia*) live.
      - Usually V(/). Use the driver container's root (for example V(/run/nvidia/driver)) only
        when the device nodes live there.
    type: path
    default: /
  nodes:
    description:
      - V(control) creates the missing control nodes.
      - V(none) does nothing, like the upstream installer's empty C(CREATE_DEVICE_NODES).
    type: str
    choices: [control, none]
    default: control
  fix:
    description:
      - Replace an existing node whose type or major/minor numbers are wrong, and correct its
        mode.
      - Without it such nodes are only reported in RV(wrong).
    type: bool
    default: false
notes:
  - Creating device nodes needs root (C(CAP_MKNOD)).
seealso:
  - module: gpu_node.container_toolkit.nvidia_driver_info
"""

EXAMPLES = r"""
---
- name: Create missing NVIDIA control device nodes in the host's /dev
  gpu_node.container_toolkit.device_nodes:
  become: true

- name: Also repair nodes with the wrong numbers, seen from a container that mounts the host at /host
  gpu_node.container_toolkit.device_nodes:
    host_root: /host
    fix: true
  register: nodes

- name: Show what was created
  ansible.builtin.debug:
    var: nodes.created
"""

RETURN = r"""
created:
  description: Host paths of the nodes created (or, in check mode, that would be).
  returned: success
  type: list
  elements: str
  sample: [/dev/nvidiactl]
fixed:
  description: Host paths of wrong nodes replaced or re-moded because of O(fix=true).
  returned: success
  type: list
  elements: str
  sample: [/dev/nvidia-uvm]
wrong:
  description: Existing nodes that differ from what they should be, whether or not they were fixed.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: Host path of the node.
      type: str
      sample: /dev/nvidia-uvm
    found:
      description: What is there.
      type: str
      sample: char 195:0 0666
    want:
      description: What should be there.
      type: str
      sample: char 509:0 0666
    reason:
      description: How they differ.
      type: str
      sample: is 195:0, not 509:0
  sample:
    - path: /dev/nvidia-uvm
      found: char 195:0 0666
      want: char 509:0 0666
      reason: is 195:0, not 509:0
nodes:
  description: Every control node considered, with the action taken.
  returned: success
  type: list
  elements: dict
  sample:
    - path: /dev/nvidiactl
      major: 195
      minor: 255
      action: create
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import device_nodes, node_model, procfs


def observe(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    mode = st.st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return {"type": "char" if stat.S_ISCHR(mode) else "block", "major": os.major(st.st_rdev),
                "minor": os.minor(st.st_rdev), "mode": stat.S_IMODE(mode)}
    kinds = ((stat.S_ISLNK, "symlink"), (stat.S_ISDIR, "directory"), (stat.S_ISREG, "regular file"))
    for test, name in kinds:
        if test(mode):
            return {"type": name}
    return {"type": "special file"}


def make_node(path, major, minor, mode):
    """mknod under a temporary name next to ``path``, then rename over it."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, ".%s.tmp-%d" % (name, os.getpid()))
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.mknod(tmp, stat.S_IFCHR | mode, os.makedev(major, minor))
    try:
        os.chmod(tmp, mode)  # mknod applies the umask
        if os.geteuid() == 0:
            os.lchown(tmp, 0, 0)
        os.rename(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main():
    spec = node_model.node_argument_spec()
    spec.update(
        dev_root={"type": "path", "default": "/"},
        nodes={"type": "str", "choices": ["control", "none"], "default": "control"},
        fix={"type": "bool", "default": False},
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params
    host_root = params["host_root"]
    dev_root = node_model.normalize_host_path(params["dev_root"])
    result = {"changed": False, "created": [], "fixed": [], "wrong": [], "nodes": []}
    if params["nodes"] == "none":
        module.exit_json(**result)

    devices_path = node_model.node_path(host_root, "/proc/devices")
    try:
        with open(devices_path, encoding="utf-8", errors="replace") as handle:
            devices = procfs.parse_devices(handle.read())
    except OSError as exc:
        module.fail_json(msg="cannot read /proc/devices under host_root %s (%s): %s" % (host_root, devices_path, exc))
    except procfs.ProcFormatError as exc:
        module.fail_json(msg="cannot parse %s: %s" % (devices_path, exc))
    try:
        wanted, skipped = device_nodes.wanted_nodes(devices, params["nodes"])
    except device_nodes.KernelModuleNotLoaded as exc:
        module.fail_json(msg="%s (read %s). Load the driver, or set nodes=none." % (exc, devices_path))
    for line in skipped:
        module.warn(line)

    dev_dir = node_model.join_host(dev_root, "dev")
    dev_dir_on_node = node_model.node_path(host_root, dev_dir)
    if not os.path.isdir(dev_dir_on_node):
        module.fail_json(msg="%s does not exist under host_root %s: set dev_root to the host path whose dev/ "
                             "holds the NVIDIA device nodes" % (dev_dir, host_root))

    found = {}
    for node in wanted:
        found[node["name"]] = observe(os.path.join(dev_dir_on_node, node["name"]))
    steps = device_nodes.plan(wanted, found)

    before_lines = []
    after_lines = []
    for step in steps:
        host_path = node_model.join_host(dev_dir, step["name"])
        action = step["action"]
        before_lines.append("%s: %s" % (host_path, step["found"]))
        will_change = action == "create" or (params["fix"] and action in ("replace", "chmod"))
        after_lines.append("%s: %s" % (host_path, step["want"] if will_change else step["found"]))
        result["nodes"].append({"path": host_path, "major": step["major"], "minor": step["minor"],
                                "action": action if action in ("create", "ok", "refuse") or params["fix"] else "report"})
        if action in ("replace", "chmod", "refuse"):
            result["wrong"].append({"path": host_path, "found": step["found"], "want": step["want"],
                                    "reason": step["reason"]})
            if action == "refuse":
                module.warn("%s %s; left alone" % (host_path, step["reason"]))
        if not will_change:
            continue
        result["changed"] = True
        result["created" if action == "create" else "fixed"].append(host_path)
        if module.check_mode:
            continue
        path = node_model.node_path(host_root, host_path)
        try:
            if action == "chmod":
                os.chmod(path, step["mode"])
            else:
                make_node(path, step["major"], step["minor"], step["mode"])
        except OSError as exc:
            module.fail_json(msg="cannot create %s (at %s): %s" % (host_path, path, exc), **result)
    # The diff is always returned; Ansible shows it only with --diff.
    result["diff"] = {"before_header": dev_dir, "after_header": dev_dir,
                      "before": "\n".join(before_lines) + "\n", "after": "\n".join(after_lines) + "\n"}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
