# -*- coding: utf-8 -*-
"""The engine transaction (plugin_utils/engine.py) through the real engine action plugins, in this
process: every node read and write goes through the real modules (node_files_info, node_file_write,
ansible.builtin.file, find, command), run here on a directory used as host_root. The integration
tests run the same through the ansible command; here the transaction's branches are measured."""

from __future__ import annotations

import types

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.modules import command, file, find
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.action import containerd_runtime, crio_runtime, docker_runtime
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs, ownership
from ansible_collections.gpu_node.container_toolkit.plugins.modules import node_file_write, node_files_info

MAINS = {
    "gpu_node.container_toolkit.node_files_info": node_files_info.main,
    "gpu_node.container_toolkit.node_file_write": node_file_write.main,
    "ansible.builtin.file": file.main,
    "ansible.builtin.find": find.main,
    "ansible.builtin.command": command.main,
}
ACTIONS = {
    "containerd_runtime": (containerd_runtime.ActionModule, argument_specs.containerd_runtime),
    "docker_runtime": (docker_runtime.ActionModule, argument_specs.docker_runtime),
    "crio_runtime": (crio_runtime.ActionModule, argument_specs.crio_runtime),
}


def converge(monkeypatch, name, args, check=False, diff=False):
    """One task of the engine module ``name``: its action plugin, with the node's modules run here."""
    cls, spec = ACTIONS[name]
    validated = ArgumentSpecValidator(spec()).validate(args)
    assert not validated.error_messages, validated.error_messages
    action = cls.__new__(cls)
    action._task = types.SimpleNamespace(check_mode=check, diff=diff)

    def run(module, module_args, _task_vars):
        result, _failed = run_module(MAINS[module], module_args, check_mode=check, monkeypatch=monkeypatch)
        return result

    action.run_module = run
    return action.converge(validated.validated_parameters, {})


def test_containerd_made_from_nothing_goes_with_its_directories_and_backups(tmp_path, monkeypatch):
    root = str(tmp_path)
    made = converge(monkeypatch, "containerd_runtime", {"host_root": root, "backup": True, "config_version": "2"},
                    diff=True)
    config = tmp_path / "etc/containerd/config.toml"
    assert made["changed"] and made["restart_required"] and config.read_text().startswith(ownership.CREATED)
    assert made["backup_files"] == {"/etc/containerd/config.toml": None} and "backup_file" not in made
    assert made["diff"][0]["after"].startswith(ownership.CREATED)
    settings = {"host_root": root, "backup": True, "set_as_default": True, "config_version": "2"}
    again = converge(monkeypatch, "containerd_runtime", settings)
    assert again["changed"] and again["backup_file"].startswith("/etc/containerd/config.toml.")
    check = converge(monkeypatch, "containerd_runtime", {"host_root": root, "state": "absent", "remove_backups": True},
                     check=True)
    assert check["changed"] and check["removed_backups"] == [again["backup_file"]] and config.exists()
    assert "directory /etc/containerd: created by this module (removed when empty)" in check["changes"]
    gone = converge(monkeypatch, "containerd_runtime", {"host_root": root, "state": "absent", "remove_backups": True})
    assert gone["changed"] and gone["restart_required"] is True
    assert gone["removed_backups"] == [again["backup_file"]]
    assert sorted(gone["removed_dirs"]) == ["/etc", "/etc/containerd"] and list(tmp_path.iterdir()) == []
    nothing = converge(monkeypatch, "containerd_runtime", dict(settings, state="absent", remove_backups=True))
    assert not nothing["changed"] and nothing["removed_backups"] == [] and "does not exist" in nothing["msg"]


def test_docker_keeps_a_copy_of_the_journal_it_removes_and_its_own_copies_are_found_again(tmp_path, monkeypatch):
    root = str(tmp_path)
    daemon = tmp_path / "etc/docker/daemon.json"
    daemon.parent.mkdir(parents=True)
    daemon.write_text('{\n    "debug": true\n}\n')
    made = converge(monkeypatch, "docker_runtime", {"host_root": root, "backup": True, "set_as_default": True})
    journal = "/etc/docker/.daemon.json.gpu_node.container_toolkit.json"
    assert made["changed"] and made["restart_required"] and made["journal"] == journal
    assert made["backup_files"][journal] is None and made["backup_files"]["/etc/docker/daemon.json"]
    removed = converge(monkeypatch, "docker_runtime", {"host_root": root, "state": "absent", "backup": True})
    assert daemon.read_text() == '{\n    "debug": true\n}\n' and not (tmp_path / journal.lstrip("/")).exists()
    kept = removed["backup_files"][journal]
    assert (tmp_path / kept.lstrip("/")).read_text().startswith("{") and removed["restart_required"]
    clean = converge(monkeypatch, "docker_runtime", {"host_root": root, "state": "absent", "remove_backups": True})
    assert clean["changed"] and kept in clean["removed_backups"]
    assert sorted(p.name for p in daemon.parent.iterdir()) == ["daemon.json"]


def test_crio_keeps_a_hand_changed_drop_in_whatever_backup_says(tmp_path, monkeypatch):
    root = str(tmp_path)
    made = converge(monkeypatch, "crio_runtime", {"host_root": root})
    path = tmp_path / "etc/crio/crio.conf.d/99-nvidia.toml"
    assert made["changed"] and made["changes"] == ["/etc/crio/crio.conf.d/99-nvidia.toml: created"]
    edited = path.read_text() + "# mine\n"
    path.write_text(edited)
    check = converge(monkeypatch, "crio_runtime", {"host_root": root, "state": "absent"}, check=True)
    assert any(w.endswith("a copy would be kept") for w in check["warnings"]) and path.read_text() == edited
    gone = converge(monkeypatch, "crio_runtime", {"host_root": root, "state": "absent", "backup": True})
    [copy] = (tmp_path / "etc/crio").glob(".99-nvidia.toml.*~")
    assert copy.read_text() == edited and not path.exists()
    assert gone["backup_files"] == {"/etc/crio/crio.conf.d/99-nvidia.toml": "/etc/crio/" + copy.name}
    assert gone["warnings"] == ["/etc/crio/crio.conf.d/99-nvidia.toml was changed by hand since this module wrote "
                                "it; a copy of it as it was is at /etc/crio/" + copy.name]


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_a_run_that_changes_nothing_writes_nothing_and_restarts_nothing(tmp_path, monkeypatch, name):
    root = str(tmp_path)
    extra = {"config_version": "2"} if name == "containerd_runtime" else {}
    converge(monkeypatch, name, dict(extra, host_root=root))
    again = converge(monkeypatch, name, dict(extra, host_root=root), diff=True)
    assert again["changed"] is False and again["restart_required"] is False and "diff" not in again
