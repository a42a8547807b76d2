"""containerd with its CRI plugin turned off in disabled_plugins (Docker's containerd.io package):
reported, and with enable_cri taken out and put back byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct

CONTAINERD_IO = (Path(__file__).resolve().parents[3] / "fixtures" / "containerd" / "containerd-io-package.toml").read_text()


def params(**overrides):
    return dict({"state": "present", "runtimes": rt.default_runtimes("/usr/local/nvidia/toolkit"),
                 "runtime_type": cc.DEFAULT_RUNTIME_TYPE, "set_as_default": False, "enable_cdi": None,
                 "cdi_spec_dirs": None, "config_version": "auto", "drop_in": None,
                 "path": "/etc/containerd/config.toml"}, **overrides)


@pytest.mark.parametrize("version, disabled, turned_off", [
    (1, ["cri"], ["cri"]),
    # Version 1 matches a plugin's ID: the full name leaves CRI on (containerd 1.6, measured).
    (1, ["io.containerd.grpc.v1.cri"], []),
    (2, ["io.containerd.grpc.v1.cri", "io.containerd.internal.v1.restart"], ["io.containerd.grpc.v1.cri"]),
    (2, ["io.containerd.internal.v1.restart"], []),
    (3, ["io.containerd.cri.v1.images"], ["io.containerd.cri.v1.images"]),
    (3, [], []),
])
def test_which_entries_turn_cri_off(version, disabled, turned_off):
    assert cc.cri_disabled_by({"version": version, "disabled_plugins": disabled}, version) == turned_off


def test_not_a_list_turns_nothing_off():
    assert cc.cri_disabled_by({"disabled_plugins": "cri"}, 1) == []
    assert cc.cri_disabled_by({}, 2) == []


def test_without_enable_cri_the_runtimes_go_in_with_a_warning_naming_the_way_out():
    edit = ct.edit(CONTAINERD_IO, params(), name="/etc/containerd/config.toml")
    assert edit["version"] == 1 and edit["cri_disabled_by"] == ["cri"]
    assert 'disabled_plugins = ["cri"]' in edit["text"]
    assert sorted(tomlkit.parse(edit["text"]).unwrap()["plugins"]["cri"]["containerd"]["runtimes"]) == [
        "nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
    [warning] = [w for w in edit["warnings"] if "disabled_plugins" in w]
    assert warning.startswith("/etc/containerd/config.toml: disabled_plugins lists 'cri'")
    assert "enable_cri=true" in warning and "gpu_node_containerd_enable_cri" in warning


def test_enable_cri_takes_it_out_and_absent_puts_the_file_back_byte_for_byte():
    edit = ct.edit(CONTAINERD_IO, params(enable_cri=True), name="/etc/containerd/config.toml")
    assert edit["cri_disabled_by"] == [] and edit["restart_required"]
    assert tomlkit.parse(edit["text"]).unwrap()["disabled_plugins"] == []
    assert {"path": "/etc/containerd/config.toml", "action": "updated", "setting": "disabled_plugins",
            "reason": "['cri'] -> [] (enable_cri)"} in edit["changes"]
    assert not [w for w in edit["warnings"] if "disabled_plugins" in w]
    again = ct.edit(edit["text"], params(enable_cri=True), name="/etc/containerd/config.toml")
    assert again["text"] == edit["text"] and again["changes"] == [] and not again["restart_required"]
    removed = ct.edit(edit["text"], params(state="absent"), name="/etc/containerd/config.toml")
    assert removed["text"] == CONTAINERD_IO
    assert {"path": "/etc/containerd/config.toml", "action": "updated", "setting": "disabled_plugins",
            "reason": "[] -> ['cri'] (restored)"} in removed["changes"]


def test_enable_cri_keeps_the_other_disabled_plugins():
    text = 'version = 2\ndisabled_plugins = ["io.containerd.internal.v1.restart", "io.containerd.grpc.v1.cri"]\n'
    edit = ct.edit(text, params(enable_cri=True), name="config.toml")
    assert tomlkit.parse(edit["text"]).unwrap()["disabled_plugins"] == ["io.containerd.internal.v1.restart"]
    assert ct.edit(edit["text"], params(state="absent"), name="config.toml")["text"] == text


def test_enable_cri_in_drop_in_mode_edits_the_root():
    edit = ct.edit(CONTAINERD_IO, params(enable_cri=True, drop_in="/etc/containerd/conf.d/99-nvidia.toml"),
                   drop_in_text=None, name="/etc/containerd/config.toml")
    root = tomlkit.parse(edit["text"]).unwrap()
    assert root["disabled_plugins"] == [] and root["imports"] == ["/etc/containerd/conf.d/99-nvidia.toml"]
    assert edit["cri_disabled_by"] == []
