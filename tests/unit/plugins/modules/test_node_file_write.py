from __future__ import annotations

import os
import stat

from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.modules import node_file_write

PATH = "/etc/containerd/config.toml"


def _write(tmp_path, monkeypatch, check_mode=False, **args):
    return run_module(node_file_write.main, dict({"host_root": str(tmp_path), "path": PATH}, **args),
                      check_mode=check_mode, monkeypatch=monkeypatch)


def test_creates_file_and_directories_then_no_change(tmp_path, monkeypatch):
    result, failed = _write(tmp_path, monkeypatch, check_mode=True, content="version = 2\n")
    assert not failed and result["changed"] and result["dirs_created"] == ["/etc", "/etc/containerd"]
    assert not (tmp_path / "etc").exists()

    result, failed = _write(tmp_path, monkeypatch, content="version = 2\n", mode="0600")
    target = tmp_path / PATH.lstrip("/")
    assert not failed and result["changed"] and target.read_text() == "version = 2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "etc" / "containerd").stat().st_mode) == 0o755

    result, failed = _write(tmp_path, monkeypatch, content="version = 2\n")
    assert not failed and not result["changed"] and result["dirs_created"] == []


def test_replace_keeps_mode_and_makes_backup(tmp_path, monkeypatch):
    target = tmp_path / PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text("old\n")
    os.chmod(target, 0o640)
    inode = target.stat().st_ino
    result, failed = _write(tmp_path, monkeypatch, content="new\n", backup=True, mode="0600")
    assert not failed and result["changed"]
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode
    backup = tmp_path / result["backup_file"].lstrip("/")
    assert result["backup_file"].startswith(PATH + ".") and backup.read_text() == "old\n"
    assert sorted(p.name for p in target.parent.iterdir()) == sorted([target.name, backup.name])


def test_failing_validate_leaves_the_file(tmp_path, monkeypatch):
    target = tmp_path / PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text("old\n")
    result, failed = _write(tmp_path, monkeypatch, content="new\n", validate="sh -c 'grep -q old %s || exit 4'")
    assert failed and "failed to validate (rc 4" in result["msg"] and PATH in result["msg"]
    assert target.read_text() == "old\n" and os.listdir(target.parent) == [target.name]

    result, failed = _write(tmp_path, monkeypatch, content="new\n", validate="true")
    assert failed and "must contain %s" in result["msg"] and target.read_text() == "old\n"

    result, failed = _write(tmp_path, monkeypatch, content="new\n", validate="grep -q new %s")
    assert not failed and result["changed"] and target.read_text() == "new\n"


def test_refusals(tmp_path, monkeypatch):
    result, failed = _write(tmp_path, monkeypatch, content="x", make_dirs=False)
    assert failed and "does not exist" in result["msg"] and not (tmp_path / "etc").exists()

    result, failed = _write(tmp_path, monkeypatch, content="x", mode="rw")
    assert failed and "mode must be octal" in result["msg"]

    (tmp_path / PATH.lstrip("/")).mkdir(parents=True)
    result, failed = _write(tmp_path, monkeypatch, content="x")
    assert failed and "is a directory" in result["msg"]
