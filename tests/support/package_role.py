"""The toolkit role's package method run on a chrooted node tree (apt_node, dnf_node), the way the
package tests run it: one play, the role with the package settings, and the step's registered
result copied to the controller for the test to read."""

from __future__ import annotations

import json
import sys

import yaml
from ansible_runner import recap, run_playbook


def play_role(node, check, role_vars, settings):
    """``(ansible-playbook's CompletedProcess, where the play copies the step's result)``; ``node``
    is a test's node dict (``tmp``, ``inventory``), ``settings`` the package method's variables."""
    out = node["tmp"] / "result.json"
    registered = "toolkit_package_absent_result" if role_vars.get("toolkit_state") == "absent" else "toolkit_package_result"
    if out.exists():
        out.unlink()
    play = [{
        "hosts": "node",
        "gather_facts": False,
        "roles": [{"role": "gpu_node.container_toolkit.toolkit",
                   "vars": dict({"toolkit_install_method": "package"}, **dict(settings, **role_vars))}],
        "post_tasks": [{"name": "Keep the package step's result", "delegate_to": "localhost",
                        "check_mode": False,
                        "vars": {"ansible_python_interpreter": sys.executable, "ansible_connection": "local"},
                        "ansible.builtin.copy": {"dest": str(out), "mode": "0600",
                                                 "content": "{{ %s | default({}) | to_json }}" % registered}}],
    }]
    playbook = node["tmp"] / "play.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    proc = run_playbook(playbook, inventory=str(node["inventory"]), check=check, diff=True,
                        env={"ANSIBLE_PIPELINING": "True"})
    return proc, out


def run_role(node, check, role_vars, settings):
    """:func:`play_role`, which must pass; ``(recap totals, the package step's result)``."""
    proc, out = play_role(node, check, role_vars, settings)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    totals = recap(proc.stdout)["node"]
    # The copy of the result is the play's own bookkeeping, not a change on the node.
    totals["changed"] -= 1
    return totals, json.loads(out.read_text())
