"""gpu_node_look: the start of a gpu_node run in one task (variables, look, choices, inputs)."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.action import gpu_node_look
from ansible_collections.gpu_node.container_toolkit.plugins.filter.node_layout import read_ahead_paths
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs, node_record
from ansible_collections.gpu_node.container_toolkit.plugins.modules import node_info
from ansible_collections.gpu_node.container_toolkit.plugins.modules import node_record as node_record_module
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import run_inputs

try:  # ansible-core 2.19+: only trusted text is a template, as variables from YAML files are
    from ansible.template import trust_as_template
except ImportError:
    def trust_as_template(text):
        return text

ROLE = Path(__file__).resolve().parents[4] / "roles" / "gpu_node"
INSTALL_DIR = "/home/kubernetes/bin/nvidia/toolkit"
READ_AHEAD = dict(read_ahead_paths([INSTALL_DIR], containerd_configs=["/etc/containerd/config.toml"]), exist=[])
SETTINGS = {"state": "present", "container_engines": "auto", "containerd_restart_mode": "none",
            "toolkit_install_method": "files"}


@pytest.fixture
def source(tmp_path):
    tree = tmp_path / "toolkit" / "usr" / "bin"
    tree.mkdir(parents=True)
    (tree / "nvidia-ctk").write_bytes(b"\x7fELF one")
    return tmp_path / "toolkit"


def look(monkeypatch, node_root, task_vars=None, check=False, **args):
    """One gpu_node_look task on the node at ``node_root``: (result, modules run)."""
    args = dict({"host_root": str(node_root), "read_ahead": READ_AHEAD, "settings": SETTINGS,
                 "options_file": str(ROLE / "meta" / "argument_specs.yml"), "known": ["gpu_node_driver"],
                 "skip_unchanged": True, "other_inputs": ["containerd_socket"]}, **args)
    validated = ArgumentSpecValidator(argument_specs.gpu_node_look()).validate(args)
    assert not validated.error_messages, validated.error_messages
    task_vars = dict({"inventory_hostname": "node1", "playbook_dir": "/srv/play", "gpu_node_state": "present",
                      "ansible_run_tags": ["all"], "ansible_skip_tags": []}, **(task_vars or {}))
    action = gpu_node_look.ActionModule.__new__(gpu_node_look.ActionModule)
    action._task = types.SimpleNamespace(check_mode=check, diff=False, get_search_path=lambda: [str(ROLE / "tasks")])
    action._loader = DataLoader()
    action._templar = Templar(loader=action._loader, variables=task_vars)
    modules = []

    def run(module, module_args, _task_vars):
        modules.append(module)
        result, _failed = run_module(node_info.main, module_args, monkeypatch=monkeypatch)
        return result

    action.run_module = run
    return action.converge(validated.validated_parameters, task_vars), modules


def test_an_unknown_variable_fails_before_the_look(cos_node, monkeypatch):
    result, modules = look(monkeypatch, cos_node.root, {"gpu_node_set_as_defualt": True, "gpu_node_mine": 1},
                           allowed=["gpu_node_mi.*"])
    assert result["failed"] and modules == []
    assert result["msg"] == (
        "Unknown variables for the gpu_node role: gpu_node_set_as_defualt (did you mean gpu_node_set_as_default?). "
        "A misspelled setting would be ignored. Correct the name, or, for a variable of your own under this prefix, "
        "add it to gpu_node_variables_allowed. Nothing was changed.")


def test_a_relative_host_root_fails_before_the_look(monkeypatch):
    result, modules = look(monkeypatch, "nodes/one")
    assert result["failed"] and modules == []
    assert "gpu_node_host_root 'nodes/one' is a relative path" in result["msg"] and "'/srv/play/nodes/one'" in result["msg"]


def test_the_look_gives_the_choices_and_the_inputs(cos_node, monkeypatch, source):
    result, modules = look(monkeypatch, cos_node.root, sources=[str(source)])
    assert not result.get("failed") and modules == ["gpu_node.container_toolkit.node_info"]
    choices = result["choices"]
    assert (choices["platform"], choices["engines"], choices["problems"]) == ("cos", ["containerd"], [])
    # No record on the node yet: nothing to skip, and this run records it.
    assert (choices["in_place"], choices["record"]) == (False, True)
    assert len(choices["inputs_digest"]) == 64 and len(result["look_digest"]) == 64


def digest(monkeypatch, node, task_vars=None, **args):
    return look(monkeypatch, node.root, task_vars, **args)[0]["choices"]["inputs_digest"]


def test_each_input_counts(cos_node, monkeypatch, source):
    base = digest(monkeypatch, cos_node, sources=[str(source)])
    assert digest(monkeypatch, cos_node, sources=[str(source)]) == base
    # An option, through a template too; a variable passed on; the host; the distribution.
    assert digest(monkeypatch, cos_node, {"gpu_node_set_as_default": True}, sources=[str(source)]) != base
    templated = digest(monkeypatch, cos_node, {"gpu_node_set_as_default": trust_as_template("{{ mine }}"), "mine": True},
                       sources=[str(source)])
    assert templated == digest(monkeypatch, cos_node, {"gpu_node_set_as_default": True}, sources=[str(source)])
    assert digest(monkeypatch, cos_node, {"gpu_node_set_as_default": trust_as_template("{{ mine }}"), "mine": False},
                  sources=[str(source)]) != templated
    assert digest(monkeypatch, cos_node, {"containerd_socket": "/run/k3s.sock"}, sources=[str(source)]) != base
    assert digest(monkeypatch, cos_node, {"inventory_hostname": "node2"}, sources=[str(source)]) != base
    assert digest(monkeypatch, cos_node, {"ansible_facts": {"distribution": "Debian"}}, sources=[str(source)]) != base
    assert digest(monkeypatch, cos_node, sources=["https://example.com/t.tar.gz"]) not in (base, "")
    (source / "usr" / "bin" / "nvidia-ctk").write_bytes(b"\x7fELF two")
    assert digest(monkeypatch, cos_node, sources=[str(source)]) != base


@pytest.mark.parametrize("args, task_vars", [
    ({"sources": ["/nowhere/toolkit"]}, {}),
    ({"sources": ["/srv/toolkit"], "remote_src": True}, {}),
    ({"skip_unchanged": False}, {}),
    ({}, {"gpu_node_set_as_default": trust_as_template("{{ undefined_variable }}")}),
])
def test_no_digest_no_skip_and_no_record(cos_node, monkeypatch, args, task_vars):
    choices = look(monkeypatch, cos_node.root, task_vars, **args)[0]["choices"]
    assert (choices["inputs_digest"], choices["in_place"], choices["record"]) == ("", False, False)


@pytest.mark.parametrize("check, task_vars, record", [
    (True, {}, False),
    (False, {"ansible_skip_tags": ["cdi"]}, False),
    (False, {"ansible_run_tags": ["containerd"]}, False),
    (False, {"ansible_run_tags": ["toolkit", "cdi", "containerd", "docker", "crio"]}, True),
])
def test_only_a_run_of_every_step_records(cos_node, monkeypatch, check, task_vars, record):
    assert look(monkeypatch, cos_node.root, task_vars, check=check)[0]["choices"]["record"] is record


def test_the_record_of_the_same_inputs_skips_the_steps(cos_node, monkeypatch):
    first = look(monkeypatch, cos_node.root)[0]["choices"]
    _written, failed = run_module(node_record_module.main, {
        "host_root": str(cos_node.root), "read_ahead": READ_AHEAD, "dir": INSTALL_DIR + "/.gpu-node",
        "inputs": first["inputs_digest"]}, monkeypatch=monkeypatch)
    assert not failed
    assert look(monkeypatch, cos_node.root)[0]["choices"]["in_place"]
    assert not look(monkeypatch, cos_node.root, {"gpu_node_set_as_default": True})[0]["choices"]["in_place"]


def test_no_driver_fails_only_where_the_run_needs_one(tmp_path, monkeypatch):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text("ID=ubuntu\n")
    result, _modules = look(monkeypatch, tmp_path)
    assert result["failed"] and result["msg"].startswith("no NVIDIA driver found under host_root")
    result, _modules = look(monkeypatch, tmp_path, needs_driver=False)
    assert not result.get("failed") and result["choices"]["platform"] == "ubuntu"


def test_a_choices_problem_fails_naming_the_setting(cos_node, monkeypatch):
    result, _modules = look(monkeypatch, cos_node.root, settings=dict(SETTINGS, container_engines=["podman"]))
    assert result["failed"] and result["msg"] == (
        "gpu_node_container_engines names 'podman', which is not one of containerd, docker, crio. Nothing was changed.")


def test_the_collection_digest_follows_its_files(tmp_path):
    root = tmp_path / "collection"
    (root / "plugins").mkdir(parents=True)
    (root / "plugins" / "a.py").write_text("one")
    cache = tmp_path / "cache"
    cache.mkdir()
    first = run_inputs.collection_digest_cached(str(cache), root)
    assert first == run_inputs.collection_digest(root) and len(list(cache.iterdir())) == 1
    (root / "plugins" / "a.py").write_text("two!")
    assert run_inputs.collection_digest_cached(str(cache), root) != first
    # Without a usable cache dir, computed each time.
    assert run_inputs.collection_digest_cached(str(tmp_path / "nowhere"), root) == run_inputs.collection_digest(root)
    assert node_record.digest([1]) == node_record.digest((1,))
