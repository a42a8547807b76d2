#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: nvidia_driver_info
short_description: Discover the NVIDIA driver, GPUs and device nodes on a node
version_added: 0.1.0
description:
  - Finds the driver's root, version, libraries (with their ELF SONAME), binaries, firmware,
    configuration files and IPC sockets, the GPUs the kernel module knows about, and the
    NVIDIA device nodes.
  - Reads files only, with Python's standard library; no NVML, no C(nvidia-smi), no package
    manager. It works on Container-Optimized OS, whose driver lives under
    V(/home/kubernetes/bin/nvidia) while its device nodes are in the host's C(/dev).
  - GPUs come from C(/proc/driver/nvidia/gpus/*/information).
  - Every path returned is a host path; O(host_root) never appears in the result.
  - Symlinks are resolved inside O(host_root), as the node itself resolves them, never on the machine
    running the module. A driver root that is a symlink (V(/run/nvidia/driver) to
    C(/var/lib/nvidia-driver), or COS's relative C(../../../var/lib/nvidia)) is followed there, but
    the paths returned stay under RV(driver_root) as named, so that container paths computed from
    them (M(gpu_node.container_toolkit.cdi_spec)) do not depend on the link; RV(driver_root_resolved)
    says where it leads.
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
    details: The module only reads files.
  diff_mode:
    support: N/A
    details: The module changes nothing.
  safe_file_operations:
    support: N/A
    details: The module writes no files.
  idempotent:
    support: full
  platform:
    platforms: posix
notes:
  - A library that is not a readable ELF file, a damaged C(ld.so.cache) or a garbled GPU
    C(information) file is skipped with a warning.
  - Problems that leave the facts usable are warnings, with the long lists in the result; a
    O(driver_root) that does not exist or is a regular file is a failure.
  - The warnings are for driver libraries without an ELF SONAME (containers get no SONAME link for
    them; for C(libcuda) no C(libcuda.so.1)); dangling links in the library directories (see
    RV(dangling_links)); user-space libraries of another version than the loaded kernel module
    (C(kernel module 550.54.15, libraries 535.104.12 found under ...)), see RV(library_version);
    libraries of other driver versions beside those used (RV(skipped_libraries));
    a kernel module that is not loaded; and a O(dev_root) that is missing, not a directory, or holds
    no NVIDIA device nodes.
seealso:
  - module: gpu_node.container_toolkit.cdi_spec
  - module: gpu_node.container_toolkit.node_info
    description: The same facts, with the files the gpu_node role's later steps read.
"""

EXAMPLES = r"""
---
- name: Discover the driver on the node
  gpu_node.container_toolkit.nvidia_driver_info:
  register: nvidia

- name: Show the driver version and GPU UUIDs
  ansible.builtin.debug:
    msg: "{{ nvidia.driver_version }}: {{ nvidia.gpus | map(attribute='uuid') | list }}"

- name: Look at a node whose root is mounted at /host (from a privileged container)
  gpu_node.container_toolkit.nvidia_driver_info:
    host_root: /host

- name: GKE on Container-Optimized OS, explicitly
  gpu_node.container_toolkit.nvidia_driver_info:
    driver_root: /home/kubernetes/bin/nvidia
    dev_root: /
"""

RETURN = r"""
driver_root:
  description:
    - Host path of the driver's user-space files, as named by O(driver_root) or auto-detection,
      even when it is a symlink. Every driver file path in the result is under it.
  returned: success
  type: str
  sample: /home/kubernetes/bin/nvidia
driver_root_resolved:
  description:
    - Where RV(driver_root) really is, its symlinks resolved inside O(host_root); equal to
      RV(driver_root) when no link is involved.
  returned: success
  type: str
  sample: /var/lib/nvidia
driver_root_source:
  description: How RV(driver_root) was chosen.
  returned: success
  type: str
  sample: "auto: first of /run/nvidia/driver, /home/kubernetes/bin/nvidia, /var/lib/nvidia, / holding libcuda.so.*"
dev_root:
  description: Host path under which C(dev/nvidia*) live.
  returned: success
  type: str
  sample: /
dev_root_source:
  description: How RV(dev_root) was chosen.
  returned: success
  type: str
  sample: host /dev (driver_root has no dev/nvidiactl)
driver_version:
  description:
    - The driver version, that of the loaded kernel module (C(/proc/driver/nvidia/version)) when
      there is one, else that of the libraries.
  returned: success
  type: str
  sample: 535.104.12
library_version:
  description:
    - The version of the user-space libraries found under RV(driver_root), from the
      C(libcuda.so.<version>) (else C(libnvidia-ml.so.<version>)) file names; the kernel module's
      version when libraries of it are there, else the newest. Null when none was found.
    - When it differs from RV(driver_version) containers given these libraries fail, and the
      module warns; M(gpu_node.container_toolkit.cdi_spec) refuses to write a spec.
  returned: success
  type: str
  sample: 535.104.12
driver_version_source:
  description: Where RV(driver_version) was read, C(/proc/driver/nvidia/version) or a library's file name.
  returned: success
  type: str
  sample: /proc/driver/nvidia/version
searched:
  description: Host paths where C(libcuda.so.*) was looked for, when no driver was found.
  returned: on failure, when no driver was found
  type: list
  elements: str
  sample: [/usr/lib/x86_64-linux-gnu/libcuda.so.*, /etc/ld.so.cache]
library_search_paths:
  description: The directories, relative to RV(driver_root), that were searched.
  returned: success
  type: list
  elements: str
  sample: [lib64, usr/lib64, usr/lib/x86_64-linux-gnu]
libraries:
  description:
    - Driver libraries (C(lib*.so.<library_version>)) found in the search paths, in the driver's
      own subfolders of them (C(vdpau/) of each, and C(nvidia/current/) of a multiarch directory
      such as C(usr/lib/x86_64-linux-gnu), where Debian keeps the real files) and in
      C(<driver_root>/etc/ld.so.cache), with their ELF SONAME. Each is the real file (SONAME
      links followed), as a host path under RV(driver_root).
    - Also the driver's libraries whose file name carries their own version instead of the
      driver's - the EGL platform libraries (C(libnvidia-egl-wayland.so.1.1.13)) and NvAPI's
      C(libnvidia-api.so.1), which applications load by that name. NVIDIA's own generator takes
      C(libnvidia-api.so.1) only with its C(enable-explicit-driver-libraries) feature flag.
  returned: success
  type: list
  elements: dict
  sample: [{path: /home/kubernetes/bin/nvidia/lib64/libcuda.so.535.104.12, soname: libcuda.so.1}]
  contains:
    path:
      description: Host path of the library file.
      type: str
    soname:
      description: The library's ELF SONAME, or null when it has none.
      type: str
dev_links:
  description:
    - The development links (C(libX.so), such as C(libnvidia-ml.so)) found in the searched
      directories that lead to one of RV(libraries); M(gpu_node.container_toolkit.cdi_spec) makes
      each of them, to the library's SONAME, beside the library in containers.
  returned: success
  type: list
  elements: dict
  sample: [{path: /home/kubernetes/bin/nvidia/lib64/libcuda.so, library: /home/kubernetes/bin/nvidia/lib64/libcuda.so.535.104.12}]
  contains:
    path:
      description: Host path of the link.
      type: str
    library:
      description: Host path of the library it leads to, as in RV(libraries).
      type: str
vdpau_links:
  description:
    - Links in a C(vdpau/) folder to a library kept elsewhere (Debian's
      C(/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.1), an alternatives link to
      C(nvidia/current/)). C(libvdpau) loads its drivers from that folder by path, so
      M(gpu_node.container_toolkit.cdi_spec) makes the link in containers too.
  returned: success
  type: list
  elements: dict
  sample: [{path: /usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.1, library: /usr/lib/x86_64-linux-gnu/nvidia/current/libvdpau_nvidia.so.535.261.03}]
  contains:
    path:
      description: Host path of the link.
      type: str
    library:
      description: Host path of the library it leads to, as in RV(libraries).
      type: str
skipped_libraries:
  description:
    - Driver libraries of another driver version than RV(library_version) in the searched
      directories (an upgrade or removal that did not finish), which are left out of RV(libraries)
      and of CDI specs; a warning names the first few.
  returned: success
  type: list
  elements: dict
  sample: [{path: /home/kubernetes/bin/nvidia/lib64/libcuda.so.530.30.02, version: 530.30.02}]
  contains:
    path:
      description: Host path of the library file.
      type: str
    version:
      description: The driver version its file name carries.
      type: str
dangling_links:
  description: Links in the driver's library directories whose target is missing (a warning lists the first few).
  returned: success
  type: list
  elements: dict
  sample: [{path: /home/kubernetes/bin/nvidia/lib64/libcuda.so.1, target: libcuda.so.530.30.02}]
  contains:
    path:
      description: Host path of the link, under RV(driver_root).
      type: str
    target:
      description: What the link says it points to.
      type: str
binaries:
  description:
    - Host paths of the driver's utilities that exist, looked for in C(usr/bin), C(bin), C(usr/sbin)
      and C(sbin) under RV(driver_root), in that order. On a merged-C(/usr) node (C(/bin) a link to
      C(usr/bin)) that is the C(/usr) path the packages give them (C(/usr/bin/nvidia-smi)), which
      containers then see too.
  returned: success
  type: list
  elements: str
  sample: [/home/kubernetes/bin/nvidia/bin/nvidia-smi]
firmware:
  description: Host paths of the GSP firmware files for this driver version.
  returned: success
  type: list
  elements: str
  sample: [/home/kubernetes/bin/nvidia/firmware/nvidia/535.104.12/gsp_ga10x.bin]
config_files:
  description: Host paths of the driver's Vulkan, EGL and GLX configuration files.
  returned: success
  type: list
  elements: str
  sample: [/home/kubernetes/bin/nvidia/vulkan/icd.d/nvidia_icd.json]
ipc_sockets:
  description: Host paths of the persistenced and fabric manager sockets and the MPS directory that exist.
  returned: success
  type: list
  elements: str
  sample: [/run/nvidia-persistenced/socket]
gpus:
  description: The GPUs, ordered by PCI bus id, from C(/proc/driver/nvidia/gpus/*/information).
  returned: success
  type: list
  elements: dict
  sample: [{index: 0, uuid: GPU-5a9e4a0c-4e4f-0d34-2b4c-3a9d6c1d2e3f, pci_bus_id: "0000:00:04.0", minor: 0, model: Tesla T4}]
  contains:
    index:
      description: Position in PCI bus order, as C(nvidia-smi) numbers GPUs.
      type: int
    uuid:
      description: The GPU's UUID.
      type: str
    pci_bus_id:
      description: PCI bus location, lower case.
      type: str
    minor:
      description: Minor number of the GPU's C(/dev/nvidiaN) node.
      type: int
    model:
      description: Model name.
      type: str
device_nodes:
  description:
    - NVIDIA character devices under RV(dev_root) (C(dev/nvidia*), C(dev/nvidia-caps/*),
      C(dev/nvidia-caps-imex-channels/*)). RV(device_nodes[].path) is the path inside
      containers, RV(device_nodes[].host_path) the host path.
  returned: success
  type: list
  elements: dict
  sample: [{path: /dev/nvidiactl, host_path: /dev/nvidiactl, major: 195, minor: 255, mode: "0666"}]
  contains:
    path:
      description: Path inside containers, under C(/dev).
      type: str
    host_path:
      description: Host path (O(dev_root) joined with RV(device_nodes[].path)).
      type: str
    major:
      description: Major device number.
      type: int
    minor:
      description: Minor device number.
      type: int
    mode:
      description: Permission bits in octal.
      type: str
mig_minors:
  description: MIG capability minors from C(/proc/driver/nvidia-caps/mig-minors), empty without MIG.
  returned: success
  type: dict
  sample: {"gpu0/gi1/access": 12}
os_release_id:
  description:
    - The C(ID) from C(<host_root>/etc/os-release) (else C(<host_root>/usr/lib/os-release)), lower
      case, for choosing platform defaults without gathering facts; empty when neither file has one.
  returned: always
  type: str
  sample: cos
systemd_running:
  description:
    - Whether systemd is PID 1 where the module runs (C(/run/systemd/system) is a directory), that is
      whether C(systemctl) can restart services there. Looked up on the machine running the module,
      not under O(host_root).
  returned: always
  type: bool
  sample: true
container_engines:
  description:
    - The container engines found under O(host_root), each with what showed it, its daemon's binary
      (C(/usr/bin/containerd), C(/usr/local/bin/containerd), C(/usr/bin/dockerd), C(/usr/local/bin/dockerd),
      C(/usr/bin/crio), C(/usr/local/bin/crio)) or its configuration (C(/etc/containerd/config.toml),
      C(/etc/docker/daemon.json), C(/etc/crio/crio.conf), C(/etc/crio/crio.conf.d)). Empty when none is found.
    - The gpu_node role configures these engines when C(gpu_node_container_engines) is C(auto).
  returned: always
  type: dict
  sample: {containerd: [/usr/bin/containerd, /etc/containerd/config.toml], docker: [/usr/bin/dockerd]}
kubernetes_distribution:
  description:
    - The k3s or RKE2 found under O(host_root), from its generated containerd config
      (C(/var/lib/rancher/<k3s|rke2>/agent/etc/containerd/config.toml)) or its systemd units
      (C(k3s), C(k3s-agent), C(rke2-server), C(rke2-agent)); null when there is neither. The gpu_node
      role then provisions containerd with M(gpu_node.container_toolkit.k3s_runtime) instead of
      editing that config, which they write anew at every start.
  returned: always
  type: dict
  sample: {distribution: k3s, service: k3s, units: [k3s], config_path: /var/lib/rancher/k3s/agent/etc/containerd/config.toml,
           config_exists: true, generated_header: "generated by k3s. DO NOT EDIT", socket: /run/k3s/containerd/containerd.sock,
           drop_in: /etc/rancher/k3s/config.yaml.d/99-gpu-node-container-toolkit.yaml,
           templates: [/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl,
                       /var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.tmpl]}
device_node_changes:
  description:
    - What M(gpu_node.container_toolkit.device_nodes) with O(gpu_node.container_toolkit.device_nodes#module:nodes=control)
      would change on the node as it is now, without writing anything. The gpu_node role skips that
      task when both lists are empty.
    - V(null) when it cannot be told (no C(/proc/devices), the kernel module not loaded, no RV(dev_root)).
  returned: success
  type: dict
  sample: {nodes: [/dev/nvidia-uvm, /dev/nvidia-uvm-tools], char_links: [/dev/char/195:255]}
  contains:
    nodes:
      description: Host paths of the control device nodes that are missing or not as they must be.
      type: list
      elements: str
    char_links:
      description:
        - Host paths of the C(/dev/char) links it would create or replace with
          O(gpu_node.container_toolkit.device_nodes#module:char_links=true).
      type: list
      elements: str
kernel_module_loaded:
  description:
    - Whether the C(nvidia) kernel module is loaded (C(/proc/driver/nvidia) exists, or
      C(/proc/modules) lists it). When it is not, the module warns.
  returned: success
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_look, node_model


def main():
    module = AnsibleModule(argument_spec=node_model.node_argument_spec(driver=True), supports_check_mode=True)
    node_look.exit_with_look(module)


if __name__ == "__main__":
    main()
