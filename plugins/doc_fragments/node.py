# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # Where the node's filesystem is seen from. Every module that touches node files takes it.
    DOCUMENTATION = r"""
options:
  host_root:
    description:
      - Where the node's C(/) is seen by the code that touches files.
      - Files are read and written at O(host_root) joined with their host path. Paths written
        into files and returned in results are host paths and never contain O(host_root).
      - Use V(/host) when running from a container that mounts the node's root there, or a
        temporary directory for a simulated node.
    type: path
    default: /
"""

    # The driver and device locations, for modules that look at the NVIDIA driver.
    DRIVER = r"""
options:
  driver_root:
    description:
      - Host path holding the driver's user-space files (libraries, binaries, firmware).
      - It is not necessarily a full, chroot-able filesystem. On GKE's Container-Optimized OS
        it is V(/home/kubernetes/bin/nvidia), which has no C(dev/), C(sbin/) or C(etc/ld.so.cache).
      - V(auto) tries V(/run/nvidia/driver), V(/home/kubernetes/bin/nvidia), V(/var/lib/nvidia)
        and V(/), in that order, and takes the first that holds a C(libcuda.so.*) in one of
        the O(library_search_paths).
    type: str
    default: auto
  dev_root:
    description:
      - Host path under which C(dev/nvidia*) live. It is independent of O(driver_root).
      - V(auto) uses O(driver_root) when C(<driver_root>/dev/nvidiactl) exists, else V(/).
        On Container-Optimized OS the device nodes are in the host's C(/dev), so V(auto)
        resolves to V(/).
    type: str
    default: auto
  library_search_paths:
    description:
      - Directories, relative to O(driver_root), searched for driver libraries
        (C(lib*.so.<version>)).
      - Each is searched with the driver's own subfolders of it, C(vdpau/) (VDPAU drivers) and, for a
        multiarch directory such as C(usr/lib/x86_64-linux-gnu), C(nvidia/current/) (where Debian
        keeps the real files behind its alternatives links).
      - After them, C(<driver_root>/etc/ld.so.cache) is read when it exists.
    type: list
    elements: str
    default:
      - lib64
      - usr/lib64
      - usr/lib/x86_64-linux-gnu
      - lib/x86_64-linux-gnu
      - usr/lib/aarch64-linux-gnu
      - lib/aarch64-linux-gnu
      - usr/lib
      - lib
"""

    # For the modules whose action plugin reads node files: what the look at the node already read.
    READ_AHEAD = r"""
options:
  read_ahead:
    description:
      - The RV(gpu_node.container_toolkit.node_info#module:read_ahead) result of a
        M(gpu_node.container_toolkit.node_info) call earlier in the same run, with the same
        O(host_root), passed on unchanged.
      - Files and existence checks it holds are taken from it instead of being read again, so a task
        that changes nothing makes no round trip to the node. Anything it does not hold is read from
        the node as without it; a write still checks that the file is what was read, and fails
        rather than overwrite a change made since.
      - Pass it only for files no task has written since that call; the gpu_node role does so.
    type: dict
"""
