# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``main()`` of a module whose work is done by its action plugin on the controller."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule


def action_only_main(argument_spec):
    """Validate like the action plugin does, then say why the module cannot run on its own.

    Ansible runs the action plugin of the same name for every task, so this runs only when the
    module file is executed some other way (a copy of it on the node, a test harness).
    """
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    module.fail_json(msg="this module edits files on the controller: run it as a task (its action plugin "
                         "of the same name does the work), not as a file on the node")
