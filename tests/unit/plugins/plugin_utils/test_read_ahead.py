# -*- coding: utf-8 -*-
"""Reading ahead: what node_info reads for the later tasks (module_utils.node_reads), how
the action plugins answer from it (plugin_utils.node_files.ReadAhead), and persist_files' decision
that its kept directory is already as wanted (plugins/action/persist_files.py)."""

from __future__ import annotations

import hashlib
import os

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.action import persist_files as persist_action
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal, node_fs, node_reads, persistence
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import ReadAhead

KEPT = "/opt/toolkit/.gpu-node"
CONFIG = "/etc/containerd/config.toml"
SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    (root / "etc" / "containerd").mkdir(parents=True)
    (root / "etc" / "containerd" / "config.toml").write_bytes(b'version = 2\n[plugins]\n')
    (root / "run" / "cdi").mkdir(parents=True)
    (root / "var").mkdir()
    (root / "var" / "run").symlink_to("/run")  # absolute: resolved inside the root, as on COS
    (root / "run" / "cdi" / "management.nvidia.com-gpu.yaml").write_bytes(b"cdiVersion: 0.5.0\n")
    return root


def look(root, files=(), trees=(), exist=()):
    found = node_reads.read_ahead(node_fs.NodeRoot(str(root)), files, trees, exist)
    return ReadAhead(dict(found, host_root=str(root)))


def test_files_parents_and_existence(root):
    ahead = look(root, files=[CONFIG, "/opt/toolkit/config.toml"], exist=["/usr/bin/containerd"])
    found = ahead.answer(str(root), [CONFIG], ["/etc/containerd", "/opt/toolkit", "/usr/bin/containerd"])
    assert found["existing"] == ["/etc/containerd"]
    assert ahead.data(str(root), CONFIG) == (True, b'version = 2\n[plugins]\n')
    assert ahead.data(str(root), "/opt/toolkit/config.toml") == (True, None)  # known to be missing


def test_anything_not_read_ahead_is_not_answered(root):
    ahead = look(root, files=[CONFIG])
    assert ahead.answer(str(root), [CONFIG, "/etc/other.toml"], []) is None
    assert ahead.answer(str(root), [CONFIG], ["/usr/bin/containerd"]) is None
    assert ahead.data(str(root), "/etc/other.toml") == (False, None)
    assert ahead.tree(str(root), KEPT) is None
    # Another node's reads are never used.
    assert ahead.answer("/elsewhere", [CONFIG], []) is None
    assert ahead.answer(str(root) + "/", [CONFIG], [])["files"][0]["path"] == CONFIG


def test_a_link_is_resolved_inside_the_root(root):
    ahead = look(root, files=[SPEC], trees=["/var/run/cdi"])
    (entry,) = ahead.answer(str(root), [SPEC], [])["files"]
    assert entry["resolved"] == "/run/cdi/management.nvidia.com-gpu.yaml"
    assert ahead.tree(str(root), "/var/run/cdi") == {"management.nvidia.com-gpu.yaml": (b"cdiVersion: 0.5.0\n", 0o644)}


def test_tree_leaves_out_links_and_temporary_files(root):
    kept = root / KEPT.lstrip("/")
    (kept / "cdi").mkdir(parents=True)
    (kept / "reapply.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(kept / "reapply.sh", 0o755)  # noqa: S103 - the mode a kept script has
    (kept / "cdi" / "x.yaml").write_bytes(b"x")
    (kept / "link").symlink_to("reapply.sh")
    (kept / ".reapply.sh.gpn-tmp.1234.abcd").write_bytes(b"half")
    assert node_fs.TEMP_NAME.match(".reapply.sh.gpn-tmp.1234.abcd")
    tree = look(root, trees=[KEPT, "/nowhere"]).tree(str(root), KEPT)
    assert tree == {"reapply.sh": (b"#!/bin/sh\n", 0o755), "cdi/x.yaml": (b"x", 0o644)}
    assert look(root, trees=["/nowhere"]).tree(str(root), "/nowhere") == {}
    assert look(root, trees=[CONFIG]).tree(str(root), CONFIG) is None  # a file is not a directory


def test_a_large_file_is_sent_as_its_digest_and_compared_by_it(root):
    kept = root / KEPT.lstrip("/")
    kept.mkdir(parents=True)
    large = b"x" * (node_reads.TREE_CONTENT_LIMIT + 1)
    (kept / "gpu-node-cdi").write_bytes(large)
    (kept / "reapply.sh").write_bytes(b"#!/bin/sh\n")
    entry = node_reads.read_tree(node_fs.NodeRoot(str(root)), KEPT)
    assert entry["files"]["gpu-node-cdi"] == {"sha256": hashlib.sha256(large).hexdigest(), "size": len(large),
                                              "mode": 0o644}
    assert "content" in entry["files"]["reapply.sh"]
    ahead = look(root, trees=[KEPT])
    # Whole files only, or nothing: a reader of the bytes asks the node.
    assert ahead.tree(str(root), KEPT) is None
    assert ahead.tree_digests(str(root), KEPT) == {
        "gpu-node-cdi": (hashlib.sha256(large).hexdigest(), 0o644),
        "reapply.sh": (hashlib.sha256(b"#!/bin/sh\n").hexdigest(), 0o644)}
    assert ahead.tree_digests(str(root), "/nowhere") is None


def _keep(root, **args):
    """Fill the kept directory with what persist_files would write for ``args``."""
    config = (root / CONFIG.lstrip("/")).read_text()
    spec = (root / "run/cdi/management.nvidia.com-gpu.yaml").read_bytes()
    wanted = persistence.wanted_files(config, CONFIG, {SPEC: spec}, args["files"], args["executables"])
    for name, (data, mode) in wanted.items():
        path = root / KEPT.lstrip("/") / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, mode)


def _args(**overrides):
    args = {"host_root": None, "dir": KEPT, "containerd_config": CONFIG, "docker_config": None, "cdi_specs": [SPEC],
            "files": {"reapply.sh": "#!/bin/sh\n", "driver-version": "535.104.12\n"}, "executables": ["reapply.sh"],
            "state": "present"}
    args.update(overrides)
    return args


def _ahead(root):
    return look(root, files=[CONFIG], trees=[KEPT, "/var/run/cdi", "/etc/cdi"])


def test_persist_nothing_to_do_is_told_from_the_reads_alone(root):
    args = _args(host_root=str(root))
    _keep(root, **args)
    assert persist_action.kept_as_wanted(args, _ahead(root)) is True


@pytest.mark.parametrize("edited", [False, True])
def test_persist_a_large_kept_file_is_compared_by_its_digest(root, edited):
    large = "#!/bin/sh\n" + "#" * node_reads.TREE_CONTENT_LIMIT + "\n"
    args = _args(host_root=str(root))
    args["files"]["gpu-node-cdi"] = large
    args["executables"].append("gpu-node-cdi")
    _keep(root, **args)
    if edited:
        (root / KEPT.lstrip("/") / "gpu-node-cdi").write_text(large.replace("#!/bin/sh", "#!/bin/bash"))
    assert persist_action.kept_as_wanted(args, _ahead(root)) is not edited


@pytest.mark.parametrize("drift", ["kept copy edited", "mode", "config changed", "file asked for", "stray copy"])
def test_persist_any_difference_runs_the_module(root, drift):
    args = _args(host_root=str(root))
    _keep(root, **args)
    kept = root / KEPT.lstrip("/")
    if drift == "kept copy edited":
        (kept / persistence.PROVISIONED_CONFIG).write_bytes(b"edited\n")
    elif drift == "mode":
        os.chmod(kept / "reapply.sh", 0o644)
    elif drift == "config changed":
        (root / CONFIG.lstrip("/")).write_bytes(b"version = 3\n")
    elif drift == "file asked for":
        args["files"]["cloud-init.yaml"] = "#cloud-config\n"
    else:
        (kept / "cdi" / "etc").mkdir(parents=True)
        (kept / "cdi" / "etc" / "old.yaml").write_bytes(b"old")
    assert persist_action.kept_as_wanted(args, _ahead(root)) is False


@pytest.mark.parametrize("gap", ["spec missing", "config not read", "dir not read", "bad name"])
def test_persist_what_was_not_read_ahead_is_left_to_the_module(root, gap):
    args = _args(host_root=str(root))
    _keep(root, **args)
    ahead = _ahead(root)
    if gap == "spec missing":
        (root / "run/cdi/management.nvidia.com-gpu.yaml").unlink()
        ahead = _ahead(root)
    elif gap == "config not read":
        ahead = look(root, trees=[KEPT, "/var/run/cdi"])
    elif gap == "dir not read":
        ahead = look(root, files=[CONFIG], trees=["/var/run/cdi"])
    else:
        args["files"]["../escape"] = "x"
    with pytest.raises(persist_action._NotReadAhead):
        persist_action.kept_as_wanted(args, ahead)


def test_persist_damaged_journal_is_left_to_the_module(root):
    args = _args(host_root=str(root))
    _keep(root, **args)
    (root / CONFIG.lstrip("/")).write_text("version = 2\n%s\n[plugins]\n" % edit_journal.BEGIN)
    with pytest.raises(persist_action._NotReadAhead):
        persist_action.kept_as_wanted(args, _ahead(root))
