# -*- coding: utf-8 -*-
"""The engine restart in this process: the script of the engine_restart_script filter runs in a real
/bin/sh, as ansible.builtin.raw runs it, and engine_restart's action plugin takes its result; the
rollback's reads, writes and second restart go through the real node modules, on a directory used as
host_root. The "engine" is a file standing in for its socket, which the restart command makes (or not)."""

from __future__ import annotations

import subprocess
import types

import pytest
from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.modules import command, file, find
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.action import engine_restart
from ansible_collections.gpu_node.container_toolkit.plugins.filter.node_layout import engine_restart_script
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.modules import node_file_write, node_files_info

MAINS = {
    "gpu_node.container_toolkit.node_files_info": node_files_info.main,
    "gpu_node.container_toolkit.node_file_write": node_file_write.main,
    "ansible.builtin.file": file.main,
    "ansible.builtin.find": find.main,
    "ansible.builtin.command": command.main,
}
SOCKET = "/run/engine.sock"


def raw(script):
    """What ansible.builtin.raw registers for the script (rc and stdout)."""
    done = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=30, check=False)
    return {"rc": done.returncode, "stdout": done.stdout, "changed": True}


def script(root, restart_command, health_command="test -e %s", timeout=0):
    return engine_restart_script("unused", "command", SOCKET, health_command, command=restart_command,
                                 timeout=timeout, host_root=str(root))


def roll_back(monkeypatch, args, check=False):
    """One engine_restart task; returns (result, the commands it ran on the node)."""
    validated = ArgumentSpecValidator(argument_specs.engine_restart()).validate(args)
    assert not validated.error_messages, validated.error_messages
    action = engine_restart.ActionModule.__new__(engine_restart.ActionModule)
    action._task = types.SimpleNamespace(check_mode=check, diff=False)
    commands = []

    def run(module, module_args, _task_vars):
        if module == "ansible.builtin.command":
            commands.append(module_args["argv"])
        result, _failed = run_module(MAINS[module], module_args, check_mode=check, monkeypatch=monkeypatch)
        return result

    action.run_module = run
    return action.converge(validated.validated_parameters, {}), commands


def test_an_engine_that_comes_back_is_left_alone(tmp_path, monkeypatch):
    (tmp_path / "run").mkdir()
    config = tmp_path / "etc/engine.toml"
    config.parent.mkdir()
    config.write_text("new\n")
    restart_script = script(tmp_path, "touch %s/run/engine.sock" % tmp_path)
    restarted = raw(restart_script)
    assert restarted["rc"] == 0 and restarted["stdout"] == ""
    result, commands = roll_back(monkeypatch, {"engine": "containerd", "host_root": str(tmp_path), "restart": restarted,
                                               "restart_script": restart_script,
                                               "backup_files": {"/etc/engine.toml": "/etc/engine.toml.1~"}})
    assert result == {"changed": False, "msg": "containerd answers: nothing to roll back"}
    assert commands == [] and config.read_text() == "new\n"


def test_an_engine_that_does_not_come_back_gets_its_files_back_and_the_host_fails(tmp_path, monkeypatch):
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "engine.toml").write_text("broken\n")
    (etc / "engine.toml").chmod(0o640)
    (etc / "engine.toml.1~").write_text("as it was\n")
    (etc / "drop-in.toml").write_text("made by this run\n")
    backups = {"/etc/drop-in.toml": None, "/etc/engine.toml": "/etc/engine.toml.1~"}
    # The restart works only with the old config back: the second restart answers.
    restart_script = script(tmp_path, "grep -q 'as it was' %s/etc/engine.toml && mkdir -p %s/run && touch %s/run/engine.sock"
                            % ((tmp_path,) * 3))
    restarted = raw(restart_script)
    assert restarted["rc"] == 1
    result, commands = roll_back(monkeypatch, {"engine": "containerd", "host_root": str(tmp_path), "restart": restarted,
                                               "restart_script": restart_script, "backup_files": backups})
    assert result["failed"] and result["changed"] and result["rc"] == 0
    assert commands == [["/bin/sh", "-c", restart_script]]
    assert (etc / "engine.toml").read_text() == "as it was\n" and not (etc / "drop-in.toml").exists()
    assert (etc / "engine.toml").stat().st_mode & 0o777 == 0o640
    assert result["rolled_back"] == backups
    assert result["msg"] == (
        "containerd did not come back after its configuration changed (the restart exited with 1). Rolled back to the "
        "previous configuration: removed /etc/drop-in.toml, which this run created; restored /etc/engine.toml from "
        "/etc/engine.toml.1~; then restarted containerd, which answers again.")


def test_no_answer_in_time_names_the_health_check_error_and_an_engine_still_down(tmp_path, monkeypatch):
    restart_script = script(tmp_path, "true", health_command="ls %s")
    restarted = raw(restart_script)
    result, commands = roll_back(monkeypatch, {"engine": "containerd", "host_root": str(tmp_path), "restart": restarted,
                                               "restart_script": restart_script})
    assert result["failed"] and result["rc"] == 1 and len(commands) == 1
    assert result["rolled_back"] == {}
    assert result["msg"].startswith("containerd did not come back after its configuration changed (ls: ")
    assert "engine.sock" in result["msg"]
    assert "Rolled back to the previous configuration: nothing to roll back, no backup was made; then restarted " \
           "containerd, which does not answer either: ls: " in result["msg"]


def test_silent_failure_says_no_answer_within_the_timeout(tmp_path, monkeypatch):
    restart_script = script(tmp_path, "true", health_command="false %s", timeout=0)
    result, _commands = roll_back(monkeypatch, {"engine": "dockerd", "host_root": str(tmp_path), "timeout": 7,
                                                "restart": raw(restart_script), "restart_script": restart_script})
    assert "dockerd did not come back after its configuration changed (no answer within 7 s)." in result["msg"]


def test_rollback_because_rolls_back_an_engine_that_answers(tmp_path, monkeypatch):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/config.yaml").write_text("default-runtime: nvidia\n")
    reason = "its regenerated /var/lib/rancher/k3s/agent/etc/containerd/config.toml: no runtime nvidia"
    restart_script = script(tmp_path, "mkdir -p %s/run && touch %s/run/engine.sock" % (tmp_path, tmp_path))
    result, commands = roll_back(monkeypatch, {"engine": "k3s", "host_root": str(tmp_path), "restart": raw(restart_script),
                                               "restart_script": restart_script, "rollback_because": reason,
                                               "backup_files": {"/etc/config.yaml": None}})
    assert len(commands) == 1 and not (tmp_path / "etc/config.yaml").exists()
    assert result["msg"] == ("k3s did not come back after its configuration changed (%s). Rolled back to the previous "
                             "configuration: removed /etc/config.yaml, which this run created; then restarted k3s, "
                             "which answers again." % reason)


def test_a_backup_that_is_gone_is_named_and_the_rest_is_still_rolled_back(tmp_path, monkeypatch):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/a.toml").write_text("a\n")
    (tmp_path / "etc/b.toml").write_text("b new\n")
    (tmp_path / "etc/b.toml.1~").write_text("b\n")
    backups = {"/etc/a.toml": "/etc/a.toml.gone~", "/etc/b.toml": "/etc/b.toml.1~"}
    restart_script = script(tmp_path, "false")
    result, _commands = roll_back(monkeypatch, {"engine": "containerd", "host_root": str(tmp_path), "restart": raw(restart_script),
                                                "restart_script": restart_script, "backup_files": backups})
    assert (tmp_path / "etc/b.toml").read_text() == "b\n" and (tmp_path / "etc/a.toml").read_text() == "a\n"
    assert result["rolled_back"] == {"/etc/b.toml": "/etc/b.toml.1~"}
    assert "restored /etc/a.toml" not in result["msg"]
    assert result["msg"].endswith("Not rolled back: /etc/a.toml, whose backup /etc/a.toml.gone~ cannot be read.")


def test_check_mode_runs_nothing(tmp_path, monkeypatch):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/a.toml").write_text("a\n")
    result, commands = roll_back(monkeypatch, {"engine": "containerd", "host_root": str(tmp_path), "restart": {"rc": 1},
                                               "restart_script": "exit 1", "backup_files": {"/etc/a.toml": None}},
                                 check=True)
    assert result["skipped"] and not result["changed"] and commands == []
    assert (tmp_path / "etc/a.toml").exists()


@pytest.mark.parametrize("restart", [None, {"skipped": True, "changed": False}])
def test_without_a_restart_result_it_fails_and_touches_nothing(tmp_path, monkeypatch, restart):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/a.toml").write_text("a\n")
    result, commands = roll_back(monkeypatch, {"engine": "containerd", "host_root": str(tmp_path), "restart": restart,
                                               "restart_script": "exit 1", "backup_files": {"/etc/a.toml": None}})
    assert result["failed"] and "rollback_because is required" in result["msg"]
    assert commands == [] and (tmp_path / "etc/a.toml").exists()


@pytest.mark.parametrize("change,problem", [
    ({"mode": "systemd", "service": ""}, "the engine's systemd unit is empty"),
    ({"mode": "reboot"}, "the restart mode must be one of systemd, command, got 'reboot'"),
    ({"command": "  "}, "the restart command is empty"),
    ({"health_command": "ctr version"}, "the health command must hold %s"),
    ({"timeout": -1}, "the restart timeout must be 0 or more seconds, got -1"),
    ({"timeout": "soon"}, "timeout must be a number of seconds, got 'soon'"),
    ({"socket": ""}, "the engine's socket must be a non-empty path"),
])
def test_settings_that_cannot_make_a_restart_fail_the_filter_naming_them(change, problem):
    settings = dict({"service": "containerd", "mode": "command", "socket": SOCKET, "health_command": "test -e %s",
                     "command": "true", "timeout": 5}, **change)
    with pytest.raises(AnsibleFilterError, match=r"^engine_restart_script: ") as raised:
        engine_restart_script(settings.pop("service"), settings.pop("mode"), settings.pop("socket"),
                              settings.pop("health_command"), **settings)
    assert problem in str(raised.value)


def test_the_systemd_restart_quotes_the_unit_and_each_word_of_the_health_command():
    restart_script = engine_restart_script("k3s agent", "systemd", "/run/k3s/containerd/containerd.sock",
                                           "k3s ctr --address %s version", timeout="30", host_root="/host dir")
    assert "systemctl restart 'k3s agent'\n" in restart_script
    assert "until error=$( k3s ctr --address '/host dir/run/k3s/containerd/containerd.sock' version 2>&1" in restart_script
    assert "deadline=$(( $(date +%s) + 30 ))" in restart_script
