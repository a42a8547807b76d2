# -*- coding: utf-8 -*-
"""persist_files: the copies kept across reboots on COS, over a real host_root tree."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal as ej
from ansible_collections.gpu_node.container_toolkit.plugins.modules import persist_files
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "containerd"
CONFIG = "/etc/containerd/config.toml"
SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"
SPEC2 = "/etc/cdi/nvidia.yaml"
KEPT = "/home/kubernetes/bin/nvidia/toolkit/.gpu-node"
SPEC_COPY = "cdi/var/run/cdi/management.nvidia.com-gpu.yaml"
SPEC2_COPY = "cdi/etc/cdi/nvidia.yaml"
SPEC_TEXT = b"cdiVersion: 0.5.0\nkind: management.nvidia.com/gpu\ndevices: []\n"
REAPPLY = "#!/bin/sh\necho reapplied\n"


def provision(text):
    """What containerd_runtime writes over ``text``: the real editor, with its journal."""
    params = {
        "state": "present", "runtimes": cc.default_runtimes("/home/kubernetes/bin/nvidia/toolkit"),
        "runtime_type": cc.DEFAULT_RUNTIME_TYPE, "set_as_default": False, "enable_cdi": True,
        "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"], "config_version": "auto", "drop_in": None, "path": CONFIG,
    }
    result = ct.edit(text, params)["text"]
    assert result != text and ej.has_journal(result)
    return result


class Node:
    def __init__(self, root):
        self.root = root

    def at(self, host_path):
        return self.root / host_path.lstrip("/")

    def write(self, host_path, data, mode=0o644):
        path = self.at(host_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        os.chmod(path, mode)
        return path

    def kept(self, name=""):
        return self.at(KEPT) / name if name else self.at(KEPT)

    def kept_files(self):
        """{relative name: (bytes, mode)} of every entry under the kept dir (files only; dirs listed too)."""
        found = {}
        for top, dirs, names in os.walk(self.kept()):
            for name in dirs + names:
                path = Path(top) / name
                rel = str(path.relative_to(self.kept()))
                found[rel] = None if path.is_dir() else (path.read_bytes(), stat.S_IMODE(path.lstat().st_mode))
        return found


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path / "root")


def args_for(node, **overrides):
    args = {"host_root": str(node.root), "dir": KEPT, "containerd_config": CONFIG, "cdi_specs": [SPEC],
            "files": {"reapply.sh": REAPPLY, "driver-version": "535.104.12\n"}, "executables": ["reapply.sh"]}
    args.update(overrides)
    return {k: v for k, v in args.items() if v is not None}


def run(args, monkeypatch, check_mode=False, diff=False):
    return run_module(persist_files.main, args, check_mode=check_mode, diff=diff, monkeypatch=monkeypatch)


@pytest.mark.parametrize("kind", ["lf", "crlf", "no-final-newline"])
@pytest.mark.parametrize("fixture", ["gke-cos.toml", "containerd-1.7.34-default.toml", "containerd-2.3.4-default.toml"])
def test_end_to_end_the_base_is_the_original_config_byte_for_byte(node, monkeypatch, fixture, kind):
    original = (FIXTURES / fixture).read_text()
    original = {"lf": original, "crlf": original.replace("\n", "\r\n"), "no-final-newline": original.rstrip("\n")}[kind]
    provisioned = provision(original)
    node.write(CONFIG, provisioned)
    node.write(SPEC, SPEC_TEXT)
    args = args_for(node)

    result, failed = run(args, monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"]
    assert result["dir"] == KEPT
    assert result["changes"] == ["create " + n for n in
                                 sorted(["containerd-base.toml", "containerd-provisioned.toml", SPEC_COPY,
                                         "driver-version", "reapply.sh"])]
    assert not node.kept().exists()  # check mode writes nothing

    result, failed = run(args, monkeypatch, diff=True)
    assert not failed and result["changed"]
    assert node.kept("containerd-base.toml").read_bytes() == original.encode("utf-8")
    assert node.kept("containerd-provisioned.toml").read_bytes() == provisioned.encode("utf-8")
    diffs = {d["after_header"]: d for d in result["diff"]}
    assert diffs[KEPT + "/containerd-base.toml"] == {
        "before_header": KEPT + "/containerd-base.toml", "after_header": KEPT + "/containerd-base.toml",
        "before": "", "after": original}
    assert node.kept_files() == {
        "containerd-base.toml": (original.encode(), 0o644),
        "containerd-provisioned.toml": (provisioned.encode(), 0o644),
        "driver-version": (b"535.104.12\n", 0o644),
        "reapply.sh": (REAPPLY.encode(), 0o755),
        "cdi": None, "cdi/var": None, "cdi/var/run": None, "cdi/var/run/cdi": None,
        SPEC_COPY: (SPEC_TEXT, 0o644),
    }
    # The source files are left as they were.
    assert node.at(CONFIG).read_bytes() == provisioned.encode()

    for check in (True, False):
        result, failed = run(args, monkeypatch, check_mode=check, diff=True)
        assert not failed and not result["changed"], result
        assert result["changes"] == [] and result["diff"] == []


def test_the_base_stays_right_on_a_later_run_that_changed_nothing(node, monkeypatch):
    """The base comes from the journal: a second provisioning run (nothing to change) still keeps it."""
    original = (FIXTURES / "gke-cos.toml").read_text()
    node.write(CONFIG, provision(original))
    node.write(SPEC, SPEC_TEXT)
    run(args_for(node), monkeypatch)
    node.kept("containerd-base.toml").unlink()
    result, failed = run(args_for(node), monkeypatch)
    assert not failed and result["changed"] and result["changes"] == ["create containerd-base.toml"]
    assert node.kept("containerd-base.toml").read_text() == original


def test_a_config_without_journal_keeps_no_base_and_a_stale_base_goes(node, monkeypatch):
    plain = (FIXTURES / "gke-cos.toml").read_text()
    node.write(CONFIG, plain)
    node.write(KEPT + "/containerd-base.toml", "old base\n")
    result, failed = run(args_for(node, cdi_specs=[], files={}), monkeypatch, diff=True)
    assert not failed and result["changed"]
    assert result["changes"] == ["remove containerd-base.toml", "create containerd-provisioned.toml"]
    removed = [d for d in result["diff"] if d["before_header"].endswith("containerd-base.toml")]
    assert removed == [{"before_header": KEPT + "/containerd-base.toml", "after_header": KEPT + "/containerd-base.toml",
                        "before": "old base\n", "after": ""}]
    assert node.kept_files() == {"containerd-provisioned.toml": (plain.encode(), 0o644)}


@pytest.mark.parametrize("containerd_config", [None, "/etc/containerd/missing.toml"])
def test_no_config_or_a_missing_one_is_not_kept(node, monkeypatch, containerd_config):
    node.write(KEPT + "/containerd-provisioned.toml", "old\n")
    node.write(KEPT + "/containerd-base.toml", "old\n")
    result, failed = run(args_for(node, containerd_config=containerd_config, cdi_specs=[], files={"x": "1"}), monkeypatch)
    assert not failed and result["changed"]
    assert result["changes"] == ["remove containerd-base.toml", "remove containerd-provisioned.toml", "create x"]
    assert node.kept_files() == {"x": (b"1", 0o644)}


def test_cdi_specs_omitted_leaves_the_spec_copies_alone(node, monkeypatch):
    node.write(CONFIG, provision((FIXTURES / "gke-cos.toml").read_text()))
    node.write(SPEC, SPEC_TEXT)
    node.write(SPEC2, b"second\n")
    assert not run(args_for(node, cdi_specs=[SPEC, SPEC2]), monkeypatch)[1]
    # The specs change on the node, and a run that writes no specs (--tags containerd) keeps the old copies.
    node.write(SPEC, b"changed\n")
    os.unlink(node.at(SPEC2))
    args = args_for(node)
    del args["cdi_specs"]
    for check in (True, False):
        result, failed = run(args, monkeypatch, check_mode=check)
        assert not failed and not result["changed"] and result["changes"] == []
    assert node.kept(SPEC_COPY).read_bytes() == SPEC_TEXT
    assert node.kept(SPEC2_COPY).read_bytes() == b"second\n"
    # ... while the other kept files are still kept up to date.
    result, failed = run(dict(args, files={"reapply.sh": "#!/bin/sh\n", "driver-version": "535.104.12\n"}), monkeypatch)
    assert not failed and result["changes"] == ["update reapply.sh"]
    assert node.kept(SPEC_COPY).read_bytes() == SPEC_TEXT


def test_stale_spec_copies_are_removed_with_their_empty_dirs(node, monkeypatch):
    node.write(SPEC, SPEC_TEXT)
    node.write(SPEC2, b"second\n")
    args = args_for(node, containerd_config=None, files={})
    changes = run(dict(args, cdi_specs=[SPEC, SPEC2]), monkeypatch)[0]["changes"]
    assert changes == ["create " + SPEC2_COPY, "create " + SPEC_COPY]
    result, failed = run(dict(args, cdi_specs=[SPEC]), monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"] and result["changes"] == ["remove " + SPEC2_COPY]
    assert result["diff"][0]["before"] == "second\n" and result["diff"][0]["after"] == ""
    assert node.kept(SPEC2_COPY).exists()

    result, failed = run(dict(args, cdi_specs=[SPEC]), monkeypatch)
    assert not failed and result["changes"] == ["remove " + SPEC2_COPY]
    assert not node.kept("cdi/etc").exists()  # emptied directories go too
    assert sorted(node.kept_files()) == ["cdi", "cdi/var", "cdi/var/run", "cdi/var/run/cdi", SPEC_COPY]

    result, failed = run(dict(args, cdi_specs=[]), monkeypatch)
    assert not failed and result["changes"] == ["remove " + SPEC_COPY]
    assert node.kept().is_dir() and node.kept_files() == {}


def test_a_spec_that_changed_is_updated(node, monkeypatch):
    node.write(SPEC, SPEC_TEXT)
    args = args_for(node, containerd_config=None, files={})
    run(args, monkeypatch)
    node.write(SPEC, b"regenerated for 550\n")
    result, failed = run(args, monkeypatch, diff=True)
    assert not failed and result["changes"] == ["update " + SPEC_COPY]
    assert result["diff"] == [{"before_header": KEPT + "/" + SPEC_COPY, "after_header": KEPT + "/" + SPEC_COPY,
                               "before": SPEC_TEXT.decode(), "after": "regenerated for 550\n"}]
    assert node.kept(SPEC_COPY).read_bytes() == b"regenerated for 550\n"


def test_a_missing_spec_in_check_mode_is_a_pending_change(node, monkeypatch):
    """The spec would be written by the same check-mode run: its copy counts as changed."""
    args = args_for(node, containerd_config=None, files={})
    result, failed = run(args, monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"]
    assert set(result["changes"]) == {"create " + SPEC_COPY}
    assert result["diff"] and all(d == {"before_header": KEPT + "/" + SPEC_COPY, "after_header": KEPT + "/" + SPEC_COPY,
                                        "before": "", "after": "(written by this run)\n"} for d in result["diff"])
    assert not node.kept().exists()


def test_a_missing_spec_in_check_mode_is_reported_once(node, monkeypatch):
    result, _failed = run(args_for(node, containerd_config=None, files={}), monkeypatch, check_mode=True, diff=True)
    assert result["changes"] == ["create " + SPEC_COPY]
    assert len(result["diff"]) == 1


def test_a_missing_spec_with_a_copy_in_check_mode_is_a_pending_update(node, monkeypatch):
    node.write(KEPT + "/" + SPEC_COPY, SPEC_TEXT)
    result, failed = run(args_for(node, containerd_config=None, files={}), monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"]
    assert result["changes"] == ["update " + SPEC_COPY]
    assert result["diff"][0]["before"] == SPEC_TEXT.decode()
    assert result["diff"][0]["after"] == "(written by this run)\n"
    assert node.kept(SPEC_COPY).read_bytes() == SPEC_TEXT


def test_a_missing_spec_in_a_real_run_fails_and_keeps_nothing(node, monkeypatch):
    node.write(CONFIG, provision((FIXTURES / "gke-cos.toml").read_text()))
    result, failed = run(args_for(node), monkeypatch)
    assert failed
    assert result["msg"] == ("the CDI spec %s does not exist, so there is nothing to keep; write it first (cdi_spec) or "
                             "leave it out of cdi_specs" % SPEC)
    assert result["changed"] is False and result["dir"] == KEPT
    assert not node.kept().exists()


def test_modes_are_fixed_without_rewriting(node, monkeypatch):
    args = args_for(node, containerd_config=None, cdi_specs=[])
    run(args, monkeypatch)
    os.chmod(node.kept("reapply.sh"), 0o644)
    os.chmod(node.kept("driver-version"), 0o600)
    inode = os.stat(node.kept("reapply.sh")).st_ino
    result, failed = run(args, monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"] and result["changes"] == ["chmod driver-version", "chmod reapply.sh"]
    assert result["diff"] == []  # only metadata: no text to show
    assert stat.S_IMODE(os.stat(node.kept("reapply.sh")).st_mode) == 0o644

    result, failed = run(args, monkeypatch, diff=True)
    assert not failed and result["changed"] and result["changes"] == ["chmod driver-version", "chmod reapply.sh"]
    assert stat.S_IMODE(os.stat(node.kept("reapply.sh")).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(node.kept("driver-version")).st_mode) == 0o644
    assert os.stat(node.kept("reapply.sh")).st_ino == inode
    assert not run(args, monkeypatch)[0]["changed"]


def test_writes_are_atomic_replacements(node, monkeypatch):
    args = args_for(node, containerd_config=None, cdi_specs=[])
    run(args, monkeypatch)
    inode = os.stat(node.kept("driver-version")).st_ino
    result, failed = run(dict(args, files={"reapply.sh": REAPPLY, "driver-version": "550.54.15\n"}), monkeypatch)
    assert not failed and result["changes"] == ["update driver-version"]
    assert node.kept("driver-version").read_text() == "550.54.15\n"
    assert os.stat(node.kept("driver-version")).st_ino != inode  # a new file renamed over the old one
    assert sorted(os.listdir(node.kept())) == ["driver-version", "reapply.sh"]  # no temp files left


def test_a_failed_write_leaves_the_old_copy_and_no_temp_file(node, monkeypatch):
    args = args_for(node, containerd_config=None, cdi_specs=[])
    run(args, monkeypatch)

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", dst)

    monkeypatch.setattr(persist_files.os, "replace", refuse)
    result, failed = run(dict(args, files={"reapply.sh": REAPPLY, "driver-version": "550.54.15\n"}), monkeypatch)
    assert failed
    assert result["msg"].startswith("cannot update driver-version in %s: " % KEPT)
    assert "Permission denied" in result["msg"]
    assert result["changes"] == ["update driver-version"]
    assert node.kept("driver-version").read_text() == "535.104.12\n"
    assert sorted(os.listdir(node.kept())) == ["driver-version", "reapply.sh"]


def test_files_in_subdirectories_and_a_dir_given_with_odd_slashes(node, monkeypatch):
    args = args_for(node, dir="home//kubernetes/bin/nvidia/toolkit/./.gpu-node/", containerd_config=None, cdi_specs=[],
                    files={"units/gpu-node-reapply.service": "[Unit]\n"}, executables=[])
    result, failed = run(args, monkeypatch)
    assert not failed and result["dir"] == KEPT and result["changes"] == ["create units/gpu-node-reapply.service"]
    assert node.kept("units/gpu-node-reapply.service").read_text() == "[Unit]\n"
    assert not run(args, monkeypatch)[0]["changed"]


def test_a_damaged_journal_fails_and_keeps_nothing(node, monkeypatch):
    node.write(CONFIG, "version = 2\n%s\n[plugins]\n" % ej.BEGIN)
    node.write(SPEC, SPEC_TEXT)
    result, failed = run(args_for(node), monkeypatch)
    assert failed
    assert result["msg"].startswith("%s, line 2: the block started by" % CONFIG)
    assert result["msg"].endswith("remove the block by hand; nothing was kept")
    assert not node.kept().exists()


def test_dir_that_is_a_file_fails(node, monkeypatch):
    node.write(KEPT, "not a dir\n")
    for state in ("present", "absent"):
        result, failed = run(args_for(node, state=state), monkeypatch)
        assert failed
        assert result["msg"] == ("%s exists and is not a directory; move it away so the copies kept across reboots can "
                                 "go there" % KEPT)
    assert node.kept().read_text() == "not a dir\n"


def test_absent_removes_the_dir_and_everything_in_it(node, monkeypatch):
    node.write(SPEC, SPEC_TEXT)
    run(args_for(node, containerd_config=None, files={"driver-version": "1\n"}), monkeypatch)
    node.write(KEPT + "/unrelated", "x\n")
    args = {"host_root": str(node.root), "dir": KEPT, "state": "absent"}
    result, failed = run(args, monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"]
    assert result["changes"] == ["remove " + SPEC_COPY, "remove driver-version", "remove unrelated"]
    assert {d["before_header"]: (d["before"], d["after"]) for d in result["diff"]} == {
        KEPT + "/" + SPEC_COPY: (SPEC_TEXT.decode(), ""), KEPT + "/driver-version": ("1\n", ""),
        KEPT + "/unrelated": ("x\n", "")}
    assert node.kept("unrelated").exists()

    result, failed = run(args, monkeypatch)
    assert not failed and result["changed"]
    assert not node.kept().exists() and node.kept().parent.is_dir()

    for check in (True, False):
        result, failed = run(args, monkeypatch, check_mode=check)
        assert not failed and not result["changed"] and result["changes"] == []


def test_absent_of_an_empty_dir_removes_it(node, monkeypatch):
    node.kept().mkdir(parents=True)
    result, failed = run({"host_root": str(node.root), "dir": KEPT, "state": "absent"}, monkeypatch)
    assert not failed and result["changed"] and result["changes"] == []
    assert not node.kept().exists()


def test_non_utf8_bytes_are_shown_replaced_in_the_diff(node, monkeypatch):
    node.write(SPEC, b"name: \xff\n")
    result, failed = run(args_for(node, containerd_config=None, files={}), monkeypatch, diff=True)
    assert not failed and result["diff"][0]["after"] == "name: \ufffd\n"
    assert node.kept(SPEC_COPY).read_bytes() == b"name: \xff\n"  # the copy itself is byte for byte


@pytest.mark.parametrize("escape", ["../escaped", "ABSOLUTE"])
def test_a_file_name_outside_dir_is_refused(node, monkeypatch, tmp_path, escape):
    name = str(tmp_path / "escaped") if escape == "ABSOLUTE" else escape
    outside = tmp_path / "escaped" if escape == "ABSOLUTE" else node.kept().parent / "escaped"
    result, failed = run(args_for(node, containerd_config=None, cdi_specs=[], files={name: "x\n"}, executables=[]),
                         monkeypatch)
    assert not outside.exists()
    assert failed and name in result["msg"]
