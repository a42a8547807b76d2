# -*- coding: utf-8 -*-
"""persist_files: the copies kept across reboots on COS, over a real host_root tree."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
from confined import free, full_disk, needs_unshare, node_lock_held, read_only, run_confined
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config as dc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal as ej
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_fs, persistence
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt
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
DOCKER_CONFIG = "/etc/docker/daemon.json"
DOCKER_JOURNAL = dc.journal_path(DOCKER_CONFIG)
DOCKER_FIXTURES = FIXTURES.parent / "docker"


def provision(text):
    """What containerd_runtime writes over ``text``: the real editor, with its journal."""
    params = {
        "state": "present", "runtimes": rt.default_runtimes("/home/kubernetes/bin/nvidia/toolkit"),
        "runtime_type": cc.DEFAULT_RUNTIME_TYPE, "set_as_default": False, "enable_cdi": True,
        "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"], "config_version": "auto", "drop_in": None, "path": CONFIG,
    }
    result = ct.edit(text, params)["text"]
    assert result != text and ej.has_journal(result)
    return result


def docker_provision(node, original):
    """What docker_runtime leaves on the node over ``original`` (None: no daemon.json): the real
    planner's daemon.json and journal (mode 0600, as the action plugin writes it)."""
    params = {"state": "present", "runtimes": rt.normalize_runtimes(None, "/home/kubernetes/bin/nvidia/toolkit", dc.RESERVED_RUNTIME_NAMES),
              "set_as_default": False, "enable_cdi": None, "created_dirs": ["/etc/docker"] if original is None else [],
              "path": DOCKER_CONFIG}
    plan = dc.plan(original, params, None, name=DOCKER_CONFIG)
    node.write(DOCKER_CONFIG, plan["text"])
    node.write(DOCKER_JOURNAL, plan["journal_text"], mode=0o600)
    return plan["text"].encode("utf-8"), plan["journal_text"].encode("utf-8")


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
    (tmp_path / "root").mkdir()  # a node's / is there: the module locks it
    return Node(tmp_path / "root")


def args_for(node, **overrides):
    args = {"host_root": str(node.root), "dir": KEPT, "containerd_config": CONFIG, "cdi_specs": [SPEC],
            "files": {"reapply.sh": REAPPLY, "driver-version": "535.104.12\n"}, "executables": ["reapply.sh"]}
    args.update(overrides)
    return {k: v for k, v in args.items() if v is not None}


def run(args, monkeypatch, check_mode=False, diff=False):
    return run_module(persist_files.main, args, check_mode=check_mode, diff=diff, monkeypatch=monkeypatch)


STEPS = {action: step for step, action in persistence.CHANGE_ACTIONS.items()}


def steps(result):
    """The files' changes as ``<persistence.plan step> <name in the kept dir>``; the directories
    made or removed on the way (each a parent of another entry, or the kept dir) left out."""
    paths = [change["path"] for change in result["changes"]]
    return ["%s %s" % (STEPS[change["action"]], change["path"][len(KEPT) + 1:]) for change in result["changes"]
            if change["path"].startswith(KEPT + "/") and not any(p.startswith(change["path"] + "/") for p in paths)]


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
    assert steps(result) == ["create " + n for n in
                             sorted(["containerd-base.toml", "containerd-provisioned.toml", SPEC_COPY,
                                     "driver-version", "reapply.sh"])]
    assert not node.kept().exists()  # check mode writes nothing

    result, failed = run(args, monkeypatch, diff=True)
    assert not failed and result["changed"]
    assert node.kept("containerd-base.toml").read_bytes() == original.encode("utf-8")
    assert node.kept("containerd-provisioned.toml").read_bytes() == provisioned.encode("utf-8")
    diffs = {d["after_header"]: d for d in result["diff"]}
    assert diffs[KEPT + "/containerd-base.toml"] == {
        "before_header": KEPT + "/containerd-base.toml (absent)", "after_header": KEPT + "/containerd-base.toml",
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
        assert steps(result) == [] and result["diff"] == []


def test_the_base_stays_right_on_a_later_run_that_changed_nothing(node, monkeypatch):
    """The base comes from the journal: a second provisioning run (nothing to change) still keeps it."""
    original = (FIXTURES / "gke-cos.toml").read_text()
    node.write(CONFIG, provision(original))
    node.write(SPEC, SPEC_TEXT)
    run(args_for(node), monkeypatch)
    node.kept("containerd-base.toml").unlink()
    result, failed = run(args_for(node), monkeypatch)
    assert not failed and result["changed"] and steps(result) == ["create containerd-base.toml"]
    assert node.kept("containerd-base.toml").read_text() == original


def test_a_config_without_journal_keeps_no_base_and_a_stale_base_goes(node, monkeypatch):
    plain = (FIXTURES / "gke-cos.toml").read_text()
    node.write(CONFIG, plain)
    node.write(KEPT + "/containerd-base.toml", "old base\n")
    result, failed = run(args_for(node, cdi_specs=[], files={}), monkeypatch, diff=True)
    assert not failed and result["changed"]
    assert steps(result) == ["remove containerd-base.toml", "create containerd-provisioned.toml"]
    removed = [d for d in result["diff"] if d["before_header"].endswith("containerd-base.toml")]
    assert removed == [{"before_header": KEPT + "/containerd-base.toml",
                        "after_header": KEPT + "/containerd-base.toml (absent)", "before": "old base\n", "after": ""}]
    assert node.kept_files() == {"containerd-provisioned.toml": (plain.encode(), 0o644)}


@pytest.mark.parametrize("containerd_config", [None, "/etc/containerd/missing.toml"])
def test_no_config_or_a_missing_one_is_not_kept(node, monkeypatch, containerd_config):
    node.write(KEPT + "/containerd-provisioned.toml", "old\n")
    node.write(KEPT + "/containerd-base.toml", "old\n")
    result, failed = run(args_for(node, containerd_config=containerd_config, cdi_specs=[], files={"x": "1"}), monkeypatch)
    assert not failed and result["changed"]
    assert steps(result) == ["remove containerd-base.toml", "remove containerd-provisioned.toml", "create x"]
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
        assert not failed and not result["changed"] and steps(result) == []
    assert node.kept(SPEC_COPY).read_bytes() == SPEC_TEXT
    assert node.kept(SPEC2_COPY).read_bytes() == b"second\n"
    # ... while the other kept files are still kept up to date.
    result, failed = run(dict(args, files={"reapply.sh": "#!/bin/sh\n", "driver-version": "535.104.12\n"}), monkeypatch)
    assert not failed and steps(result) == ["update reapply.sh"]
    assert node.kept(SPEC_COPY).read_bytes() == SPEC_TEXT


def test_stale_spec_copies_are_removed_with_their_empty_dirs(node, monkeypatch):
    node.write(SPEC, SPEC_TEXT)
    node.write(SPEC2, b"second\n")
    args = args_for(node, containerd_config=None, files={})
    changes = steps(run(dict(args, cdi_specs=[SPEC, SPEC2]), monkeypatch)[0])
    assert changes == ["create " + SPEC2_COPY, "create " + SPEC_COPY]
    result, failed = run(dict(args, cdi_specs=[SPEC]), monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"] and steps(result) == ["remove " + SPEC2_COPY]
    assert result["diff"][0]["before"] == "second\n" and result["diff"][0]["after"] == ""
    assert node.kept(SPEC2_COPY).exists()

    result, failed = run(dict(args, cdi_specs=[SPEC]), monkeypatch)
    assert not failed and steps(result) == ["remove " + SPEC2_COPY]
    assert not node.kept("cdi/etc").exists()  # emptied directories go too
    assert sorted(node.kept_files()) == ["cdi", "cdi/var", "cdi/var/run", "cdi/var/run/cdi", SPEC_COPY]

    result, failed = run(dict(args, cdi_specs=[]), monkeypatch)
    assert not failed and steps(result) == ["remove " + SPEC_COPY]
    assert node.kept().is_dir() and node.kept_files() == {}


def test_a_spec_that_changed_is_updated(node, monkeypatch):
    node.write(SPEC, SPEC_TEXT)
    args = args_for(node, containerd_config=None, files={})
    run(args, monkeypatch)
    node.write(SPEC, b"regenerated for 550\n")
    result, failed = run(args, monkeypatch, diff=True)
    assert not failed and steps(result) == ["update " + SPEC_COPY]
    assert result["diff"] == [{"before_header": KEPT + "/" + SPEC_COPY, "after_header": KEPT + "/" + SPEC_COPY,
                               "before": SPEC_TEXT.decode(), "after": "regenerated for 550\n"}]
    assert node.kept(SPEC_COPY).read_bytes() == b"regenerated for 550\n"


def test_a_missing_spec_in_check_mode_is_a_pending_change(node, monkeypatch):
    """The spec would be written by the same check-mode run: its copy counts as changed."""
    args = args_for(node, containerd_config=None, files={})
    result, failed = run(args, monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"]
    assert set(steps(result)) == {"create " + SPEC_COPY}
    assert result["diff"] and all(d == {"before_header": KEPT + "/" + SPEC_COPY + " (absent)",
                                        "after_header": KEPT + "/" + SPEC_COPY,
                                        "before": "", "after": "(written by this run)\n"} for d in result["diff"])
    assert not node.kept().exists()


def test_a_missing_spec_in_check_mode_is_reported_once(node, monkeypatch):
    result, _failed = run(args_for(node, containerd_config=None, files={}), monkeypatch, check_mode=True, diff=True)
    assert steps(result) == ["create " + SPEC_COPY]
    assert len(result["diff"]) == 1


def test_a_missing_spec_with_a_copy_in_check_mode_is_a_pending_update(node, monkeypatch):
    node.write(KEPT + "/" + SPEC_COPY, SPEC_TEXT)
    result, failed = run(args_for(node, containerd_config=None, files={}), monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"]
    assert steps(result) == ["update " + SPEC_COPY]
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
    assert not failed and result["changed"] and steps(result) == ["chmod driver-version", "chmod reapply.sh"]
    assert result["diff"] == []  # only metadata: no text to show
    assert stat.S_IMODE(os.stat(node.kept("reapply.sh")).st_mode) == 0o644

    result, failed = run(args, monkeypatch, diff=True)
    assert not failed and result["changed"] and steps(result) == ["chmod driver-version", "chmod reapply.sh"]
    assert stat.S_IMODE(os.stat(node.kept("reapply.sh")).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(node.kept("driver-version")).st_mode) == 0o644
    assert os.stat(node.kept("reapply.sh")).st_ino == inode
    assert not run(args, monkeypatch)[0]["changed"]


def test_writes_are_atomic_replacements(node, monkeypatch):
    args = args_for(node, containerd_config=None, cdi_specs=[])
    run(args, monkeypatch)
    inode = os.stat(node.kept("driver-version")).st_ino
    result, failed = run(dict(args, files={"reapply.sh": REAPPLY, "driver-version": "550.54.15\n"}), monkeypatch)
    assert not failed and steps(result) == ["update driver-version"]
    assert node.kept("driver-version").read_text() == "550.54.15\n"
    assert os.stat(node.kept("driver-version")).st_ino != inode  # a new file renamed over the old one
    assert sorted(os.listdir(node.kept())) == ["driver-version", "reapply.sh"]  # no temp files left


@needs_unshare
def test_a_full_disk_fails_cleanly_and_keeps_the_old_copy(node, monkeypatch):
    """A real ENOSPC: the dir above the kept one is a 64 KiB tmpfs (in a private mount namespace), filled up."""
    args = args_for(node, containerd_config=None, cdi_specs=[])
    run(args, monkeypatch)
    kept = node.kept()
    result, seen = run_confined("persist_files", dict(args, files={"reapply.sh": REAPPLY, "driver-version": "x" * 8192}),
                                full_disk(kept.parent), after=free(kept.parent), look=[kept, kept / "driver-version"])
    assert result["_rc"] != 0 and result["changed"] is False and result["changes"] == []
    assert result["msg"].startswith("cannot write %s/driver-version: No space left on device" % KEPT)
    assert result["msg"].endswith("; %s/driver-version was left as it was" % KEPT)
    assert seen == {str(kept): ["driver-version", "reapply.sh"], str(kept / "driver-version"): "535.104.12\n"}


@needs_unshare
@pytest.mark.parametrize("state", ["present", "absent"])
def test_a_read_only_dir_fails_cleanly_and_keeps_the_old_copies(node, monkeypatch, state):
    args = args_for(node, containerd_config=None, cdi_specs=[])
    run(args, monkeypatch)
    kept = node.kept()
    new = dict(args, files={"reapply.sh": REAPPLY, "driver-version": "550.54.15\n"}, state=state)
    result, seen = run_confined("persist_files", new, read_only(kept), look=[kept, kept / "driver-version"])
    assert result["_rc"] != 0 and result["changed"] is False
    assert "Read-only file system" in result["msg"] and KEPT in result["msg"]
    assert seen == {str(kept): ["driver-version", "reapply.sh"], str(kept / "driver-version"): "535.104.12\n"}


def test_files_in_subdirectories_and_a_dir_given_with_odd_slashes(node, monkeypatch):
    args = args_for(node, dir="home//kubernetes/bin/nvidia/toolkit/./.gpu-node/", containerd_config=None, cdi_specs=[],
                    files={"units/gpu-node-reapply.service": "[Unit]\n"}, executables=[])
    result, failed = run(args, monkeypatch)
    assert not failed and result["dir"] == KEPT and steps(result) == ["create units/gpu-node-reapply.service"]
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
    assert steps(result) == ["remove " + SPEC_COPY, "remove driver-version", "remove unrelated"]
    assert {d["before_header"]: (d["before"], d["after"]) for d in result["diff"]} == {
        KEPT + "/" + SPEC_COPY: (SPEC_TEXT.decode(), ""), KEPT + "/driver-version": ("1\n", ""),
        KEPT + "/unrelated": ("x\n", "")}
    assert node.kept("unrelated").exists()

    result, failed = run(args, monkeypatch)
    assert not failed and result["changed"]
    assert not node.kept().exists() and node.kept().parent.is_dir()

    for check in (True, False):
        result, failed = run(args, monkeypatch, check_mode=check)
        assert not failed and not result["changed"] and steps(result) == []


def test_absent_of_an_empty_dir_removes_it(node, monkeypatch):
    node.kept().mkdir(parents=True)
    result, failed = run({"host_root": str(node.root), "dir": KEPT, "state": "absent"}, monkeypatch)
    assert not failed and result["changed"] and result["changes"] == [{"path": KEPT, "action": "removed"}]
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


# --- one vocabulary: changes; the node's lock; what killed runs left ----------------------------

def test_changes_name_every_path_with_its_directories(node, monkeypatch):
    node.write(SPEC, SPEC_TEXT)
    args = args_for(node, containerd_config=None, files={"driver-version": "1\n"}, executables=[])
    parents = ["/home", "/home/kubernetes", "/home/kubernetes/bin", "/home/kubernetes/bin/nvidia",
               "/home/kubernetes/bin/nvidia/toolkit", KEPT]
    copy_dirs = [KEPT + "/cdi", KEPT + "/cdi/var", KEPT + "/cdi/var/run", KEPT + "/cdi/var/run/cdi"]
    expected = ([{"path": d, "action": "created"} for d in parents + copy_dirs]
                + [{"path": KEPT + "/" + SPEC_COPY, "action": "created"},
                   {"path": KEPT + "/driver-version", "action": "created"}])
    for check in (True, False):
        result, failed = run(args, monkeypatch, check_mode=check)
        assert not failed and result["changes"] == expected
    result, failed = run(dict(args, cdi_specs=[]), monkeypatch)
    assert not failed and result["changes"] == [{"path": KEPT + "/" + SPEC_COPY, "action": "removed"}] + [
        {"path": d, "action": "removed"} for d in reversed(copy_dirs)]
    os.chmod(node.kept("driver-version"), 0o600)
    result, failed = run(dict(args, cdi_specs=[]), monkeypatch)
    assert not failed and result["changes"] == [{"path": KEPT + "/driver-version", "action": "mode_changed"}]


def test_sources_behind_absolute_links_are_read_inside_host_root(node, monkeypatch):
    node.write("/var/lib/etc-containerd/config.toml", "version = 2\n")
    node.at("/etc").mkdir()
    node.at("/etc/containerd").symlink_to("/var/lib/etc-containerd")  # the node's, not this machine's
    result, failed = run(args_for(node, cdi_specs=[], files={}), monkeypatch)
    assert not failed and steps(result) == ["create containerd-provisioned.toml"]
    assert node.kept("containerd-provisioned.toml").read_text() == "version = 2\n"


def test_a_temp_file_of_a_killed_run_is_removed_and_not_reported(node, monkeypatch):
    args = args_for(node, containerd_config=None, cdi_specs=[])
    run(args, monkeypatch)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = node.kept(node_fs.temp_name_of("driver-version", dead.pid, "00ff"))
    stale.write_text("half")
    for check in (True, False):
        result, failed = run(args, monkeypatch, check_mode=check)
        assert not failed and not result["changed"] and result["changes"] == []
    assert sorted(os.listdir(node.kept())) == ["driver-version", "reapply.sh"]


def test_waits_for_another_run_holding_the_nodes_lock(node, monkeypatch):
    with node_lock_held(node.root, 1.5):
        started = time.monotonic()
        result, failed = run(args_for(node, containerd_config=None, cdi_specs=[]), monkeypatch)
        waited = time.monotonic() - started
    assert not failed and result["changed"] and waited >= 1.0


# --- Docker's daemon.json (COS images that run Docker) -----------------------------------------

def docker_args(node, **overrides):
    return args_for(node, **dict({"containerd_config": None, "docker_config": DOCKER_CONFIG, "cdi_specs": [], "files": {}},
                                 **overrides))


@pytest.mark.parametrize("original", [(DOCKER_FIXTURES / "docker-docs-logging.json").read_text(), None],
                         ids=["edited", "created"])
def test_docker_config_is_kept_with_its_journal_and_what_it_started_from(node, monkeypatch, original):
    provisioned, journal = docker_provision(node, original)
    base = ("docker-base.missing", persistence.DOCKER_BASE_MISSING_TEXT.encode()) if original is None else (
        "docker-base.json", original.encode())
    args = docker_args(node)

    result, failed = run(args, monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"]
    assert steps(result) == ["create " + n for n in sorted([base[0], "docker-journal.json", "docker-provisioned.json"])]
    assert {d["after_header"]: d["after"] for d in result["diff"]}[KEPT + "/docker-provisioned.json"] == provisioned.decode()
    assert not node.kept().exists()  # check mode writes nothing

    result, failed = run(args, monkeypatch, diff=True)
    assert not failed and result["changed"]
    assert node.kept_files() == {
        "docker-provisioned.json": (provisioned, 0o644),
        "docker-journal.json": (journal, 0o600),  # a copy of daemon.json: root only, as docker_runtime keeps it
        base[0]: (base[1], 0o644),
    }
    # The sources are left as they were.
    assert node.at(DOCKER_CONFIG).read_bytes() == provisioned and node.at(DOCKER_JOURNAL).read_bytes() == journal

    for check in (True, False):
        result, failed = run(args, monkeypatch, check_mode=check, diff=True)
        assert not failed and not result["changed"] and steps(result) == [] and result["diff"] == []


def test_docker_base_follows_the_journal_when_the_file_is_provisioned_again(node, monkeypatch):
    """docker_runtime set the runtimes again over a file it had created: the marker goes, the base comes."""
    docker_provision(node, None)
    run(docker_args(node), monkeypatch)
    os.unlink(node.at(DOCKER_JOURNAL))
    original = '{\n  "log-level": "warn"\n}\n'
    provisioned, journal = docker_provision(node, original)
    result, failed = run(docker_args(node), monkeypatch)
    assert not failed and steps(result) == ["create docker-base.json", "remove docker-base.missing",
                                            "update docker-journal.json", "update docker-provisioned.json"]
    assert node.kept("docker-base.json").read_text() == original
    assert node.kept("docker-journal.json").read_bytes() == journal
    assert node.kept("docker-provisioned.json").read_bytes() == provisioned


def test_docker_config_without_journal_keeps_no_base_and_stale_copies_go(node, monkeypatch):
    docker_provision(node, "{}\n")
    run(docker_args(node), monkeypatch)
    os.unlink(node.at(DOCKER_JOURNAL))
    result, failed = run(docker_args(node), monkeypatch)
    assert not failed and steps(result) == ["remove docker-base.json", "remove docker-journal.json"]
    assert sorted(node.kept_files()) == ["docker-provisioned.json"]


@pytest.mark.parametrize("docker_config", [None, "/etc/docker/missing.json"])
def test_no_docker_config_or_a_missing_one_is_not_kept(node, monkeypatch, docker_config):
    docker_provision(node, "{}\n")
    run(docker_args(node), monkeypatch)
    result, failed = run(docker_args(node, docker_config=docker_config), monkeypatch)
    assert not failed and steps(result) == ["remove docker-base.json", "remove docker-journal.json",
                                            "remove docker-provisioned.json"]
    assert node.kept_files() == {}


@pytest.mark.parametrize("check_mode", [True, False])
def test_a_damaged_docker_journal_fails_and_keeps_nothing(node, monkeypatch, check_mode):
    docker_provision(node, "{}\n")
    node.write(DOCKER_JOURNAL, '{"format": 1, "edits": "damaged"}\n', mode=0o600)
    node.write(SPEC, SPEC_TEXT)
    result, failed = run(docker_args(node, cdi_specs=[SPEC]), monkeypatch, check_mode=check_mode)
    assert failed and result["changed"] is False and result["changes"] == []
    assert result["msg"].startswith("%s is not a journal this module wrote (format 1), or it is damaged" % DOCKER_JOURNAL)
    assert result["msg"].endswith("; nothing was kept")
    assert not node.kept().exists()


def test_docker_config_and_its_journal_behind_a_link_are_read_inside_host_root(node, monkeypatch):
    provisioned, journal = docker_provision(node, "{}\n")
    node.at("/var/lib").mkdir(parents=True)
    node.at("/etc/docker").rename(node.at("/var/lib/etc-docker"))
    node.at("/etc/docker").symlink_to("/var/lib/etc-docker")  # the node's, not this machine's
    result, failed = run(docker_args(node), monkeypatch)
    assert not failed and steps(result) == ["create docker-base.json", "create docker-journal.json",
                                            "create docker-provisioned.json"]
    assert node.kept("docker-provisioned.json").read_bytes() == provisioned
    assert node.kept("docker-journal.json").read_bytes() == journal
    assert node.kept("docker-base.json").read_bytes() == b"{}\n"


def test_a_program_or_large_file_is_named_in_the_diff_not_shown(node, monkeypatch):
    # The gpu_node role keeps gpu-node-cdi (about 150 KB): --diff names it by size and digest.
    program = "#!/usr/bin/python3\n# " + "x" * persistence.DIFF_TEXT_LIMIT + "\n"
    files = {"gpu-node-cdi": program, "nul.dat": "a\0b", "reapply.sh": "#!/bin/sh\necho small\n"}
    result, failed = run(dict(args_for(node, containerd_config=None, cdi_specs=[], files=files),
                              executables=["gpu-node-cdi", "reapply.sh"]), monkeypatch, diff=True)
    assert not failed and result["changed"], result
    after = {d["after_header"].rsplit("/", 1)[-1]: d["after"] for d in result["diff"]}
    digest = hashlib.sha256(program.encode()).hexdigest()
    assert after["gpu-node-cdi"] == "(%d bytes, sha256 %s; not shown)\n" % (len(program), digest)
    assert after["nul.dat"] == "(3 bytes, sha256 %s; not shown)\n" % hashlib.sha256(b"a\0b").hexdigest()
    assert after["reapply.sh"] == "#!/bin/sh\necho small\n"
    assert node.kept("gpu-node-cdi").read_text() == program  # the file itself is whole


def test_diff_text_limits():
    assert persistence.diff_text(None) is None
    assert persistence.diff_text(b"a" * persistence.DIFF_TEXT_LIMIT) == "a" * persistence.DIFF_TEXT_LIMIT
    assert persistence.diff_text(b"a" * (persistence.DIFF_TEXT_LIMIT + 1)).endswith("; not shown)\n")
    assert persistence.diff_text(b"a\0b").startswith("(3 bytes, sha256 ")
