# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's Python, checked before anything else of this collection runs there.

Every module imports this first: on an interpreter older than :data:`MINIMUM` (RHEL 8's
``/usr/libexec/platform-python`` is 3.6, and ansible-core 2.16 picks it) the module stops here
with one failure that names the interpreter and what to set, instead of a SyntaxError from a
later import, and before it has touched anything. Like ``ansible.module_utils.basic``'s own
check, it runs at import. This file and the modules themselves must therefore parse on
Python 3.6 (``tests/unit/plugins/modules/test_node_python.py`` compiles them with it).
"""

import json
import platform
import sys

MINIMUM = (3, 8)


def too_old_message(executable, version):
    return ("gpu_node.container_toolkit needs Python %s or later on the node, and this module ran with %s "
            "(Python %s). Set ansible_python_interpreter for this host to a newer Python 3 (on RHEL 8: "
            "dnf install python39, then ansible_python_interpreter=/usr/bin/python3.9). Nothing was changed."
            % (".".join(str(n) for n in MINIMUM), executable, version))


if sys.version_info < MINIMUM:
    # No AnsibleModule exists yet to fail_json with: the module result goes out as Ansible reads it.
    sys.stdout.write(json.dumps({"failed": True, "changed": False,
                                 "msg": too_old_message(sys.executable, platform.python_version())}) + "\n")
    raise SystemExit(1)
