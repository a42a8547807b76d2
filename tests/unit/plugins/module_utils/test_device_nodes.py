from __future__ import annotations

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import device_nodes as dn


def devices(**chars):
    return {"character": {k.replace("_", "-"): v for k, v in chars.items()}, "block": {}}


@pytest.mark.parametrize("table, expected, skipped", [
    (devices(nvidia_frontend=195, nvidia_uvm=509),
     [("nvidiactl", 195, 255), ("nvidia-modeset", 195, 254), ("nvidia-uvm", 509, 0), ("nvidia-uvm-tools", 509, 1)], 0),
    (devices(nvidia=195, nvidia_uvm=235),
     [("nvidiactl", 195, 255), ("nvidia-modeset", 195, 254), ("nvidia-uvm", 235, 0), ("nvidia-uvm-tools", 235, 1)], 0),
    (devices(nvidia=195), [("nvidiactl", 195, 255), ("nvidia-modeset", 195, 254)], 2),
])
def test_wanted_nodes(table, expected, skipped):
    wanted, skip = dn.wanted_nodes(table)
    assert [(w["name"], w["major"], w["minor"]) for w in wanted] == expected
    assert all(w["mode"] == 0o666 for w in wanted)
    assert len(skip) == skipped
    if skipped:
        assert "nvidia_uvm not loaded" in skip[0]


def test_none_and_bad_choice():
    assert dn.wanted_nodes(devices(), "none") == ([], [])
    with pytest.raises(ValueError):
        dn.wanted_nodes(devices(nvidia=195), "all")


def test_not_loaded():
    with pytest.raises(dn.KernelModuleNotLoaded, match="kernel module is not loaded"):
        dn.wanted_nodes(devices(mem=1, nvidia_uvm=509))


def char(major, minor, mode=0o666):
    return {"type": "char", "major": major, "minor": minor, "mode": mode}


@pytest.mark.parametrize("found, action, reason", [
    (None, "create", "missing"),
    (char(195, 255), "ok", ""),
    (char(195, 0), "replace", "is 195:0, not 195:255"),
    (char(195, 255, 0o600), "chmod", "mode 0600, not 0666"),
    ({"type": "block", "major": 195, "minor": 255}, "replace", "is a block 195:255, not a character device"),
    ({"type": "file"}, "replace", "is a regular file, not a character device"),  # node_fs's vocabulary
    ({"type": "fifo"}, "replace", "is a fifo, not a character device"),
    ({"type": "directory"}, "refuse", "is a directory, not a character device"),
    ({"type": "symlink"}, "refuse", "is a symlink, not a character device"),
])
def test_plan(found, action, reason):
    wanted = [{"name": "nvidiactl", "major": 195, "minor": 255, "mode": 0o666}]
    (step,) = dn.plan(wanted, {"nvidiactl": found})
    assert (step["action"], step["reason"]) == (action, reason)
    assert step["want"] == "char 195:255 0666"
    assert step["found"] == dn.describe(found)


def test_describe():
    assert dn.describe(None) == "missing"
    assert dn.describe(char(1, 2, 0o644)) == "char 1:2 0644"


def test_char_links_one_per_device_relative_in_the_host_dev():
    nodes = [{"name": "nvidia0", "major": 195, "minor": 0}, {"name": "nvidiactl", "major": 195, "minor": 255},
             {"name": "nvidia-caps/nvidia-cap1", "major": 508, "minor": 1}, {"name": "nvidia0-dup", "major": 195, "minor": 0}]
    found = {"195:255": {"type": "symlink", "target": "../nvidiactl"},
             "508:1": {"type": "symlink", "target": "../somewhere-else"}}
    steps = dn.plan_char_links(nodes, "/dev", found)
    assert [(s["path"], s["target"], s["action"]) for s in steps] == [
        ("/dev/char/195:0", "../nvidia0", "create"),
        ("/dev/char/195:255", "../nvidiactl", "ok"),
        ("/dev/char/508:1", "../nvidia-caps/nvidia-cap1", "replace"),
    ]
    assert steps[2]["reason"] == "points at ../somewhere-else, not ../nvidia-caps/nvidia-cap1"


def test_char_links_name_the_node_outside_the_host_dev_and_leave_non_links_alone():
    nodes = [{"name": "nvidia0", "major": 195, "minor": 0}, {"name": "nvidia1", "major": 195, "minor": 1}]
    found = {"195:1": {"type": "char", "major": 195, "minor": 1, "mode": 0o666}}
    steps = dn.plan_char_links(nodes, "/run/nvidia/driver/dev", found)
    assert steps[0]["target"] == "/run/nvidia/driver/dev/nvidia0" and steps[0]["action"] == "create"
    assert steps[1]["action"] == "refuse" and steps[1]["reason"] == "is a char, not a link"
    assert dn.char_link_target("/dev", "nvidia-uvm") == "../nvidia-uvm"
