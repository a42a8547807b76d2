# -*- coding: utf-8 -*-
"""gpu-node-cdi: the node regenerates its CDI specs with no controller.

In-process through ``cdi_refresh.main(argv)``, and as the node runs it: the one file
``plugin_utils/node_program`` builds, under the system's own Python with ``-I`` (no site-packages,
so no ansible-core and nothing but the standard library), on fake nodes whose driver is upgraded
the way a driver upgrade leaves a node.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from fakenode import upgrade_driver
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi_refresh
from ansible_collections.gpu_node.container_toolkit.plugins.modules import cdi_spec
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import node_program

SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"
GPU_SPEC = "/etc/cdi/nvidia.yaml"
NEW_VERSION = "550.54.15"
SYSTEM_PYTHON = "/usr/bin/python3"


def settings(node, tmp_path, specs=None):
    specs = specs if specs is not None else [
        {"spec_mode": "management", "container_driver_root": "/usr/local/nvidia"},
        {"spec_mode": "gpu", "path": GPU_SPEC, "device_name_strategy": ["index"]},
    ]
    path = tmp_path / "cdi-refresh.json"
    path.write_text(json.dumps({"version": cdi_refresh.SETTINGS_VERSION, "specs": specs}))
    return path


def generate(node, config, capsys, *extra):
    code = cdi_refresh.main(["generate", "--config", str(config), "--host-root", str(node.root)] + list(extra))
    out = capsys.readouterr()
    return code, out.out, out.err


def module_changes_nothing(node, monkeypatch, **args):
    """What the next playbook run would do with the same options: nothing."""
    result, failed = run_module(cdi_spec.main, dict(args, host_root=str(node.root)), monkeypatch=monkeypatch)
    assert not failed and result["changed"] is False, result
    return result


def test_generates_what_cdi_spec_writes_and_then_changes_nothing(cos_node, tmp_path, capsys, monkeypatch):
    config = settings(cos_node, tmp_path)
    code, out, err = generate(cos_node, config, capsys)
    assert code == 0 and err == ""
    assert "gpu-node-cdi: %s: created" % SPEC in out and "driver %s" % cos_node.driver_version in out
    module_changes_nothing(cos_node, monkeypatch, spec_mode="management", container_driver_root="/usr/local/nvidia")
    module_changes_nothing(cos_node, monkeypatch, spec_mode="gpu", path=GPU_SPEC, device_name_strategy=["index"])
    code, out, _err = generate(cos_node, config, capsys)
    assert code == 0 and out.count("up to date (driver %s)" % cos_node.driver_version) == 2


@pytest.mark.parametrize("layout", ["cos", "ubuntu", "driver-container"])
def test_a_driver_upgrade_is_followed_without_a_playbook_run(fake_node_factory, tmp_path, capsys, monkeypatch, layout):
    node = fake_node_factory(layout)
    old = node.driver_version
    config = settings(node, tmp_path)
    assert generate(node, config, capsys)[0] == 0
    assert old in node.node_path(SPEC).read_text()
    upgrade_driver(node, NEW_VERSION)
    code, out, err = generate(node, config, capsys)
    assert code == 0, err
    assert "driver %s -> %s" % (old, NEW_VERSION) in out
    text = node.node_path(SPEC).read_text()
    assert NEW_VERSION in text and old not in text
    for library in node.libraries:
        assert library["path"] in text
    module_changes_nothing(node, monkeypatch, spec_mode="management", container_driver_root="/usr/local/nvidia")


def test_a_broken_driver_tree_leaves_the_old_spec_and_exits_1(cos_node, tmp_path, capsys):
    config = settings(cos_node, tmp_path)
    assert generate(cos_node, config, capsys)[0] == 0
    before = {p: cos_node.node_path(p).read_bytes() for p in (SPEC, GPU_SPEC)}
    for library in cos_node.node_path(cos_node.driver_root + "/lib64").glob("libcuda.so*"):
        library.unlink()
    code, out, _err = generate(cos_node, config, capsys)
    assert code == 1
    assert "%s: no NVIDIA driver found" % SPEC in out and "the spec there was left as it was" in out
    assert {p: cos_node.node_path(p).read_bytes() for p in (SPEC, GPU_SPEC)} == before


def test_check_says_what_would_change_and_writes_nothing(cos_node, tmp_path, capsys):
    code, out, _err = generate(cos_node, settings(cos_node, tmp_path), capsys, "--check")
    assert code == 0 and "%s: would be created" % SPEC in out
    assert not cos_node.node_path(SPEC).exists()


@pytest.mark.parametrize("text, words", [
    ("{", "is not JSON"),
    ('{"version": 2, "specs": []}', 'expected {"version": 1, "specs": [...]}'),
    ('{"version": 1, "specs": ["x"]}', "specs[0]: each spec must be an object of cdi_spec options"),
    ('{"version": 1, "specs": [{"colour": "red"}]}', "specs[0]: unknown option 'colour'"),
    ('{"version": 1, "specs": [{"all_device": "yes"}]}', "all_device must be of type bool"),
    ('{"version": 1, "specs": [{"spec_mode": "everything"}]}', "spec_mode must be one of management, gpu"),
    ('{"version": 1, "specs": [{"state": "absent"}]}', "state must be present"),
])
def test_a_bad_settings_file_is_named_and_changes_nothing(cos_node, tmp_path, capsys, text, words):
    config = tmp_path / "cdi-refresh.json"
    config.write_text(text)
    code, out, err = generate(cos_node, config, capsys)
    assert code == 1 and out == "" and words in err and str(config) in err and "no spec was changed" in err
    assert not cos_node.node_path(SPEC).exists()


def test_a_missing_settings_file_is_named(cos_node, tmp_path, capsys):
    code, _out, err = generate(cos_node, tmp_path / "nowhere.json", capsys)
    assert code == 1 and "cannot read %s" % (tmp_path / "nowhere.json") in err


def test_aliases_are_taken_as_the_module_takes_them(cos_node, tmp_path, capsys):
    config = settings(cos_node, tmp_path, [{"mode": "gpu", "class": "gpu", "path": GPU_SPEC}])
    assert generate(cos_node, config, capsys)[0] == 0
    assert "kind: nvidia.com/gpu" in cos_node.node_path(GPU_SPEC).read_text()


# --- the program the node runs ---------------------------------------------------------------

@pytest.fixture(scope="module")
def program(tmp_path_factory):
    path = tmp_path_factory.mktemp("program") / "gpu-node-cdi"
    path.write_text(node_program.build("cdi_refresh"))
    path.chmod(0o755)
    return path


def run_program(program, *args):
    # -I: no site-packages and no PYTHONPATH, as on a node (COS) with nothing installed.
    return subprocess.run([SYSTEM_PYTHON, "-I", str(program)] + list(args), capture_output=True, text=True, check=False)


def test_the_program_runs_with_the_standard_library_only(program, cos_node, tmp_path):
    assert subprocess.run([SYSTEM_PYTHON, "-I", "-c", "import ansible"], capture_output=True, check=False).returncode != 0
    config = settings(cos_node, tmp_path)
    proc = run_program(program, "generate", "--config", str(config), "--host-root", str(cos_node.root))
    assert proc.returncode == 0, proc.stderr
    assert "gpu-node-cdi: %s: created" % SPEC in proc.stdout
    upgrade_driver(cos_node, NEW_VERSION)
    proc = run_program(program, "generate", "--config", str(config), "--host-root", str(cos_node.root))
    assert proc.returncode == 0 and "-> %s" % NEW_VERSION in proc.stdout, proc.stdout + proc.stderr
    assert NEW_VERSION in cos_node.node_path(SPEC).read_text()


def test_the_program_is_the_same_text_every_time_and_says_its_digest():
    first = node_program.build("cdi_refresh")
    assert first == node_program.build("cdi_refresh")
    assert first.startswith("#!/usr/bin/env python3\n# Generated by gpu_node.container_toolkit")
    # It embeds what cdi_refresh needs, and no module a node would lack.
    for name in ("cdi_refresh", "cdi_files", "cdi", "discovery", "node_fs", "node_model"):
        assert '"ansible_collections.gpu_node.container_toolkit.plugins.module_utils.%s"' % name in first


def test_a_module_utils_importing_ansible_cannot_become_a_program(tmp_path):
    (tmp_path / "entry.py").write_text("from ansible_collections.gpu_node.container_toolkit.plugins.module_utils "
                                       "import helper\n\ndef main(argv):\n    return 0\n")
    (tmp_path / "helper.py").write_text("from ansible.module_utils.basic import AnsibleModule\n")
    with pytest.raises(node_program.NodeProgramError, match=r"helper imports ansible\.module_utils\.basic"):
        node_program.build("entry", str(tmp_path))
    (tmp_path / "helper.py").write_text("import ansible\n")
    with pytest.raises(node_program.NodeProgramError, match="helper imports ansible"):
        node_program.build("entry", str(tmp_path))
    (tmp_path / "helper.py").write_text("import json\n")
    assert "def main(argv)" in node_program.build("entry", str(tmp_path))
    (tmp_path / "entry.py").write_text("X = 1\n")
    with pytest.raises(node_program.NodeProgramError, match="entry has no main"):
        node_program.build("entry", str(tmp_path))
    with pytest.raises(node_program.NodeProgramError, match="cannot read module_utils missing"):
        node_program.build("missing", str(tmp_path))


def test_main_without_a_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as caught:
        cdi_refresh.main([])
    assert caught.value.code == 2 and "generate" in capsys.readouterr().err


def test_char_links_are_made_again_at_boot(cos_node, tmp_path, capsys):
    config = tmp_path / "cdi-refresh.json"
    config.write_text(json.dumps({"version": 1, "specs": [{"spec_mode": "management"}], "char_links": {"dev_root": "/"}}))
    code, out, _err = generate(cos_node, config, capsys, "--check")
    assert code == 0 and "/dev/char: would be linked /dev/char/195:0" in out
    assert not cos_node.node_path("/dev/char").exists()
    code, out, _err = generate(cos_node, config, capsys)
    assert code == 0 and "/dev/char: linked" in out
    links = {p.name: os.readlink(p) for p in cos_node.node_path("/dev/char").iterdir()}
    assert links == {"%d:%d" % (n["major"], n["minor"]): "../" + n["path"][len("/dev/"):] for n in cos_node.device_nodes}
    code, out, _err = generate(cos_node, config, capsys)
    assert code == 0 and "/dev/char: up to date" in out


def test_char_links_setting_must_name_a_dev_root(cos_node, tmp_path, capsys):
    config = tmp_path / "cdi-refresh.json"
    config.write_text(json.dumps({"version": 1, "specs": [], "char_links": True}))
    code, _out, err = generate(cos_node, config, capsys)
    assert code == 1 and 'char_links must be {"dev_root": "<host path>"}' in err
