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

from ansible_collections.gpu_node.container_toolkit.plugins.action import containerd_runtime, crio_runtime, docker_runtime, k3s_runtime
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
    "k3s_runtime": (k3s_runtime.ActionModule, argument_specs.k3s_runtime),
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
    assert {"path": "/etc/containerd", "action": "removed",
            "reason": "created by this module; removed only when empty"} in check["changes"]
    assert {"path": again["backup_file"], "action": "removed", "reason": "a backup made by this module"} in check["changes"]
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
    assert made["changed"] and made["changes"] == [{"path": "/etc/crio/crio.conf.d/99-nvidia.toml", "action": "created"}]
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


def test_k3s_files_come_and_go_with_their_directories_and_a_hand_changed_one_is_kept(tmp_path, monkeypatch):
    root = str(tmp_path)
    config = tmp_path / "var/lib/rancher/rke2/agent/etc/containerd/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "overlayfs"\n')
    settings = {"host_root": root, "set_as_default": True, "install_dir": "/opt/nvidia/toolkit", "backup": True}
    check = converge(monkeypatch, "k3s_runtime", settings, check=True, diff=True)
    assert check["changed"] and check["distribution"] == "rke2" and check["service"] == "rke2-server"
    assert not (tmp_path / "etc").exists() and len(check["diff"]) == 2
    made = converge(monkeypatch, "k3s_runtime", settings)
    drop_in = tmp_path / "etc/rancher/rke2/config.yaml.d/99-gpu-node-container-toolkit.yaml"
    template = config.parent / "config.toml.tmpl"
    assert made["restart_required"] and made["extra_runtimes"] == ["nvidia"] and made["template"] == "/" + str(
        template.relative_to(tmp_path))
    assert made["backup_files"] == {"/etc/rancher/rke2/config.yaml.d/99-gpu-node-container-toolkit.yaml": None,
                                    "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl": None}
    # Not restarted yet: the generated config says nothing of them.
    assert made["generated_problems"] == ["runtime nvidia is missing", "default_runtime_name is None, not 'nvidia'"]
    assert not made["generated_ok"]
    again = converge(monkeypatch, "k3s_runtime", settings)
    assert not again["changed"] and not again["restart_required"]
    drop_in.write_text(drop_in.read_text().replace("nvidia", "crun"))
    gone = converge(monkeypatch, "k3s_runtime", {"host_root": root, "state": "absent"})
    assert [w for w in gone["warnings"] if "changed by hand" in w]
    assert not drop_in.exists() and not template.exists()
    # The copy stays beside the drop-in (k3s/RKE2 read only *.yaml there), so its directory stays too.
    assert gone["removed_dirs"] == []
    assert {"path": "/etc/rancher/rke2/config.yaml.d", "action": "kept",
            "reason": "created by this module; not empty"} in gone["changes"]
    [copy] = (tmp_path / "etc/rancher/rke2/config.yaml.d").glob("99-gpu-node-container-toolkit.yaml.*~")
    assert "default-runtime: crun" in copy.read_text()


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_a_run_that_changes_nothing_writes_nothing_and_restarts_nothing(tmp_path, monkeypatch, name):
    root = str(tmp_path)
    extra = {"containerd_runtime": {"config_version": "2"}, "k3s_runtime": {"distribution": "k3s"}}.get(name, {})
    converge(monkeypatch, name, dict(extra, host_root=root))
    again = converge(monkeypatch, name, dict(extra, host_root=root), diff=True)
    assert again["changed"] is False and again["restart_required"] is False and "diff" not in again
