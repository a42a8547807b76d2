"""module_defaults with the collection's action group sets host_root once for a play, for node-side
modules and for the action-backed ones alike."""

from __future__ import annotations

import json

import yaml
from ansible_runner import recap, run_playbook

COS_TOOLKIT = "/home/kubernetes/bin/nvidia/toolkit"


def test_group_module_defaults_reach_every_kind_of_module(cos_node, tmp_path):
    out = tmp_path / "results.json"
    play = [{
        "name": "Every node module gets host_root from the group",
        "hosts": "localhost",
        "gather_facts": False,
        "module_defaults": {"group/gpu_node.container_toolkit.node": {"host_root": str(cos_node.root)}},
        "tasks": [
            {"name": "Look at the driver", "gpu_node.container_toolkit.nvidia_driver_info": {}, "register": "driver"},
            {"name": "Read a node file", "register": "files",
             "gpu_node.container_toolkit.node_files_info": {"paths": ["/etc/os-release"]}},
            {"name": "Preview the toolkit config (action plugin)", "check_mode": True, "register": "config",
             "gpu_node.container_toolkit.toolkit_config": {"install_dir": COS_TOOLKIT}},
            {"name": "Preview containerd's runtimes (action plugin)", "check_mode": True, "register": "runtimes",
             "gpu_node.container_toolkit.containerd_runtime": {"install_dir": COS_TOOLKIT}},
            {"name": "Keep the results", "delegate_to": "localhost",
             "ansible.builtin.copy": {"dest": str(out), "mode": "0600",
                                      "content": "{{ {'driver': driver, 'files': files, 'config': config,"
                                                 " 'runtimes': runtimes} | to_json }}"}},
        ],
    }]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    proc = run_playbook(playbook)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert recap(proc.stdout)["localhost"]["failed"] == 0
    found = json.loads(out.read_text())
    assert found["driver"]["driver_root"] == "/home/kubernetes/bin/nvidia", found["driver"]
    assert found["driver"]["os_release_id"] == "cos"
    assert found["files"]["files"][0]["exists"] is True
    assert found["config"]["driver_root"] == "/home/kubernetes/bin/nvidia"
    assert found["config"]["changed"] is True and found["config"]["path"].startswith(COS_TOOLKIT + "/")
    assert found["runtimes"]["changed"] is True and found["runtimes"]["config_version"] == 2
    # check mode: the previews wrote nothing on the node.
    assert not cos_node.node_path(COS_TOOLKIT + "/.config").exists()
