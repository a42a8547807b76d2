# -*- coding: utf-8 -*-
"""An install the look read ahead and found in place costs no module run: the toolkit_install
action answers from the look, with the result the module gives when it checks the node itself.
Anything to change, or anything the look could not show, leaves the decision to the module."""

from __future__ import annotations

import json

import pytest
import toolkit_artifacts as ta
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.action.toolkit_install import ActionModule
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_reads, toolkit_source
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeRoot
from ansible_collections.gpu_node.container_toolkit.plugins.modules import toolkit_install
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.local_command import run_tool

INSTALL = "/home/kubernetes/bin/nvidia/toolkit"
SOURCES = "/var/lib/toolbox/toolkit"
# What the module and the action both report, compared field by field.
FIELDS = ("changed", "changes", "files", "added", "updated", "removed", "exec_mount", "install_dir", "mount", "diff")


@pytest.fixture
def node(cos_node, monkeypatch):
    """A COS node with the toolkit installed by the module."""
    ta.build_tree(cos_node.node_path(SOURCES))
    result, failed = module_run(cos_node, monkeypatch)
    assert not failed and result["changed"], result
    return cos_node


def module_run(node, monkeypatch, **extra):
    args = dict({"host_root": str(node.root), "src": [SOURCES], "remote_src": True, "install_dir": INSTALL}, **extra)
    return run_module(toolkit_install.main, args, diff=True, monkeypatch=monkeypatch)


def in_place(node):
    """What the action decides from a look taken now (through JSON, as it travels)."""
    look = node_reads.read_ahead(NodeRoot(str(node.root)), files=[INSTALL + "/.toolkit-manifest.json"],
                                 installs=[INSTALL])
    read_ahead = json.loads(json.dumps(dict(look, host_root=str(node.root))))
    tree = toolkit_source.read_source(str(node.node_path(SOURCES)), run_tool)
    args = {"host_root": str(node.root), "install_dir": INSTALL, "low_level_runtime": "runc", "config_path": None}
    return ActionModule._in_place(tree, args, read_ahead)


def test_an_install_in_place_is_answered_as_the_module_answers(node, monkeypatch):
    answered = in_place(node)
    assert answered is not None
    checked, failed = module_run(node, monkeypatch)
    assert not failed and not checked["changed"]
    assert {k: answered.get(k) for k in FIELDS} == {k: checked.get(k) for k in FIELDS}
    assert answered["mount"]["mount_point"] == "/home/kubernetes/bin"
    assert answered["files"] and answered["diff"]["before"] == answered["diff"]["after"]


def test_a_binary_changed_behind_the_manifest_goes_to_the_module(node, monkeypatch):
    binary = node.node_path(INSTALL + "/nvidia-ctk.real")
    binary.write_bytes(b"#!/bin/sh\necho replaced\n")
    assert in_place(node) is None
    repaired, failed = module_run(node, monkeypatch)
    assert not failed and repaired["updated"] == ["nvidia-ctk.real"]
    assert in_place(node) is not None


def test_a_mode_or_a_missing_link_goes_to_the_module(node):
    node.node_path(INSTALL + "/nvidia-ctk.real").chmod(0o775)
    assert in_place(node) is None
    node.node_path(INSTALL + "/nvidia-ctk.real").chmod(0o755)
    node.node_path(INSTALL + "/nvidia-container-toolkit").unlink()
    assert in_place(node) is None


def test_a_noexec_or_unread_mount_table_goes_to_the_module(node):
    table = node.node_path("/proc/self/mountinfo")
    text = table.read_text()
    table.write_text(text.replace("/home/kubernetes/bin rw,nosuid,nodev,relatime", "/home/kubernetes/bin rw,nosuid,nodev,noexec,relatime"))
    assert in_place(node) is None
    table.unlink()
    assert in_place(node) is None
    table.write_text(text)
    assert in_place(node) is not None


def test_a_manifest_not_read_ahead_or_garbled_goes_to_the_module(node):
    look = node_reads.read_ahead(NodeRoot(str(node.root)), installs=[INSTALL])
    read_ahead = json.loads(json.dumps(dict(look, host_root=str(node.root))))
    tree = toolkit_source.read_source(str(node.node_path(SOURCES)), run_tool)
    args = {"host_root": str(node.root), "install_dir": INSTALL, "low_level_runtime": "runc", "config_path": None}
    assert ActionModule._in_place(tree, args, read_ahead) is None
    assert ActionModule._in_place(tree, args, None) is None
    node.node_path(INSTALL + "/.toolkit-manifest.json").write_text("{not json")
    assert in_place(node) is None


def test_a_group_writable_install_dir_is_still_warned_about(node, monkeypatch):
    node.node_path(INSTALL).chmod(0o775)
    answered = in_place(node)
    checked, _failed = module_run(node, monkeypatch)
    assert any("group- or world-writable" in w for w in answered["warnings"])
    assert any("group- or world-writable" in w for w in checked["warnings"])
