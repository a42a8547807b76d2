"""The record of a full run, and the rule that lets the next run skip its steps (node_record)."""

from __future__ import annotations

import base64
import json

import pytest
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_look, node_record, persistence
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.role_choices import gpu_node_choices
from ansible_collections.gpu_node.container_toolkit.plugins.modules import node_info
from ansible_collections.gpu_node.container_toolkit.plugins.modules import node_record as node_record_module

INSTALL_DIR = "/home/kubernetes/bin/nvidia/toolkit"
KEPT = INSTALL_DIR + "/.gpu-node"
INPUTS = "a" * 64


def wanted():
    """What the gpu_node role reads ahead on a COS node (its read_ahead_paths filter)."""
    return {"files": [INSTALL_DIR + "/.toolkit-manifest.json", INSTALL_DIR + "/.config/nvidia-container-runtime/config.toml",
                      "/etc/containerd/config.toml"],
            "trees": [KEPT, "/etc/cdi", "/var/run/cdi"], "installs": [INSTALL_DIR], "exist": []}


def look_at(node):
    params = {"host_root": str(node.root), "driver_root": "auto", "dev_root": "auto",
              "library_search_paths": list(node_look.node_model.DEFAULT_LIBRARY_SEARCH_PATHS)}
    return node_look.look(params, wanted())[0]


def record_args(node, **more):
    return dict({"host_root": str(node.root), "dir": KEPT, "inputs": INPUTS, "read_ahead": wanted()}, **more)


def b64(text):
    return base64.b64encode(text.encode()).decode()


MOUNTINFO = (
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "31 22 8:16 / /home rw,nosuid,nodev,noexec,relatime shared:9 - ext4 /dev/sdb1 rw\n"
    "%d 22 0:%d / /var/lib/kubelet/pods/%s/volumes/x rw,relatime shared:%d - tmpfs tmpfs rw\n"
)


def synthetic_look(mount_line_args=(90, 40, "pod-a", 50), kept=None, config="version = 2\n"):
    return {
        "driver_version": "535.104.12",
        "read_ahead": {
            "host_root": "/",
            "files": [{"path": "/etc/containerd/config.toml", "exists": True, "content": b64(config)},
                      {"path": node_record.MOUNTINFO, "exists": True, "content": b64(MOUNTINFO % mount_line_args)}],
            "trees": {KEPT: {"resolved": KEPT, "exists": True, "files": kept or {}, "links": []}},
            "installs": {INSTALL_DIR: {"resolved": INSTALL_DIR, "entries": {}}},
        },
    }


def test_the_digest_leaves_out_the_records_and_the_mounts_that_hold_no_install_dir():
    base = node_record.look_digest(synthetic_look())
    # A pod mounted and another gone, with new mount ids and peer groups: the same look.
    assert node_record.look_digest(synthetic_look((120, 77, "pod-b", 61))) == base
    recorded = {node_record.RECORD_NAME: {"content": b64(node_record.record_text(INPUTS, base)), "mode": "0644"}}
    assert node_record.look_digest(synthetic_look(kept=recorded)) == base
    # What the steps decide from: a config, a kept file, the driver.
    assert node_record.look_digest(synthetic_look(config="version = 3\n")) != base
    assert node_record.look_digest(synthetic_look(kept={"driver-version": {"content": b64("1\n"), "mode": "0644"}})) != base
    assert node_record.look_digest(dict(synthetic_look(), driver_version="550.54.15")) != base


def test_the_mount_holding_the_install_dir_counts():
    remounted = synthetic_look()
    table = MOUNTINFO.replace("nosuid,nodev,noexec", "nosuid,nodev") % (90, 40, "pod-a", 50)
    remounted["read_ahead"]["files"][1]["content"] = b64(table)
    assert node_record.look_digest(remounted) != node_record.look_digest(synthetic_look())
    garbled = synthetic_look()
    garbled["read_ahead"]["files"][1]["content"] = b64("not a mount table\n")
    assert node_record.look_digest(garbled) != node_record.look_digest(synthetic_look())


def with_record(look, text):
    look = dict(look, look_digest=node_record.look_digest(look))
    look["read_ahead"]["trees"][KEPT]["files"][node_record.RECORD_NAME] = {"content": b64(text), "mode": "0644"}
    return look


def test_in_place_needs_the_same_inputs_and_the_same_look():
    look = synthetic_look()
    digest = node_record.look_digest(look)
    assert node_record.in_place(with_record(look, node_record.record_text(INPUTS, digest)), INPUTS)
    assert not node_record.in_place(with_record(synthetic_look(), node_record.record_text(INPUTS, digest)), "b" * 64)
    assert not node_record.in_place(with_record(synthetic_look(), node_record.record_text(INPUTS, "0" * 64)), INPUTS)
    assert not node_record.in_place(with_record(synthetic_look(), node_record.record_text(INPUTS, digest)), "")
    for text in ("{not json", "[1, 2]", json.dumps({"format": 99, "inputs": INPUTS, "look": digest})):
        assert not node_record.in_place(with_record(synthetic_look(), text), INPUTS), text
    # A look without its digest (an older node_info) never matches.
    assert not node_record.in_place(synthetic_look(), INPUTS)
    assert node_record.records_in(with_record(synthetic_look(), "{not json")) == [(KEPT + "/" + node_record.RECORD_NAME, None)]


def test_persist_files_leaves_the_record_alone():
    current = {node_record.RECORD_NAME: (b"x", 0o644), "reapply.sh": (b"old", 0o755)}
    assert persistence.plan({"reapply.sh": (b"new", 0o755)}, current) == [("reapply.sh", "update")]
    assert persistence.plan({}, {node_record.RECORD_NAME: (b"x", 0o644)}) == []


def settings(**more):
    return dict({"state": "present", "toolkit_install_method": "files", "inputs_digest": INPUTS, "full_run": True,
                 "container_engines": ["containerd"], "containerd_restart_mode": "command",
                 "containerd_restart_command": "true"}, **more)


@pytest.mark.parametrize("change, in_place, record", [
    ({}, True, True),
    ({"full_run": False}, True, False),
    ({"state": "absent"}, False, False),
    ({"toolkit_install_method": "package"}, False, False),
    ({"verifying": True}, False, False),
    ({"inputs_digest": ""}, False, False),
    ({"container_engines": ["podman"]}, False, False),  # a problem: the run stops anyway
])
def test_the_role_skips_and_records_only_where_the_record_can_tell(change, in_place, record):
    look = with_record(dict(synthetic_look(), os_release_id="cos", kernel_module_loaded=True),
                       "placeholder")
    look["read_ahead"]["trees"][KEPT]["files"][node_record.RECORD_NAME]["content"] = b64(
        node_record.record_text(INPUTS, look["look_digest"]))
    choices = gpu_node_choices(look, settings(**change))
    assert (choices["in_place"], choices["record"]) == (in_place, record)
    assert choices["inputs_digest"] == (INPUTS if record or in_place else "")


def test_a_record_written_on_the_node_matches_the_next_look(cos_node, monkeypatch):
    result, failed = run_module(node_record_module.main, record_args(cos_node), monkeypatch=monkeypatch)
    assert not failed and result["changed"]
    assert result["changes"][-1] == {"path": KEPT + "/" + node_record.RECORD_NAME, "action": "created"}
    assert result["dirs_created"][-1] == KEPT and {"path": KEPT, "action": "created"} in result["changes"]
    look = look_at(cos_node)
    assert look["look_digest"] == result["look_digest"]
    assert node_record.in_place(look, INPUTS)
    assert not node_record.in_place(look, "b" * 64)
    again, failed = run_module(node_record_module.main, record_args(cos_node), monkeypatch=monkeypatch)
    assert not failed and not again["changed"]
    # node_info returns the same digest as the look the record was made from.
    looked, failed = run_module(node_info.main, {"host_root": str(cos_node.root), "read_ahead": wanted()},
                                monkeypatch=monkeypatch)
    assert not failed and looked["look_digest"] == result["look_digest"]


def test_a_file_changed_after_the_record_is_seen(cos_node, monkeypatch):
    run_module(node_record_module.main, record_args(cos_node), monkeypatch=monkeypatch)
    config = cos_node.node_path("/etc/containerd/config.toml")
    config.write_text(config.read_text() + "# edited by hand\n")
    assert not node_record.in_place(look_at(cos_node), INPUTS)


def test_check_mode_writes_no_record(cos_node, monkeypatch):
    result, failed = run_module(node_record_module.main, record_args(cos_node), check_mode=True, monkeypatch=monkeypatch)
    assert not failed and result["changed"]
    assert not cos_node.node_path(KEPT + "/" + node_record.RECORD_NAME).exists()


def test_no_driver_no_record(tmp_path, monkeypatch):
    result, failed = run_module(node_record_module.main, dict(record_args(type("N", (), {"root": tmp_path})())),
                                monkeypatch=monkeypatch)
    assert failed
    assert result["msg"].startswith("cannot record the node as this run left it: no NVIDIA driver found")
    assert not (tmp_path / KEPT.lstrip("/") / node_record.RECORD_NAME).exists()
