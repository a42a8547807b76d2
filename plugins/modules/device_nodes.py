#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: device_nodes
short_description: Create missing NVIDIA control device nodes
version_added: 0.1.0
description:
  - Creates whichever of C(nvidiactl) (minor 255), C(nvidia-modeset) (minor 254), C(nvidia-uvm)
    (minor 0) and C(nvidia-uvm-tools) (minor 1) are missing under C(<dev_root>/dev), as character
    devices with mode C(0666).
  - O(dev_root) means what it means for M(gpu_node.container_toolkit.nvidia_driver_info), and V(auto)
    is resolved the same way; RV(dev_root) says what it resolved to. O(driver_root) and
    O(library_search_paths) are used only for that.
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
  - gpu_node.container_toolkit.node.DRIVER
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
      A temporary node left by a killed run is removed by the next.
  idempotent:
    support: full
options:
  nodes:
    description:
      - V(control) creates the missing control nodes.
      - V(none) does nothing, like the upstream installer's empty C(CREATE_DEVICE_NODES).
    type: str
    choices: [control, none]
    default: control
  char_links:
    description:
      - Also make C(/dev/char/<major>:<minor>) a link to each NVIDIA device node (C(nvidia*),
        C(nvidia-caps/*), C(nvidia-caps-imex-channels/*) under C(<dev_root>/dev)), as NVIDIA's
        C(nvidia-ctk system create-dev-char-symlinks) does. udev makes these links only for devices it
        knows, and the NVIDIA nodes are not among them; runc's systemd cgroup driver finds devices through
        them, so without them containers lose their GPUs after C(systemctl daemon-reload)
        (C(Failed to initialize NVML), an unknown error).
      - The links are relative (C(../nvidia0)) in the host's C(/dev), and name the node's host path when
        O(dev_root) is elsewhere. A link to somewhere else is replaced; anything that is not a link is
        left alone, with a warning. Like the nodes, the links are not removed again.
    type: bool
    default: false
  fix:
    description:
      - Replace an existing node whose type or major/minor numbers are wrong, and correct its
        mode.
      - Without it such nodes are only reported in RV(wrong).
    type: bool
    default: false
notes:
  - Creating device nodes needs root (C(CAP_MKNOD)).
  - With O(dev_root=auto) and O(driver_root=auto), a node with no driver root found (no C(libcuda.so.*)
    in any candidate) gets its control nodes in the host's C(/dev); the kernel side can be there
    before the user-space files are.
  - A driver container whose own C(dev/nvidiactl) is the node missing is not recognised by
    O(dev_root=auto), which then means the host's C(/dev); set O(dev_root) to the driver container's root.
  - Symlinks in C(<dev_root>/dev) and above it are followed inside O(host_root).
  - The module holds the node's lock (an C(flock) on O(host_root)) from looking at the nodes to making
    them. A second run on the same node waits up to 60 seconds for it, then fails naming the process
    that holds it.
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

- name: Show what was created or fixed
  ansible.builtin.debug:
    var: nodes.changes

- name: A driver container's device nodes, under its root
  gpu_node.container_toolkit.device_nodes:
    dev_root: /run/nvidia/driver
"""

RETURN = r"""
changes:
  description:
    - Each node created, replaced (wrong type or numbers, with O(fix=true)) or given the right mode
      (or, in check mode, that would be), in the order of RV(nodes); then, with O(char_links=true), the
      C(/dev/char) directory when it was made, and each link created or replaced.
    - RV(created) and RV(fixed) say the same in the older words for the nodes; they are kept for one release.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: Host path of the node, link or directory.
      type: str
      sample: /dev/nvidiactl
    action:
      description: What happened to it.
      type: str
      choices: [created, replaced, mode_changed]
      sample: created
  sample:
    - {path: /dev/nvidiactl, action: created}
dev_root:
  description: Host path under which the nodes were looked for, O(dev_root=auto) resolved.
  returned: unless O(nodes=none)
  type: str
  sample: /
dev_root_source:
  description: How RV(dev_root) was chosen.
  returned: unless O(nodes=none)
  type: str
  sample: host /dev (driver_root has no dev/nvidiactl)
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
char_links:
  description: With O(char_links=true), each C(/dev/char) link considered, with the action taken.
  returned: success
  type: list
  elements: dict
  sample:
    - path: /dev/char/195:255
      target: ../nvidiactl
      action: create
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

import posixpath

from ansible.module_utils.basic import AnsibleModule

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import (
    dev_char,
    device_nodes,
    discovery,
    node_fs,
    node_model,
    procfs,
)
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change


def argument_spec():
    return dict(
        node_model.node_argument_spec(driver=True),
        nodes={"type": "str", "choices": ["control", "none"], "default": "control"},
        fix={"type": "bool", "default": False},
        char_links={"type": "bool", "default": False},
    )


def wanted(module, node):
    """The control nodes to have, from /proc/devices' majors."""
    host_root = module.params["host_root"]
    try:
        text = node.read_text(node.resolve("/proc/devices"))
    except node_fs.NodeFsError as exc:
        module.fail_json(msg="cannot read /proc/devices under host_root %s: %s" % (host_root, exc))
    if text is None:
        module.fail_json(msg="cannot read /proc/devices under host_root %s: it does not exist. Is host_root the "
                             "node's / (with its /proc)?" % host_root)
    try:
        nodes, skipped = device_nodes.wanted_nodes(procfs.parse_devices(text), module.params["nodes"])
    except procfs.ProcFormatError as exc:
        module.fail_json(msg="cannot parse /proc/devices under host_root %s: %s" % (host_root, exc))
    except device_nodes.KernelModuleNotLoaded as exc:
        module.fail_json(msg="%s (read /proc/devices under host_root %s). Load the driver, or set nodes=none."
                             % (exc, host_root))
    for line in skipped:
        module.warn(line)
    return nodes


def dev_dir_of(module, node, result):
    """``(dev dir as named, where it really is)``, both host paths; dev_root auto resolved as
    nvidia_driver_info resolves it."""
    params = module.params
    if params["dev_root"] == "auto":
        try:
            dev_root, source = discovery.auto_dev_root(params["host_root"], params["driver_root"],
                                                       params["library_search_paths"])
        except discovery.DiscoveryError as exc:
            module.fail_json(msg="dev_root auto: %s" % exc, **result)
    else:
        dev_root, source = node_model.normalize_host_path(params["dev_root"]), "set by the dev_root option"
    result.update(dev_root=dev_root, dev_root_source=source)
    dev_dir = node_model.join_host(dev_root, "dev")
    real = node.resolve(dev_dir)
    if not node.is_dir(real):
        module.fail_json(msg="%s does not exist under host_root %s: set dev_root to the host path whose dev/ "
                             "holds the NVIDIA device nodes (usually /)" % (dev_dir, params["host_root"]), **result)
    return dev_dir, real


def converge(module, node, result):
    params = module.params
    nodes = wanted(module, node)
    dev_dir, real_dir = dev_dir_of(module, node, result)
    found = {n["name"]: node.observe(posixpath.join(real_dir, n["name"])) for n in nodes}
    before_lines = []
    after_lines = []
    for step in device_nodes.plan(nodes, found):
        host_path = node_model.join_host(dev_dir, step["name"])
        action = step["action"]
        will_change = action == "create" or (params["fix"] and action in ("replace", "chmod"))
        before_lines.append("%s: %s" % (host_path, step["found"]))
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
        if not module.check_mode:
            target = posixpath.join(real_dir, step["name"])
            try:
                if action == "chmod":
                    node.chmod(target, step["mode"])
                else:
                    node.mknod(target, "char", step["major"], step["minor"], step["mode"], owner=(0, 0))
            except node_fs.NodeFsError as exc:
                module.fail_json(msg="%s; %s was left as it was" % (exc, host_path), **result)
        result["changed"] = True
        result["created" if action == "create" else "fixed"].append(host_path)
        result["changes"].append(change(host_path, device_nodes.CHANGE_ACTIONS[action]))
    if params["char_links"]:
        converge_char_links(module, node, dev_dir, real_dir, nodes, result, before_lines, after_lines)
    # The diff is always returned; Ansible shows it only with --diff.
    result["diff"] = node_fs.text_diff(dev_dir, "\n".join(before_lines) + "\n", dev_dir, "\n".join(after_lines) + "\n")


def converge_char_links(module, node, dev_dir, real_dir, planned, result, before_lines, after_lines):
    """/dev/char/<major>:<minor> for every NVIDIA device node (module_utils/dev_char)."""
    try:
        links = dev_char.converge(node, dev_dir, real_dir, planned, module.check_mode)
    except node_fs.NodeFsError as exc:
        module.fail_json(msg="%s; /dev/char was left as it was" % exc, **result)
    for warning in links["warnings"]:
        module.warn(warning)
    before_lines.extend(links["before"])
    after_lines.extend(links["after"])
    result["char_links"] = links["steps"]
    result["changes"].extend(links["changes"])
    result["changed"] = result["changed"] or bool(links["changes"])


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    result = {"changed": False, "changes": [], "created": [], "fixed": [], "wrong": [], "nodes": [], "char_links": []}
    if module.params["nodes"] == "none":
        module.exit_json(**result)
    node = node_fs.NodeRoot(module.params["host_root"])
    try:
        with node.locked():
            converge(module, node, result)
    except node_fs.NodeFsError as exc:
        module.fail_json(msg=str(exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
