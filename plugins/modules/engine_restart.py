#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done by the action plugin of the same name (plugins/action/engine_restart.py).

DOCUMENTATION = r"""
module: engine_restart
short_description: Roll a container engine's configuration back when it did not come back from a restart
version_added: 0.3.0
description:
  - Takes the result of the restart a play sent with M(ansible.builtin.raw) (the script of the
    P(gpu_node.container_toolkit.engine_restart_script#filter) filter). When the engine did not come back (O(restart)'s C(rc) is
    not 0), or O(rollback_because) says a check after the restart refused its configuration, it puts every file
    of O(backup_files) back from its backup, removes those the run created, runs O(restart_script) again and
    fails the host, naming the error, each file rolled back and whether the engine answers again.
  - When the engine came back, it changes nothing.
  - The C(containerd), C(docker) and C(crio) roles run the restart and then this module from their handlers, with
    the C(backup_files) their editing module returned (M(gpu_node.container_toolkit.containerd_runtime),
    M(gpu_node.container_toolkit.docker_runtime), M(gpu_node.container_toolkit.crio_runtime),
    M(gpu_node.container_toolkit.k3s_runtime)).
  - Files are read and written through the collection's node modules, confined to O(host_root) like every
    edit. The restart after the rollback runs through M(ansible.builtin.command).
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
  - gpu_node.container_toolkit.attributes.NODE_GROUP
attributes:
  check_mode:
    support: partial
    details: Nothing is rolled back in check mode; the task is skipped, as the restart sent with M(ansible.builtin.raw) is.
  diff_mode:
    support: none
  safe_file_operations:
    support: full
    details: Each file put back from its backup is written to a temporary file and renamed over it.
  idempotent:
    support: full
    details: An engine that came back is left alone; a rollback fails the host.
  platform:
    platforms: posix
options:
  engine:
    description: The engine's name, as the message says it (C(containerd), C(dockerd), C(CRI-O), C(k3s)).
    type: str
    required: true
  restart_script:
    description:
      - The script that restarts the engine and waits for it, run again after the rollback (the
        P(gpu_node.container_toolkit.engine_restart_script#filter) filter's result).
    type: str
    required: true
  restart:
    description:
      - The registered result of the restart (M(ansible.builtin.raw) with O(restart_script)); its C(rc) says
        whether the engine came back, its C(stdout) why not.
      - Required unless O(rollback_because) is set.
    type: dict
  rollback_because:
    description:
      - Roll back whatever O(restart) says, naming this as the reason. For an engine that came back, but whose
        configuration a check after the restart found wrong (k3s and RKE2 generate theirs at start).
    type: str
  timeout:
    description: The seconds the restart waited, for the message when the engine printed nothing.
    type: int
    default: 30
  backup_files:
    description:
      - Host path of each file the configuration change wrote, with the host path of its backup, or null when
        the change created the file (the editing modules' RV(gpu_node.container_toolkit.containerd_runtime#module:backup_files)
        result).
      - Only these files are rolled back.
    type: dict
    default: {}
notes:
  - Run it as root, or with C(become), for the files to be written and the engine restarted.
seealso:
  - module: ansible.builtin.raw
  - module: gpu_node.container_toolkit.containerd_runtime
  - plugin: gpu_node.container_toolkit.engine_restart_script
    plugin_type: filter
"""

EXAMPLES = r"""
---
- name: Register the runtimes in containerd
  gpu_node.container_toolkit.containerd_runtime:
    backup: true
  register: containerd_edit
  notify: Restart containerd

# In the play's handlers, both listening to "Restart containerd":
- name: Restart containerd and wait until it answers
  ansible.builtin.raw: "{{ containerd_restart_script }}"
  args:
    executable: /bin/sh
  register: containerd_restart
  changed_when: true
  failed_when: false
  listen: Restart containerd
  when: containerd_edit.restart_required
  vars: &restart_script
    containerd_restart_script: >-
      {{ 'containerd' | gpu_node.container_toolkit.engine_restart_script('systemd',
           socket='/run/containerd/containerd.sock', health_command='ctr --address %s version') }}

- name: Roll back when containerd did not come back
  gpu_node.container_toolkit.engine_restart:
    engine: containerd
    restart_script: "{{ containerd_restart_script }}"
    restart: "{{ containerd_restart }}"
    backup_files: "{{ containerd_edit.backup_files | default({}) }}"
  listen: Restart containerd
  when: containerd_restart.rc | default(0) != 0
  vars: *restart_script
"""

RETURN = r"""
rc:
  description: Exit status of the restart after the rollback (0 when the engine answered again).
  returned: when the files were rolled back
  type: int
  sample: 0
stdout:
  description: What the restart after the rollback printed.
  returned: when the files were rolled back
  type: str
  sample: ""
rolled_back:
  description: Each file put back (with its backup) or removed (null), as in O(backup_files).
  returned: when the files were rolled back
  type: dict
  sample: {/etc/containerd/config.toml: /etc/containerd/config.toml.2417.2026-12-07@19:40:11~}
"""

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.action_module import action_only_main


def main():
    action_only_main(argument_specs.engine_restart())


if __name__ == "__main__":
    main()
