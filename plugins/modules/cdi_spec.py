#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: cdi_spec
short_description: Generate, write and remove CDI specs for the NVIDIA driver on a node
version_added: 0.1.0
description:
  - Builds a Container Device Interface (CDI) spec from the node's real driver root and device
    root, as found by M(gpu_node.container_toolkit.nvidia_driver_info), and writes it on the node.
  - Driver files are found under O(driver_root) and device nodes under O(dev_root), independently.
    On Container-Optimized OS the driver lives under V(/home/kubernetes/bin/nvidia) while the
    device nodes are in the host's C(/dev); both V(auto) defaults find them.
  - The spec mounts every driver library, binary, firmware file, Vulkan/EGL/GLX config file and
    existing IPC socket, sets C(NVIDIA_VISIBLE_DEVICES=void), and adds the C(create-symlinks),
    C(enable-cuda-compat) and C(update-ldcache) C(createContainer) hooks.
  - The C(cdiVersion) is the lowest version the content needs.
  - YAML specs start with a comment that records the driver version, driver root and device root
    they were built from. After a driver upgrade the file names and hook arguments change, so a
    re-run rewrites the spec; RV(previous_driver_version) tells what it was built from.
  - Runs on the node with Python's standard library only.
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
  - gpu_node.container_toolkit.node.DRIVER
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The diff shows the spec file's text before and after.
  safe_file_operations:
    support: full
  idempotent:
    support: full
  platform:
    platforms: posix
options:
  state:
    description:
      - V(present) writes the spec; V(absent) removes the file at O(path).
      - A YAML spec records in its header (a C(created_dirs) comment line) the directories that writing this
        collection's specs there created (C(/var/run/cdi) on a node that had none); the other specs of
        this collection in the same directory record them too. V(absent) removes them, each only when
        it is empty, so the last spec to go takes them. A JSON spec has no comments and records none, so
        its directories stay.
    type: str
    choices: [present, absent]
    default: present
  mode:
    description:
      - V(management) writes kind C(management.nvidia.com/gpu) with one device, C(all), that holds
        every NVIDIA device node under O(dev_root) (not C(nvidia-fs*), C(nvidia-nvswitch*) or
        C(nvidia-nvlink*)); for management containers such as device plugins and monitoring agents.
      - V(gpu) writes kind C(nvidia.com/gpu) with one device per GPU, under each name of
        O(device_name_strategy), its MIG instances when capability nodes exist, and an C(all) device
        unless O(all_device=false). The control nodes (C(nvidiactl), C(nvidia-uvm),
        C(nvidia-uvm-tools), C(nvidia-modeset)) go into the spec-level edits.
    type: str
    choices: [management, gpu]
    default: management
  device_name_strategy:
    description:
      - How GPUs are named in O(mode=gpu). V(index) gives C(0), V(uuid) C(GPU-...), V(type-index)
        C(gpu0). Each GPU gets one device per strategy.
      - MIG instances are named C(<gpu>:<gi>) (V(index)) or C(mig<gpu>:<gi>) (V(type-index)); they
        have no V(uuid) name, since MIG UUIDs are known only to NVML.
    type: list
    elements: str
    choices: [index, uuid, type-index]
    default: [index, uuid]
  vendor:
    description:
      - Vendor part of the spec's kind. Defaults to V(management.nvidia.com) for O(mode=management)
        and V(nvidia.com) for O(mode=gpu).
      - It needs at least two characters, a letter first, then letters, digits, C(_), C(-) and
        C(.), and a letter or digit last. Anything else is an error, since container runtimes skip
        a spec with a bad kind and then only report C(unresolvable CDI devices).
    type: str
  class:
    description:
      - Class part of the spec's kind, under the same rules as O(vendor). A class with a C(.) needs
        C(cdiVersion) 0.6.0, which older consumers (such as podman 4) reject.
    type: str
    default: gpu
  devices:
    description:
      - In O(mode=gpu), only these GPUs, each given by index (V(0)), C(gpuN) or UUID. An unknown GPU
        is an error. Default is every GPU.
      - Setting it with O(mode=management) is an error, since that spec has the one device C(all).
    type: list
    elements: str
  all_device:
    description:
      - In O(mode=gpu), whether to add the C(all) device holding every selected GPU.
    type: bool
    default: true
  path:
    description:
      - Host path of the spec file.
      - Defaults to V(/var/run/cdi/management.nvidia.com-gpu.yaml) for O(mode=management) and
        V(/etc/cdi/nvidia.yaml) for O(mode=gpu) (with other O(vendor) or O(class),
        C(<vendor>-<class>.yaml) in the same directory).
      - A path outside V(/etc/cdi), V(/var/run/cdi) and V(/run/cdi) draws a warning, since container
        runtimes do not read it by default. On Container-Optimized OS C(/etc) and C(/var/run) are
        tmpfs, so re-apply the spec at boot.
    type: path
  format:
    description:
      - V(yaml) or V(json). Default from the extension of O(path) (C(.json) is JSON, anything else YAML).
    type: str
    choices: [yaml, json]
  hook_path:
    description:
      - Host path of the hook binary the spec's hooks run, C(nvidia-cdi-hook) or C(nvidia-ctk).
        With C(nvidia-ctk) the hook arguments start with C(nvidia-ctk hook).
      - On GKE's Container-Optimized OS use V(/home/kubernetes/bin/nvidia/toolkit/nvidia-cdi-hook).
    type: path
    default: /usr/local/nvidia/toolkit/nvidia-cdi-hook
  container_driver_root:
    description:
      - Where driver files appear inside containers. By default a file's container path is its host
        path with O(driver_root) stripped (C(/home/kubernetes/bin/nvidia/lib64/libcuda.so.X) becomes
        C(/lib64/libcuda.so.X)); with V(/usr/local/nvidia) (GKE's convention) it becomes
        C(/usr/local/nvidia/lib64/libcuda.so.X).
      - Firmware and config files kept directly under a driver root that is not a full filesystem
        (COS's C(firmware/), C(vulkan/) and C(share/)) go where their readers look, in
        C(/lib/firmware/nvidia/<version>/), C(/etc/vulkan/), C(/usr/share/nvidia/). IPC sockets keep
        their host path (less a driver container's root).
    type: str
  ldconfig_path:
    description:
      - Host path of C(ldconfig), passed to the C(update-ldcache) hook as C(--ldconfig-path).
        Never C(<driver_root>/sbin/ldconfig) when O(driver_root) is not a full filesystem.
    type: str
  disable_hooks:
    description:
      - Hooks to leave out; V(all) leaves out every hook.
    type: list
    elements: str
    choices: [create-symlinks, enable-cuda-compat, update-ldcache, all]
    default: []
notes:
  - Discovery warnings (a damaged library, an unreadable GPU file, a library without a SONAME, a
    dangling link; see M(gpu_node.container_toolkit.nvidia_driver_info)) become task warnings.
  - A O(driver_root) that is a symlink is followed inside O(host_root). The spec's host paths stay
    under O(driver_root) as named and its container paths are those paths with O(driver_root)
    stripped (or re-rooted under O(container_driver_root)), so the spec is the same as for the
    link's target.
  - The module fails, and writes nothing, when the user-space libraries under O(driver_root) are of
    another version than the loaded kernel module (C(kernel module 550.54.15, libraries 535.104.12
    found under ...)). Every container given such a spec would fail, since CUDA and NVML refuse a
    driver/library version mismatch. This is usually a driver upgrade whose reboot is pending;
    reboot or reload the kernel module, then run again. There is no override. When libraries of the
    kernel module's version are there too, they are used and the others ignored. When the kernel
    module is not loaded there is nothing to compare; without device nodes the failure then says
    that the kernel module is not loaded.
  - Another spec file in C(/etc/cdi), C(/var/run/cdi) or C(/run/cdi) that declares the same kind
    draws a warning. Container runtimes drop a device defined in two specs of one directory, and
    prefer C(/var/run/cdi) over C(/etc/cdi), so the new spec might not be used.
  - The file is written with mode C(0644); its directory is created when missing.
  - Symlinks in the directory part of O(path) are followed inside O(host_root), as the node
    resolves them (C(/var/run) is usually a link to C(/run)). A symlink at O(path) itself is
    replaced by a regular file, with a warning; O(state=absent) removes the link, not its target.
seealso:
  - module: gpu_node.container_toolkit.nvidia_driver_info
  - name: Container Device Interface specification
    description: The format of the files this module writes.
    link: https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md
"""

EXAMPLES = r"""
---
- name: Management spec on GKE's Container-Optimized OS
  gpu_node.container_toolkit.cdi_spec:
    mode: management
    hook_path: /home/kubernetes/bin/nvidia/toolkit/nvidia-cdi-hook

- name: One device per GPU, named by index and UUID, in /etc/cdi/nvidia.yaml
  gpu_node.container_toolkit.cdi_spec:
    mode: gpu
  register: cdi

- name: Show the devices
  ansible.builtin.debug:
    var: cdi.devices

- name: Only GPU 0, with driver files under /usr/local/nvidia in containers, as JSON
  gpu_node.container_toolkit.cdi_spec:
    mode: gpu
    devices: ["0"]
    container_driver_root: /usr/local/nvidia
    path: /etc/cdi/nvidia-gpu0.json

- name: Remove the management spec
  gpu_node.container_toolkit.cdi_spec:
    mode: management
    state: absent
"""

RETURN = r"""
removed_dirs:
  description: O(state=absent) - the directories recorded as created for this collection's specs that were empty and removed.
  returned: when O(state=absent) removed a spec (not in check mode)
  type: list
  elements: str
  sample: [/var/run/cdi]
path:
  description: Host path of the spec file.
  returned: always
  type: str
  sample: /var/run/cdi/management.nvidia.com-gpu.yaml
format:
  description: The file's format.
  returned: when O(state=present)
  type: str
  sample: yaml
kind:
  description: The spec's kind.
  returned: when O(state=present)
  type: str
  sample: management.nvidia.com/gpu
cdi_version:
  description: The spec's C(cdiVersion), the lowest its content needs.
  returned: when O(state=present)
  type: str
  sample: 0.5.0
devices:
  description: Fully qualified names of the spec's devices, as given to C(--device).
  returned: when O(state=present)
  type: list
  elements: str
  sample: [nvidia.com/gpu=0, nvidia.com/gpu=GPU-5a9e4a0c-4e4f-0d34-2b4c-3a9d6c1d2e3f, nvidia.com/gpu=all]
driver_version:
  description: The driver version the spec was built from.
  returned: when O(state=present)
  type: str
  sample: 535.104.12
previous_driver_version:
  description: The driver version the file on the node was built from, or null when there was none or it does not say.
  returned: always
  type: str
  sample: 535.86.10
driver_root:
  description: Host path of the driver files the spec mounts.
  returned: when O(state=present)
  type: str
  sample: /home/kubernetes/bin/nvidia
dev_root:
  description: Host path under which the spec's device nodes were found.
  returned: when O(state=present)
  type: str
  sample: /
searched:
  description: Host paths where C(libcuda.so.*) was looked for, when none was found.
  returned: on failure, when no libcuda was found
  type: list
  elements: str
  sample: [/home/kubernetes/bin/nvidia/lib64/libcuda.so.*, /home/kubernetes/bin/nvidia/etc/ld.so.cache]
looked_for:
  description: Host path patterns where NVIDIA device nodes were looked for, when none was found.
  returned: on failure, when no device nodes were found
  type: list
  elements: str
  sample: [/dev/nvidia*, /dev/nvidia-caps/*, /dev/nvidia-caps-imex-channels/*]
spec:
  description: The spec as data.
  returned: when O(state=present)
  type: dict
  sample: {cdiVersion: 0.3.0, kind: management.nvidia.com/gpu, devices: [{name: all, containerEdits: {}}]}
"""

import os
import posixpath
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi, discovery, node_model

FILE_MODE = 0o644


def argument_spec():
    spec = node_model.node_argument_spec(driver=True)
    spec.update(
        state={"type": "str", "choices": ["present", "absent"], "default": "present"},
        mode={"type": "str", "choices": list(cdi.MODES), "default": "management"},
        device_name_strategy={"type": "list", "elements": "str", "choices": list(cdi.NAME_STRATEGIES),
                              "default": ["index", "uuid"]},
        vendor={"type": "str"},
        devices={"type": "list", "elements": "str"},
        all_device={"type": "bool", "default": True},
        path={"type": "path"},
        format={"type": "str", "choices": ["yaml", "json"]},
        hook_path={"type": "path", "default": cdi.DEFAULT_HOOK_PATH},
        container_driver_root={"type": "str"},
        ldconfig_path={"type": "str"},
        disable_hooks={"type": "list", "elements": "str", "choices": list(cdi.HOOKS) + ["all"], "default": []},
    )
    spec["class"] = {"type": "str", "default": cdi.DEFAULT_CLASS}
    return spec


def spec_file_on_node(module, host_root, path):
    """Where the spec file is on this machine, and where a link there points (or None).

    With a host_root other than ``/``, symlinks in the directory part are resolved inside it, as
    the node itself would resolve them: ``/var/run`` is usually an absolute link to ``/run``, which
    must not lead to this machine's own ``/run``. The file itself is managed as a regular file: a
    link in its place is replaced.
    """
    directory, name = posixpath.split(path)
    if node_model.normalize_host_path(host_root) == "/":
        on_node = path
        link_target = path if os.path.islink(path) else None
        return on_node, link_target
    try:
        directory = discovery.resolve_in_root(host_root, directory)
        on_node = node_model.node_path(host_root, posixpath.join(directory, name))
        link_target = None
        if os.path.islink(on_node):
            link_target = node_model.node_path(host_root, discovery.resolve_in_root(host_root, path))
    except (discovery.DiscoveryError, OSError) as exc:
        module.fail_json(msg="cannot resolve %s under host_root %s: %s" % (path, host_root, to_native(exc)))
    return on_node, link_target


def other_specs(host_root, on_node):
    """``{host path: text}`` of the other spec files in the directories CDI consumers read."""
    found = {}
    seen_dirs = set()
    own = os.path.realpath(on_node)
    for directory in cdi.SPEC_DIRS:
        try:
            resolved = discovery.resolve_in_root(host_root, directory)
            names = os.listdir(node_model.node_path(host_root, resolved))
        except (discovery.DiscoveryError, OSError):
            continue
        if resolved in seen_dirs:  # /var/run is usually a link to /run
            continue
        seen_dirs.add(resolved)
        for name in sorted(names):
            if not name.endswith(cdi.SPEC_SUFFIXES):
                continue
            full = node_model.node_path(host_root, posixpath.join(resolved, name))
            if os.path.realpath(full) == own:
                continue
            try:
                with open(full, "rb") as handle:
                    found[posixpath.join(directory, name)] = to_text(handle.read(), errors="surrogate_or_replace")
            except OSError:
                continue
    return found


def read_existing(module, on_node):
    try:
        with open(on_node, "rb") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        module.fail_json(msg="cannot read %s: %s" % (on_node, to_native(exc)))


def dirs_to_make(host_root, on_node):
    """Host paths of the directories writing ``on_node`` creates, outermost first."""
    missing = []
    current = os.path.dirname(on_node)
    root = os.path.normpath(node_model.node_path(host_root, "/"))
    while current != root and not os.path.lexists(current):
        missing.append(node_model.host_path_of(host_root, current))
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return list(reversed(missing))


def sibling_records(on_node):
    """What the other specs of this collection next to ``on_node`` record as created directories."""
    directory, own = os.path.split(on_node)
    records = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return records
    for name in names:
        if name == own or not name.endswith(cdi.SPEC_SUFFIXES):
            continue
        try:
            with open(os.path.join(directory, name), "rb") as handle:
                head = to_text(handle.read(4096), errors="surrogate_or_replace")
        except OSError:
            continue
        records.append(cdi.recorded_created_dirs(head))
    return records


def remove_empty_dirs(host_root, dirs):
    """rmdir each of ``dirs`` (host paths), deepest first, when it is empty; the ones removed."""
    removed = []
    for directory in sorted(dirs, key=lambda d: (-d.count("/"), d)):
        try:
            os.rmdir(node_model.node_path(host_root, directory))
        except OSError:
            continue  # not empty, not there, or not ours to force
        removed.append(directory)
    return removed


def write_atomically(module, on_node, data):
    directory = os.path.dirname(on_node)
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(on_node) + ".")
    except OSError as exc:
        module.fail_json(msg="cannot write in %s: %s" % (directory, to_native(exc)))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # a crash must leave the old spec or the whole new one
        os.chmod(tmp, FILE_MODE)
        module.atomic_move(tmp, on_node)
        os.chmod(on_node, FILE_MODE)
    except OSError as exc:
        module.fail_json(msg="cannot write %s: %s" % (on_node, to_native(exc)))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    mode = params["mode"]
    try:
        path = node_model.normalize_host_path(params["path"] or cdi.default_path(mode, params["vendor"],
                                                                                 params["class"]))
    except cdi.CdiError as exc:
        module.fail_json(msg=str(exc))
    on_node, link_target = spec_file_on_node(module, params["host_root"], path)
    if not cdi.in_spec_dir(path):
        module.warn("%s is outside %s: container runtimes do not read CDI specs there by default"
                    % (path, ", ".join(cdi.SPEC_DIRS)))
    if link_target is not None:
        module.warn("%s is a symlink: it is replaced by a regular file" % path)
    existing = read_existing(module, link_target or on_node)
    before_text = to_text(existing, errors="surrogate_or_replace") if existing is not None else ""
    result = {"changed": False, "path": path, "previous_driver_version": cdi.recorded_driver_version(before_text)}

    if params["state"] == "absent":
        if existing is not None or link_target is not None:
            result["changed"] = True
            # The diff is always returned; Ansible shows it only with --diff.
            result["diff"] = {"before": before_text, "after": "", "before_header": path, "after_header": path}
            if not module.check_mode:
                try:
                    os.unlink(on_node)
                except OSError as exc:
                    module.fail_json(msg="cannot remove %s: %s" % (on_node, to_native(exc)), **result)
                # The directories made for this collection's specs go with the last of them.
                result["removed_dirs"] = remove_empty_dirs(params["host_root"], cdi.recorded_created_dirs(before_text))
        module.exit_json(**result)

    try:
        facts = discovery.discover_node(params["host_root"], params["driver_root"], params["dev_root"],
                                        params["library_search_paths"])
    except discovery.DiscoveryError as exc:
        module.fail_json(msg=str(exc), **dict(result, **exc.details))
    for warning in facts.pop("warnings"):
        module.warn(warning)
    fmt = params["format"] or cdi.format_from_path(path)
    try:
        spec = cdi.build_spec(
            facts, mode=mode, device_name_strategy=params["device_name_strategy"], vendor=params["vendor"],
            cls=params["class"], devices=params["devices"], all_device=params["all_device"],
            hook_path=params["hook_path"], container_driver_root=params["container_driver_root"],
            ldconfig_path=params["ldconfig_path"], disable_hooks=params["disable_hooks"],
        )
    except cdi.CdiError as exc:
        module.fail_json(msg=str(exc), **dict(result, **exc.details))
    for warning in cdi.same_kind_warnings(path, spec["kind"], other_specs(params["host_root"], on_node)):
        module.warn(warning)
    spec_dir = node_model.host_path_of(params["host_root"], os.path.dirname(on_node))
    created_dirs = cdi.created_dirs_for(spec_dir, dirs_to_make(params["host_root"], on_node),
                                        cdi.recorded_created_dirs(before_text), sibling_records(on_node))
    text = cdi.render(spec, fmt, facts, created_dirs)
    data = to_bytes(text)
    result.update(
        format=fmt, kind=spec["kind"], cdi_version=spec["cdiVersion"], devices=cdi.qualified_names(spec),
        driver_version=facts["driver_version"], driver_root=facts["driver_root"], dev_root=facts["dev_root"],
        spec=spec,
    )
    if existing != data or link_target is not None:
        result["changed"] = True
        # The diff is always returned; Ansible shows it only with --diff.
        result["diff"] = {"before": before_text, "after": text, "before_header": path, "after_header": path}
        if not module.check_mode:
            write_atomically(module, on_node, data)
    elif (os.stat(on_node).st_mode & 0o7777) != FILE_MODE:
        result["changed"] = True
        # The diff is always returned; Ansible shows it only with --diff.
        result["diff"] = {"before": {"mode": "%04o" % (os.stat(on_node).st_mode & 0o7777)},
                          "after": {"mode": "%04o" % FILE_MODE}}
        if not module.check_mode:
            os.chmod(on_node, FILE_MODE)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
