"""The cdi role passes each ``cdi_specs`` item's options on to cdi_spec (issue 12): ``devices``,
``all_device``, ``vendor`` and ``class`` used to be dropped, so ``{mode: gpu, devices: ["0"]}`` wrote a
spec for every GPU. Runs the role with the real ``ansible-playbook`` against a fake node with two GPUs.
"""

from __future__ import annotations

import json

import yaml
from ansible_runner import recap, run_playbook
from fakenode import gpu_uuid

HOOK = "/home/kubernetes/bin/nvidia/toolkit/nvidia-cdi-hook"


def _run_role(tmp_path, node, specs, **extra):
    playbook = tmp_path / "cdi.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "CDI specs", "hosts": "all", "gather_facts": False,
        "roles": [{"role": "gpu_node.container_toolkit.cdi"}],
    }]))
    variables = {"cdi_host_root": str(node.root), "cdi_device_nodes": "none", "cdi_hook_path": HOOK, "cdi_specs": specs}
    variables.update(extra)
    return run_playbook(playbook, extra_vars=variables)


def _spec(node, path):
    text = node.node_path(path).read_text()
    return json.loads(text) if path.endswith(".json") else yaml.safe_load(text)


def test_gpu_spec_for_one_device_holds_only_that_gpu(cos_node, tmp_path):
    assert [gpu["index"] for gpu in cos_node.gpus] == [0, 1]  # the fake node has two GPUs
    path = "/etc/cdi/nvidia-gpu0.yaml"
    proc = _run_role(tmp_path, cos_node, [{"mode": "gpu", "devices": ["0"], "path": path}])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert recap(proc.stdout)["localhost"]["changed"] == 1
    spec = _spec(cos_node, path)
    assert spec["kind"] == "nvidia.com/gpu"
    assert sorted(device["name"] for device in spec["devices"]) == sorted(["0", gpu_uuid(0), "all"])
    nodes = [edit["path"] for device in spec["devices"] for edit in device["containerEdits"].get("deviceNodes", [])]
    assert "/dev/nvidia0" in nodes and "/dev/nvidia1" not in nodes


def test_every_item_option_reaches_the_module(cos_node, tmp_path):
    path = "/etc/cdi/example.json"
    item = {"mode": "gpu", "devices": ["1"], "all_device": False, "vendor": "example.com", "class": "accel",
            "device_name_strategy": ["type-index"], "path": path, "container_driver_root": "/usr/local/nvidia",
            "disable_hooks": ["all"]}
    proc = _run_role(tmp_path, cos_node, [item])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    spec = _spec(cos_node, path)
    assert spec["kind"] == "example.com/accel"
    assert [device["name"] for device in spec["devices"]] == ["gpu1"]
    text = json.dumps(spec)
    assert "/usr/local/nvidia/lib64/libcuda.so" in text and '"hooks"' not in text

    again = _run_role(tmp_path, cos_node, [item])
    assert again.returncode == 0 and recap(again.stdout)["localhost"]["changed"] == 0
    removed = _run_role(tmp_path, cos_node, [item], cdi_state="absent")
    assert removed.returncode == 0 and recap(removed.stdout)["localhost"]["changed"] == 1
    assert not cos_node.node_path(path).exists()


def test_an_unknown_item_key_is_refused_before_anything_is_written(cos_node, tmp_path):
    path = "/etc/cdi/nvidia-typo.yaml"
    proc = _run_role(tmp_path, cos_node, [{"mode": "gpu", "device": ["0"], "path": path}])
    assert proc.returncode != 0
    assert "Validation of arguments failed" in proc.stdout, proc.stdout[-3000:]
    assert "cdi_specs.device. Supported parameters include" in proc.stdout
    assert not cos_node.node_path(path).exists()
