# -*- coding: utf-8 -*-
"""The filters that give the roles the modules' own paths and rules."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_node.container_toolkit.plugins.filter import node_layout
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config, runtimes


def test_the_filters_are_registered_under_their_documented_names():
    assert sorted(node_layout.FilterModule().filters()) == [
        "docker_journal_path", "engine_restart_script", "gpu_node_choices", "read_ahead_paths", "restart_problem",
        "toolkit_binaries"]


def test_the_journal_path_is_the_modules_own():
    assert node_layout.docker_journal_path("/etc/docker//daemon.json") == docker_config.journal_path(
        "/etc/docker/daemon.json") == "/etc/docker/.daemon.json.gpu_node.container_toolkit.json"
    with pytest.raises(AnsibleFilterError, match="docker_journal_path's input must be a non-empty path"):
        node_layout.docker_journal_path("")


def test_toolkit_binaries_are_what_the_default_runtimes_run():
    paths = node_layout.toolkit_binaries("/opt/t/")
    assert paths == [r["binary"] for r in runtimes.default_runtimes("/opt/t")]
    assert node_layout.toolkit_binaries("/opt/t", cdi=True)[-1] == "/opt/t/nvidia-cdi-hook"


def test_read_ahead_names_each_install_dirs_files_once():
    paths = node_layout.read_ahead_paths(["/a", "/b/"], ["/etc/containerd/config.toml", "/etc/containerd/config.toml"],
                                         "/etc/docker/daemon.json")
    assert paths["files"] == [
        "/a/.toolkit-manifest.json", "/b/.toolkit-manifest.json",
        "/a/.config/nvidia-container-runtime/config.toml", "/b/.config/nvidia-container-runtime/config.toml",
        "/etc/containerd/config.toml", "/etc/docker/daemon.json",
        "/etc/docker/.daemon.json.gpu_node.container_toolkit.json"]
    assert paths["trees"] == ["/a/.gpu-node", "/b/.gpu-node", "/etc/cdi", "/var/run/cdi", "/run/cdi"]
    assert paths["installs"] == ["/a", "/b"]
    assert node_layout.read_ahead_paths("/a")["files"] == [
        "/a/.toolkit-manifest.json", "/a/.config/nvidia-container-runtime/config.toml"]


@pytest.mark.parametrize("engine, mode, command, systemd, words", [
    ("containerd", "systemd", "", False, "gpu_node_containerd_restart_mode is 'systemd' (the default), but systemd "
                                         "is not PID 1 on node1 (no /run/systemd/system), so restarting containerd"),
    ("docker", "command", "  ", True, "gpu_node_docker_restart_mode is 'command' but gpu_node_docker_restart_command "
                                      "is empty. Nothing was changed. Set gpu_node_docker_restart_command to a shell "
                                      "command that restarts dockerd"),
    ("crio", "systemd", "", True, ""),
    ("crio", "command", "systemctl restart crio", False, ""),
    ("containerd", "none", "", False, ""),
])
def test_a_restart_that_cannot_work_is_named_before_anything_changes(engine, mode, command, systemd, words):
    problem = node_layout.restart_problem(engine, mode, command, systemd, "gpu_node_%s_" % engine, "node1")
    assert (words in problem) if words else problem == ""
    assert bool(problem) == bool(words)
