#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

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
  - C(create-symlinks) makes each library's SONAME link and, as NVIDIA's own generator does, the
    names applications C(dlopen) - C(libcuda.so) and C(libnvidia-opticalflow.so) (to their SONAMEs
    C(libcuda.so.1) and C(libnvidia-opticalflow.so.1)) and C(libGLX_indirect.so.0) (to
    C(libGLX_nvidia.so.0)); the list is C(COMPAT_LINKS) in the collection's C(module_utils/cdi.py).
    These are made whether or not the host has them. Every other C(libX.so) development link the host
    has for a library (C(libnvidia-ml.so), C(libnvcuvid.so), C(libnvidia-encode.so), see
    M(gpu_node.container_toolkit.nvidia_driver_info)'s C(dev_links)) is made too, to the library's
    SONAME, beside the library in the container, wherever in the searched directories the host has it.
  - Libraries in the driver's C(vdpau/) folders (C(libvdpau_nvidia.so.<version>)) are mounted and
    linked like the others, and each C(vdpau/) folder is passed to C(update-ldcache) as a
    C(--folder), as NVIDIA's generator does. On Debian, whose C(libvdpau_nvidia) lives in
    C(nvidia/current/) and is reached through an alternatives link in C(vdpau/), that link is made in
    the container too, to the library's container path, since C(libvdpau) loads its drivers from
    C(vdpau/) by path.
  - Where this differs from NVIDIA's generator on purpose, it adds - Vulkan, EGL and
    application-profile files (in both modes; NVIDIA's management spec has none), the GSP firmware of
    COS's C(firmware/), Debian's C(vdpau/libvdpau_nvidia.so.1) link and C(vdpau/) folder, NvAPI's
    C(libnvidia-api.so.1), and each library's SONAME link even where the host lacks it (NVIDIA's
    generator makes SONAME and C(libX.so) links only where the host has them beside the library) -
    and leaves out libraries of another driver version than the one used
    (M(gpu_node.container_toolkit.nvidia_driver_info)'s C(skipped_libraries), with a warning).
  - C(libGLX_indirect.so.0) points at the SONAME C(libGLX_nvidia.so.0), not at the versioned file as
    in NVIDIA's generator - the same library, through its SONAME link, as libglvnd's own links do.
  - Container paths are the host paths with the driver root stripped, as NVIDIA's generator makes
    them. On a merged-C(/usr) node libraries keep their real C(/usr/lib/...) path, binaries their
    C(/usr/bin) path, and the GSP firmware the kernel's C(/lib/firmware/nvidia/<version>/) path (where
    NVIDIA's generator looks for it too); on COS the firmware in the driver root's C(firmware/) goes
    to C(/lib/firmware/), where NVIDIA's generator does not look.
  - Checked on the real files of Debian's driver packages (535 and 550), laid out as Debian, GKE's COS
    and NVIDIA's driver container install them, and consumed by podman.
  - The C(cdiVersion) is the lowest version the content needs.
  - YAML specs start with a comment that records the driver version, driver root and device root
    they were built from. After a driver upgrade the file names and hook arguments change, so a
    re-run rewrites the spec; RV(previous_driver_version) tells what it was built from.
  - Runs on the node with Python's standard library only. With O(read_ahead) from the look that
    starts a run, its action plugin builds the spec on the controller from the look's driver facts
    and, when the file on the node already holds exactly it, answers without running on the node.
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
  - gpu_node.container_toolkit.node.DRIVER
  - gpu_node.container_toolkit.node.READ_AHEAD
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
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
  spec_mode:
    description:
      - Which spec to write. V(management) writes kind C(management.nvidia.com/gpu) with one device, C(all), that holds
        every NVIDIA device node under O(dev_root) (not C(nvidia-fs*), C(nvidia-nvswitch*) or
        C(nvidia-nvlink*)); for management containers such as device plugins and monitoring agents.
      - V(gpu) writes kind C(nvidia.com/gpu) with one device per GPU, under each name of
        O(device_name_strategy), its MIG instances when capability nodes exist, and an C(all) device
        unless O(all_device=false). The control nodes (C(nvidiactl), C(nvidia-uvm),
        C(nvidia-uvm-tools), C(nvidia-modeset)) go into the spec-level edits.
      - O(mode) is its former name (after C(nvidia-ctk cdi generate --mode)), kept as an alias
        (elsewhere in Ansible C(mode) means file permissions).
    type: str
    choices: [management, gpu]
    default: management
    aliases: [mode]
  device_name_strategy:
    description:
      - How GPUs are named in O(spec_mode=gpu). V(index) gives C(0), V(uuid) C(GPU-...), V(type-index)
        C(gpu0). Each GPU gets one device per strategy.
      - MIG instances are named C(<gpu>:<gi>) (V(index)) or C(mig<gpu>:<gi>) (V(type-index)); they
        have no V(uuid) name, since MIG UUIDs are known only to NVML.
    type: list
    elements: str
    choices: [index, uuid, type-index]
    default: [index, uuid]
  vendor:
    description:
      - Vendor part of the spec's kind. Defaults to V(management.nvidia.com) for O(spec_mode=management)
        and V(nvidia.com) for O(spec_mode=gpu).
      - It needs at least two characters, a letter first, then letters, digits, C(_), C(-) and
        C(.), and a letter or digit last. Anything else is an error, since container runtimes skip
        a spec with a bad kind and then only report C(unresolvable CDI devices).
    type: str
  device_class:
    description:
      - Class part of the spec's kind, under the same rules as O(vendor). A class with a C(.) needs
        C(cdiVersion) 0.6.0, which older consumers (such as podman 4) reject.
      - O(class) is its former name, kept as an alias (C(class) is a Python keyword).
    type: str
    default: gpu
    aliases: [class]
  devices:
    description:
      - In O(spec_mode=gpu), only these GPUs, each given by index (V(0)), C(gpuN) or UUID. An unknown GPU
        is an error. Default is every GPU.
      - Setting it with O(spec_mode=management) is an error, since that spec has the one device C(all).
    type: list
    elements: str
  all_device:
    description:
      - In O(spec_mode=gpu), whether to add the C(all) device holding every selected GPU.
    type: bool
    default: true
  path:
    description:
      - Host path of the spec file.
      - Defaults to V(/var/run/cdi/management.nvidia.com-gpu.yaml) for O(spec_mode=management) and
        V(/etc/cdi/nvidia.yaml) for O(spec_mode=gpu) (with other O(vendor) or O(device_class),
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
  - The module holds the node's lock (an C(flock) on O(host_root)) from reading the spec to writing it.
    A second run on the same node waits up to 60 seconds for it, then fails naming the process that holds it.
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
    spec_mode: management
    hook_path: /home/kubernetes/bin/nvidia/toolkit/nvidia-cdi-hook

- name: One device per GPU, named by index and UUID, in /etc/cdi/nvidia.yaml
  gpu_node.container_toolkit.cdi_spec:
    spec_mode: gpu
  register: cdi

- name: Show the devices
  ansible.builtin.debug:
    var: cdi.devices

- name: Only GPU 0, with driver files under /usr/local/nvidia in containers, as JSON
  gpu_node.container_toolkit.cdi_spec:
    spec_mode: gpu
    devices: ["0"]
    container_driver_root: /usr/local/nvidia
    path: /etc/cdi/nvidia-gpu0.json

- name: Remove the management spec
  gpu_node.container_toolkit.cdi_spec:
    spec_mode: management
    state: absent
"""

RETURN = r"""
changes:
  description:
    - Each path this run created, updated, replaced (a symlink at O(path) by the spec file),
      removed or changed the mode of (or, in check mode, would have), in that order.
    - RV(removed_dirs) is kept for one release; the same directories are here with V(removed).
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The host path.
      type: str
      sample: /var/run/cdi/management.nvidia.com-gpu.yaml
    action:
      description: What happened to it.
      type: str
      choices: [created, updated, replaced, mode_changed, removed]
      sample: created
  sample:
    - {path: /var/run/cdi, action: created}
    - {path: /var/run/cdi/management.nvidia.com-gpu.yaml, action: created}
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

from ansible.module_utils.basic import AnsibleModule

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import (
    cdi,
    cdi_files,
    node_fs,
    node_model,
)


def main():
    module = AnsibleModule(argument_spec=cdi_files.argument_spec(), supports_check_mode=True)
    params = module.params
    try:
        path = node_model.normalize_host_path(
            params["path"] or cdi.default_path(params["spec_mode"], params["vendor"], params["device_class"]))
    except cdi.CdiError as exc:
        module.fail_json(msg=str(exc))
    run = cdi_files.Run(node_fs.NodeRoot(params["host_root"]), params, module.check_mode)
    try:
        with run.node.locked():
            result = cdi_files.converge(run, path)
    except cdi_files.CdiFileError as exc:
        for warning in run.warnings:
            module.warn(warning)
        module.fail_json(msg=str(exc), **exc.details)
    except node_fs.NodeFsError as exc:
        module.fail_json(msg=str(exc), path=path)
    for warning in run.warnings:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
