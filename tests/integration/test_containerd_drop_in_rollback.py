"""The restart rollback in drop-in mode (issue 12): each file goes back from its own backup.

containerd_runtime used to return the first backup it made as ``backup_file``, and the rollback
copied that over ``config.toml``. In drop-in mode the first backup can be the drop-in's, so a failed
restart replaced the root config with the drop-in; and a drop-in the run had created stayed behind.
Here the containerd role runs with the real ``ansible-playbook`` in drop-in mode on a node tree
holding GKE's config; the restart command does nothing and the health command always fails, so
every restart "does not come back" and the rollback runs.
"""

from __future__ import annotations

import hashlib
import os
import stat

import pytest
import tomlkit
import yaml
from ansible_runner import recap, run_module, run_playbook
from fakenode import GKE_CONTAINERD_CONFIG

CONFIG = "/etc/containerd/config.toml"
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"


@pytest.fixture
def node(tmp_path):
    root = tmp_path / "node"
    config = root / CONFIG.lstrip("/")
    config.parent.mkdir(parents=True)
    config.write_text(GKE_CONTAINERD_CONFIG)
    (root / DROP_IN.lstrip("/")).parent.mkdir()
    return root


def snapshot(directory):
    """Every entry under ``directory``: type, mode and, for files, the content's hash."""
    entries = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            entry = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode))
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    entry += (hashlib.sha256(handle.read()).hexdigest(),)
            entries[os.path.relpath(path, directory)] = entry
    return entries


def without_backups(entries):
    """The snapshot less the timestamped backup copies (``<file>.<pid>.<date>~``) the run leaves."""
    return {name: entry for name, entry in entries.items() if not name.endswith("~")}


def converge(tmp_path, root, healthy, **extra):
    playbook = tmp_path / "containerd.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "containerd in drop-in mode", "hosts": "all", "gather_facts": False,
        "roles": [{"role": "gpu_node.container_toolkit.containerd"}],
    }]))
    variables = {
        "containerd_host_root": str(root), "containerd_drop_in": DROP_IN,
        "containerd_install_dir": "/home/kubernetes/bin/nvidia/toolkit",
        "containerd_restart_mode": "command", "containerd_restart_command": "true",
        "containerd_health_command": ("true %s" if healthy else "false %s"), "containerd_restart_timeout": 1,
    }
    variables.update(extra)
    return run_playbook(playbook, extra_vars=variables)


def _failed_and_rolled_back(proc):
    assert proc.returncode != 0, proc.stdout[-4000:]
    assert recap(proc.stdout)["localhost"]["failed"] == 1
    text = " ".join(proc.stdout.split())
    assert "containerd did not come back after its configuration changed" in text, proc.stdout[-4000:]
    return text


def test_rollback_removes_the_drop_in_it_created_and_restores_the_root(tmp_path, node):
    etc = node / "etc" / "containerd"
    before = snapshot(etc)
    assert "conf.d/99-nvidia.toml" not in before

    text = _failed_and_rolled_back(converge(tmp_path, node, healthy=False))
    assert without_backups(snapshot(etc)) == before
    assert (node / CONFIG.lstrip("/")).read_text() == GKE_CONTAINERD_CONFIG
    assert "Rolled back to the previous configuration" in text
    assert "removed %s, which this run created" % DROP_IN in text
    assert "restored %s from %s." % (CONFIG, CONFIG) in text


def test_rollback_of_a_drop_in_change_keeps_the_root_config(tmp_path, node):
    """The root already imports the drop-in, so only the drop-in changes and is backed up: the old
    rollback copied the drop-in's backup over config.toml."""
    proc = converge(tmp_path, node, healthy=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    config = node / CONFIG.lstrip("/")
    assert tomlkit.parse(config.read_text())["imports"] == [DROP_IN]
    etc = node / "etc" / "containerd"
    before = without_backups(snapshot(etc))

    text = _failed_and_rolled_back(converge(tmp_path, node, healthy=False, containerd_set_as_default=True))
    assert tomlkit.parse(config.read_text())["imports"] == [DROP_IN]
    assert without_backups(snapshot(etc)) == before
    assert 'default_runtime_name = "runc"' in (node / DROP_IN.lstrip("/")).read_text()
    assert "restored %s from %s." % (DROP_IN, DROP_IN) in text
    assert "restored %s" % CONFIG not in text


def test_backup_files_name_each_file_with_its_own_backup(tmp_path, node):
    """The module's result: ``backup_files`` maps each written file to its backup (null: created
    by this run); ``backup_file`` is only ever the root config's backup."""
    args = {"host_root": str(node), "path": CONFIG, "drop_in": DROP_IN, "backup": True}
    first = run_module("containerd_runtime", args)
    assert first["_rc"] == 0 and first["changed"] is True, first
    assert sorted(first["backup_files"]) == [DROP_IN, CONFIG]
    assert first["backup_files"][DROP_IN] is None
    assert first["backup_file"] == first["backup_files"][CONFIG]
    assert (node / first["backup_file"].lstrip("/")).read_text() == GKE_CONTAINERD_CONFIG

    drop_in_text = (node / DROP_IN.lstrip("/")).read_text()
    second = run_module("containerd_runtime", dict(args, set_as_default=True))
    assert second["_rc"] == 0 and second["changed"] is True, second
    assert list(second["backup_files"]) == [DROP_IN]
    assert (node / second["backup_files"][DROP_IN].lstrip("/")).read_text() == drop_in_text
    assert "backup_file" not in second

    check = run_module("containerd_runtime", dict(args, set_as_default=False), check=True)
    assert check["changed"] is True and "backup_files" not in check and "backup_file" not in check
    unchanged = run_module("containerd_runtime", dict(args, set_as_default=True))
    assert unchanged["changed"] is False and "backup_files" not in unchanged
