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
