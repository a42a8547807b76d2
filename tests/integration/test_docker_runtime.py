# -*- coding: utf-8 -*-
"""docker_runtime through real ansible, checked by a real dockerd (Debian's docker.io, 20.10.24).

Each test puts a documented daemon.json (tests/fixtures/docker/SOURCES.md) on a simulated node, lets
the module edit it as on a node, and starts dockerd on the result (tests/support/dockerd.py: data,
exec root, pid file and socket under a temp dir); ``docker info`` says which runtimes it loaded.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import dockerd
import pytest
from ansible_runner import run_module

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "docker"
CONFIG = "/etc/docker/daemon.json"
JOURNAL = "/etc/docker/.daemon.json.gpu_node.container_toolkit.json"
COS_TOOLKIT = "/home/kubernetes/bin/nvidia/toolkit"
NVIDIA = {
    "nvidia": COS_TOOLKIT + "/nvidia-container-runtime",
    "nvidia-cdi": COS_TOOLKIT + "/nvidia-container-runtime.cdi",
    "nvidia-legacy": COS_TOOLKIT + "/nvidia-container-runtime.legacy",
}
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.glob("*.json"))

needs_dockerd = pytest.mark.skipif(dockerd.missing_prerequisite() is not None, reason=str(dockerd.missing_prerequisite()))


@pytest.fixture
def daemon():
    """A factory: ``daemon(config_file)`` -> an unstarted :class:`dockerd.Dockerd`, cleaned up after the test."""
    made = []

    def make(config_file):
        made.append(dockerd.Dockerd(config_file))
        return made[-1]

    yield make
    for one in made:
        one.cleanup()


def node_with(root, text):
    config = Path(root) / CONFIG.lstrip("/")
    config.parent.mkdir(parents=True, exist_ok=True)
    if text is not None:
        config.write_text(text)
    return config


def four_runs(args):
    """check, real, check, real: the changed flags must be true, true, false, false."""
    results = [run_module("docker_runtime", args, check=check) for check in (True, False, True, False)]
    for result in results:
        assert result["_rc"] == 0, result
    assert [r["changed"] for r in results] == [True, True, False, False]
    assert [r["restart_required"] for r in results] == [True, True, False, False]
    return results


@needs_dockerd
@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_each_fixture_edited_loaded_by_dockerd_and_given_back(tmp_path, daemon, name):
    original = (FIXTURES / name).read_text()
    config = node_with(tmp_path, original)
    with daemon(config):
        pass  # the fixture as documented is accepted by the real dockerd
    args = {"host_root": str(tmp_path), "install_dir": COS_TOOLKIT, "set_as_default": True, "enable_cdi": True}
    results = four_runs(args)
    assert {"path": CONFIG, "action": "updated", "setting": "runtime nvidia-cdi",
            "reason": "missing (added, path %s)" % NVIDIA["nvidia-cdi"]} in results[1]["changes"]
    assert results[1]["path"] == CONFIG and results[1]["journal"] == JOURNAL
    assert (tmp_path / JOURNAL.lstrip("/")).stat().st_mode & 0o777 == 0o600

    before = json.loads(original)
    with daemon(config) as engine:
        runtimes = engine.runtimes()
        info = engine.info()
    for runtime, path in NVIDIA.items():
        assert runtimes[runtime]["path"] == path
        assert "runtimeArgs" not in runtimes[runtime]  # "args": [] is not what dockerd reads
    assert info["DefaultRuntime"] == "nvidia"
    for runtime, entry in (before.get("runtimes") or {}).items():
        if runtime not in NVIDIA:
            assert runtimes[runtime]["path"] == entry["path"]
            if entry.get("runtimeArgs"):
                assert runtimes[runtime]["runtimeArgs"] == entry["runtimeArgs"]
    if "live-restore" in before:
        assert info["LiveRestoreEnabled"] is True

    removed = run_module("docker_runtime", dict(args, state="absent"), diff=True)
    assert removed["_rc"] == 0 and removed["changed"] is True and removed["restart_required"] is True
    assert [line for line in removed["_diff_text"].splitlines() if line.startswith("-") and '"default-runtime"' in line]
    assert config.read_text() == original
    assert not (tmp_path / JOURNAL.lstrip("/")).exists()
    again = run_module("docker_runtime", dict(args, state="absent"))
    assert again["changed"] is False and again["restart_required"] is False


@needs_dockerd
def test_created_from_nothing_and_removed_with_its_directory(tmp_path, daemon):
    args = {"host_root": str(tmp_path), "enable_cdi": True, "backup": True}
    results = four_runs(args)
    assert results[1]["backup_files"] == {CONFIG: None, JOURNAL: None}
    config = tmp_path / CONFIG.lstrip("/")
    with daemon(config) as engine:
        runtimes = engine.runtimes()
    assert runtimes["nvidia"]["path"] == "/usr/local/nvidia/toolkit/nvidia-container-runtime"
    assert {"nvidia", "nvidia-cdi", "nvidia-legacy", "runc"} <= set(runtimes)

    removed = run_module("docker_runtime", dict(args, state="absent"))
    # A rollback of the removal would need the journal: its copy stays, and so do the directories.
    journal_copy = removed["backup_files"][JOURNAL]
    assert removed["changed"] is True and list(removed["backup_files"]) == [JOURNAL]
    assert [p.name for p in (tmp_path / "etc/docker").iterdir()] == [journal_copy.rsplit("/", 1)[1]]
    # Once the engine runs on the given-back node, the copies go, then the directories the write
    # made (the node had no /etc either), deepest first.
    cleaned = run_module("docker_runtime", dict(args, state="absent", remove_backups=True))
    assert cleaned["changed"] is True and cleaned["removed_backups"] == [journal_copy]
    assert cleaned["removed_dirs"] == ["/etc/docker", "/etc"]
    assert list(tmp_path.iterdir()) == []
    assert run_module("docker_runtime", dict(args, state="absent", remove_backups=True))["changed"] is False


def test_remove_backups_leaves_the_directory_as_it_was_found(tmp_path):
    """Provision, change the default, uninstall with backups each time: only the copies this module
    made go, a copy someone else made stays, and the file is the original byte for byte."""
    original = '{\n  "log-level": "warn"\n}\n'
    config = node_with(tmp_path, original)
    theirs = config.with_name("daemon.json.1.2020-01-01@00:00:00~")
    theirs.write_text('{"debug": true}\n')
    before = sorted(p.name for p in config.parent.iterdir())
    args = {"host_root": str(tmp_path), "backup": True}
    assert run_module("docker_runtime", args)["changed"] is True
    assert run_module("docker_runtime", dict(args, set_as_default=True))["changed"] is True
    removed = run_module("docker_runtime", dict(args, state="absent"))
    assert removed["changed"] is True and config.read_text() == original
    copies = sorted(set(p.name for p in config.parent.iterdir()) - set(before))
    # The original, the first and the second edit's texts, and two journals (before the second
    # edit, and before its removal).
    assert len(copies) == 5, copies
    check = run_module("docker_runtime", dict(args, state="absent", remove_backups=True), check=True)
    assert check["changed"] is True and len(check["removed_backups"]) == 5
    assert len(list(config.parent.iterdir())) == len(before) + 5
    cleaned = run_module("docker_runtime", dict(args, state="absent", remove_backups=True))
    assert sorted(p.rsplit("/", 1)[1] for p in cleaned["removed_backups"]) == copies
    assert sorted(p.name for p in config.parent.iterdir()) == before
    assert config.read_text() == original and theirs.read_text() == '{"debug": true}\n'


@needs_dockerd
def test_sighup_reloads_the_runtimes(tmp_path, daemon):
    """The module's docs say SIGHUP is enough for runtimes and default-runtime: dockerd 20.10 shows it."""
    config = node_with(tmp_path, (FIXTURES / "docker-docs-logging.json").read_text())
    with daemon(config) as engine:
        assert "nvidia" not in engine.runtimes()
        result = run_module("docker_runtime", {"host_root": str(tmp_path), "set_as_default": True})
        assert result["restart_required"] is True
        engine.reload()
        deadline = time.monotonic() + 10
        while "nvidia" not in engine.runtimes() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert engine.runtimes()["nvidia-legacy"]["path"] == "/usr/local/nvidia/toolkit/nvidia-container-runtime.legacy"
        assert engine.info()["DefaultRuntime"] == "nvidia"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{\n  "runtimes": [\n    "nvidia"\n  ]\n}\n', ["runtimes must be an object", "an array", "line 2"]),
        ('{\n  "debug": true,\n  "debug": false\n}\n', ["duplicate key 'debug'", "line 3"]),
        ("[]\n", ["must hold one JSON object"]),
        ('{\n  "features": {"cdi": "yes"}\n}\n', ["features.cdi must be a boolean"]),
    ],
)
def test_refused_file_is_left_byte_for_byte(tmp_path, text, words):
    config = node_with(tmp_path, text)
    result = run_module("docker_runtime", {"host_root": str(tmp_path), "enable_cdi": True})
    assert result["_rc"] != 0 and result["changed"] is False
    assert result["msg"].startswith(CONFIG) and result["msg"].endswith("the file was left as it was"), result["msg"]
    for word in words:
        assert word in result["msg"]
    assert config.read_text() == text
    assert sorted(p.name for p in config.parent.iterdir()) == ["daemon.json"]


def test_symlinked_config_edits_the_target_and_keeps_the_journal_next_to_the_link(tmp_path):
    target = tmp_path / "var" / "lib" / "docker-config" / "daemon.json"
    target.parent.mkdir(parents=True)
    original = (FIXTURES / "registry-mirror-tabs.json").read_text()
    target.write_text(original)
    link = tmp_path / CONFIG.lstrip("/")
    link.parent.mkdir(parents=True)
    link.symlink_to("/var/lib/docker-config/daemon.json")
    result = run_module("docker_runtime", {"host_root": str(tmp_path)})
    assert result["changed"] is True and result["path"] == "/var/lib/docker-config/daemon.json"
    assert result["symlinks"] == ["%s is a symlink; edited its target /var/lib/docker-config/daemon.json" % CONFIG]
    assert link.is_symlink() and '\t\t"nvidia": {' in target.read_text()
    assert (tmp_path / JOURNAL.lstrip("/")).is_file()
    assert run_module("docker_runtime", {"host_root": str(tmp_path), "state": "absent"})["changed"] is True
    assert target.read_text() == original and link.is_symlink()


def test_edited_since_absent_keeps_the_other_edits(tmp_path):
    original = (FIXTURES / "docker-docs-runtimes.json").read_text()
    config = node_with(tmp_path, original)
    args = {"host_root": str(tmp_path), "set_as_default": True}
    assert run_module("docker_runtime", args)["changed"] is True
    data = json.loads(config.read_text())
    data["debug"] = True
    config.write_text(json.dumps(data, indent=2) + "\n")  # someone else rewrote it, other layout
    removed = run_module("docker_runtime", dict(args, state="absent"))
    assert removed["changed"] is True
    assert json.loads(config.read_text()) == dict(json.loads(original), debug=True)


@needs_dockerd
def test_dockerd_facts_the_module_relies_on(tmp_path, daemon):
    """What dockerd 20.10 refuses and accepts, as the module's docs and checks say."""
    cases = {
        "empty": ("", "EOF"),
        "unknown-top-level": ('{"gpu_node_journal": {"original": null}}', "don't match any configuration option"),
        "runc": ('{"runtimes": {"runc": {"path": "/usr/sbin/runc"}}}', "runtime name 'runc' is reserved"),
        "array": ('{"runtimes": []}', "cannot unmarshal array"),
        "default-missing": ('{"default-runtime": "nvidia"}', "specified default runtime 'nvidia' does not exist"),
    }
    for name, (text, refusal) in cases.items():
        path = tmp_path / (name + ".json")
        path.write_text(text)
        with pytest.raises(dockerd.DockerdFailed) as failed:
            daemon(path).start()
        assert refusal in failed.value.log, (name, failed.value.log[-2000:])
    accepted = tmp_path / "accepted.json"
    accepted.write_text('{"features": {"cdi": true, "not-a-feature": false}, "runtimes": {"a": {"path": "/x", '
                        '"args": ["--ignored"]}, "b": {"path": "/y", "runtimeArgs": ["--debug"]}}}')  # fmt: skip
    with daemon(accepted) as engine:
        runtimes = engine.runtimes()
    assert runtimes["a"] == {"path": "/x"} and runtimes["b"] == {"path": "/y", "runtimeArgs": ["--debug"]}
