# -*- coding: utf-8 -*-
"""crio_runtime through real ansible on simulated nodes.

CRI-O is not packaged in Debian 12, so no crio daemon loads the result here. What the tests rely on
instead, each a documented fact of CRI-O: it reads crio.conf, then every regular file under
crio.conf.d at any depth in lexical order, a later value of a key winning but a later runtime
handler table replacing an earlier one whole (crio.conf.d(5), CRI-O's Config.UpdateFromPath and
its BurntSushi/toml decoder, which builds a fresh value per key of a map); a runtime handler's keys and their types are those the comments of CRI-O's
``crio config`` template list (cri-o/cri-o internal/config/template.go), checked by
module_utils/crio_config.HANDLER_KEY_TYPES. Every drop-in written is parsed again here by Python's
tomllib, as CRI-O's BurntSushi/toml would.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from ansible_runner import run_module
from node_tree import differences, listing

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crio"
DROP_IN = "/etc/crio/crio.conf.d/99-nvidia.toml"
TOOLKIT = "/usr/local/nvidia/toolkit"
CRUN_DROP_IN = """[crio.runtime]
default_runtime = "crun"

[crio.runtime.runtimes.crun]
runtime_path = "/usr/bin/crun"
runtime_root = "/run/crun"
monitor_path = "/usr/libexec/crio/conmon"
monitor_cgroup = "pod"
monitor_env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
allowed_annotations = ["io.containers.trace-syscall"]
"""


def node(tmp_path, files):
    for host_path, text in files.items():
        path = tmp_path / host_path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def drop_in(root):
    return tomllib.loads((root / DROP_IN.lstrip("/")).read_text())


def warned(result, words):
    """Ansible prints a result's warnings on stderr, wrapped: compare without white space."""
    return "".join(words.split()) in "".join(result["_stderr"].split())


def four_runs(args):
    results = [run_module("crio_runtime", args, check=check) for check in (True, False, True, False)]
    for result in results:
        assert result["_rc"] == 0, result
    assert [r["changed"] for r in results] == [True, True, False, False]
    assert [r["restart_required"] for r in results] == [True, True, False, False]
    return results


def test_drop_in_starts_from_the_default_runtime_and_goes_again(tmp_path):
    root = node(tmp_path, {"/etc/crio/crio.conf": "[crio]\n", "/etc/crio/crio.conf.d/10-crun.conf": CRUN_DROP_IN})
    before = listing(root)
    results = four_runs({"host_root": str(root)})
    assert results[1]["base_runtime"] == "crun" and results[1]["base_sources"] == ["/etc/crio/crio.conf.d/10-crun.conf"]
    assert results[1]["read"] == ["/etc/crio/crio.conf", "/etc/crio/crio.conf.d/10-crun.conf"]
    nvidia = drop_in(root)["crio"]["runtime"]["runtimes"]["nvidia"]
    assert nvidia["runtime_path"] == TOOLKIT + "/nvidia-container-runtime" and nvidia["runtime_type"] == "oci"
    assert nvidia["runtime_root"] == "/run/crun" and nvidia["monitor_cgroup"] == "pod"
    assert nvidia["allowed_annotations"] == ["io.containers.trace-syscall"]
    assert "default_runtime" not in drop_in(root)["crio"]["runtime"]
    # The other files are read, never written.
    assert (root / "etc/crio/crio.conf.d/10-crun.conf").read_text() == CRUN_DROP_IN
    removed = run_module("crio_runtime", {"host_root": str(root), "state": "absent"})
    assert removed["changed"] is True and removed["restart_required"] is True
    assert differences(before, listing(root)) == ([], [], [])
    assert run_module("crio_runtime", {"host_root": str(root), "state": "absent"})["changed"] is False


def test_created_from_nothing_with_backups_and_left_as_found(tmp_path):
    """No CRI-O configuration at all (CRI-O's built-in settings): the directories the drop-in needed
    are recorded in it and go with it; the copies backup made go with remove_backups."""
    root = node(tmp_path, {"/usr/bin/crio": "#!/bin/sh\n"})
    before = listing(root)
    args = {"host_root": str(root), "backup": True}
    first = run_module("crio_runtime", args)
    assert first["changed"] and first["backup_files"] == {DROP_IN: None} and first["base_runtime"] == "crun"
    assert "CRI-O's built-in settings" in first["notes"][0]
    second = run_module("crio_runtime", dict(args, set_as_default=True))
    copy = second["backup_files"][DROP_IN]
    assert copy.startswith("/etc/crio/.99-nvidia.toml.") and copy.endswith("~")
    assert drop_in(root)["crio"]["runtime"]["default_runtime"] == "nvidia"
    # CRI-O reads every file of crio.conf.d: the copy is not there.
    assert sorted(p.name for p in (root / "etc/crio/crio.conf.d").iterdir()) == ["99-nvidia.toml"]
    removed = run_module("crio_runtime", dict(args, state="absent"))
    assert removed["changed"] and removed["backup_files"][DROP_IN].startswith("/etc/crio/.99-nvidia.toml.")
    assert removed["removed_dirs"] == ["/etc/crio/crio.conf.d"]  # /etc/crio holds the copies still
    cleaned = run_module("crio_runtime", dict(args, state="absent", remove_backups=True))
    assert cleaned["changed"] and len(cleaned["removed_backups"]) == 2
    assert differences(before, listing(root)) == ([], [], [])


def test_a_file_someone_else_wrote_at_the_path_is_left_alone(tmp_path):
    theirs = "[crio.runtime.runtimes.nvidia]\nruntime_path = \"/usr/bin/nvidia-container-runtime\"\n"
    root = node(tmp_path, {DROP_IN: theirs})
    for state in ("present", "absent"):
        result = run_module("crio_runtime", {"host_root": str(root), "state": state})
        assert result["_rc"] != 0 and "was not written by this module" in result["msg"]
        assert (root / DROP_IN.lstrip("/")).read_text() == theirs


@pytest.mark.parametrize("text, words", [
    ("[crio.runtime.runtimes.runc]\nruntime_path = 1\n", "runtime_path is 1, where CRI-O takes a string"),
    ("[crio.runtime\n", "is not valid TOML"),
    ('[crio.runtime]\ndefault_runtime = "kata"\n[crio.runtime.runtimes.kata]\nruntime_type = "vm"\n', "runtime_type 'vm'"),
])
def test_configurations_crio_would_refuse_fail_and_nothing_is_written(tmp_path, text, words):
    root = node(tmp_path, {"/etc/crio/crio.conf": text})
    before = listing(root)
    result = run_module("crio_runtime", {"host_root": str(root)})
    assert result["_rc"] != 0 and words in result["msg"] and "/etc/crio/crio.conf" in result["msg"]
    assert result["msg"].endswith("nothing was written")
    assert differences(before, listing(root)) == ([], [], [])


def test_check_mode_diff_names_the_drop_in(tmp_path):
    root = node(tmp_path, {"/etc/crio/crio.conf.d/10-crun.conf": CRUN_DROP_IN})
    result = run_module("crio_runtime", {"host_root": str(root)}, check=True, diff=True)
    assert result["changed"] and DROP_IN in result["_diff_text"] and "runtime_path" in result["_diff_text"]
    assert not (root / DROP_IN.lstrip("/")).exists()


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*") if p.is_file() and p.name != "SOURCES.md"))
def test_each_real_configuration_gives_a_drop_in_crio_accepts(tmp_path, name):
    """Each configuration real projects ship, as crio.conf: the drop-in starts from its low-level
    runtime, reads back as TOML with the types CRI-O takes, and goes again leaving the node as found."""
    text = (FIXTURES / name).read_text()
    root = node(tmp_path, {"/etc/crio/crio.conf": text})
    before = listing(root)
    results = four_runs({"host_root": str(root), "set_as_default": True})
    data = drop_in(root)
    assert data["crio"]["runtime"]["default_runtime"] == "nvidia"
    runtimes = data["crio"]["runtime"]["runtimes"]
    assert set(runtimes) == {"nvidia", "nvidia-cdi", "nvidia-legacy"}
    source = tomllib.loads(text).get("crio", {}).get("runtime", {})
    base = source.get("runtimes", {}).get(results[1]["base_runtime"], {})
    for key, value in base.items():
        if key not in ("runtime_path", "runtime_type", "inherit_default_runtime", "runtime_config_path"):
            assert runtimes["nvidia"][key] == value, key
    assert run_module("crio_runtime", {"host_root": str(root), "state": "absent"})["changed"] is True
    assert differences(before, listing(root)) == ([], [], [])


def test_a_real_node_whose_drop_in_redefines_the_low_level_runtime(tmp_path):
    """NVIDIA's crio.conf with CRI-O's 50-runc-default.conf (tests/fixtures/crio/nodes): the drop-in
    makes runc the default and defines runc again with runtime_path only. CRI-O uses that table
    whole, so crio.conf's runtime_root = "/run/runc" is not copied, and the header names the drop-in alone."""
    node_dir = FIXTURES / "nodes" / "nct-complex-plus-crio-50-runc-default"
    root = node(tmp_path, {"/etc/crio/" + p.relative_to(node_dir).as_posix(): p.read_text()
                           for p in node_dir.rglob("*") if p.is_file()})
    before = listing(root)
    results = four_runs({"host_root": str(root)})
    assert results[1]["base_runtime"] == "runc" and results[1]["default_runtime"] == "runc"
    assert results[1]["base_sources"] == ["/etc/crio/crio.conf.d/50-runc-default.conf"]
    runtimes = drop_in(root)["crio"]["runtime"]["runtimes"]
    for name, suffix in (("nvidia", ""), ("nvidia-cdi", ".cdi"), ("nvidia-legacy", ".legacy")):
        assert runtimes[name] == {"runtime_path": TOOLKIT + "/nvidia-container-runtime" + suffix, "runtime_type": "oci"}
    assert "# The runtimes start from the settings of runc (/etc/crio/crio.conf.d/50-runc-default.conf)." in (
        root / DROP_IN.lstrip("/")).read_text()
    assert run_module("crio_runtime", {"host_root": str(root), "state": "absent"})["changed"] is True
    assert differences(before, listing(root)) == ([], [], [])


def test_a_drop_in_changed_by_hand_is_not_lost(tmp_path):
    """Someone added a handler to the module's drop-in: absent removes the drop-in (the nvidia
    runtimes must go) but keeps a copy beside the drop-in directory and says where; remove_backups
    leaves that copy, which holds their edit."""
    root = node(tmp_path, {"/etc/crio/crio.conf": "[crio]\n", "/etc/crio/crio.conf.d/10-crun.conf": CRUN_DROP_IN})
    assert run_module("crio_runtime", {"host_root": str(root)})["changed"] is True
    path = root / DROP_IN.lstrip("/")
    edited = path.read_text() + '\n[crio.runtime.runtimes.kata]\nruntime_path = "/opt/kata/bin/kata-runtime"\n'
    path.write_text(edited)
    check = run_module("crio_runtime", {"host_root": str(root), "state": "absent"}, check=True)
    words = DROP_IN + " was changed by hand since this module wrote it; a copy would be kept"
    assert check["changed"] is True and warned(check, words)
    assert path.read_text() == edited
    removed = run_module("crio_runtime", {"host_root": str(root), "state": "absent"})
    assert removed["changed"] is True and not path.exists()
    [copy] = (root / "etc/crio").glob(".99-nvidia.toml.*~")
    assert copy.read_text() == edited and warned(removed, "a copy of it as it was is at /etc/crio/" + copy.name)
    clean = run_module("crio_runtime", {"host_root": str(root), "state": "absent", "remove_backups": True})
    assert clean["removed_backups"] == [] and copy.read_text() == edited
    # Present over a changed drop-in rewrites it (it is the module's) and keeps the edit the same way.
    run_module("crio_runtime", {"host_root": str(root)})
    path.write_text(path.read_text().replace("/run/crun", "/run/crun-by-hand"))
    again = run_module("crio_runtime", {"host_root": str(root)})
    assert again["changed"] is True and warned(again, "changed by hand since this module wrote it")
    assert "/run/crun-by-hand" not in path.read_text()


def test_a_drop_in_written_by_an_earlier_release_is_not_rewritten_for_its_record(tmp_path):
    """An earlier release wrote the directories it created space-separated and no digest line: the
    same drop-in in today's form means the same to CRI-O, so nothing is written and CRI-O is not
    restarted; absent still removes the directories it names."""
    root = node(tmp_path, {})
    first = run_module("crio_runtime", {"host_root": str(root)})
    assert first["changed"] is True
    path = root / DROP_IN.lstrip("/")
    lines = [line for line in path.read_text().split("\n") if ": wrote sha256:" not in line]
    lines = ["# created directories: /etc/crio/crio.conf.d /etc/crio" if ": created;" in line else line for line in lines]
    earlier = "\n".join(lines)
    path.write_text(earlier)
    again = run_module("crio_runtime", {"host_root": str(root)})
    assert again["changed"] is False and again["restart_required"] is False and path.read_text() == earlier
    removed = run_module("crio_runtime", {"host_root": str(root), "state": "absent"})
    assert removed["removed_dirs"] == ["/etc/crio/crio.conf.d", "/etc/crio"] and list(root.iterdir()) == [root / "etc"]
