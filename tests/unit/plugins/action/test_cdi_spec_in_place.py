# -*- coding: utf-8 -*-
"""A CDI spec the node already holds costs no module run: the cdi_spec action builds it on the
controller from the look's driver facts and spec directories, and answers as the module does when
it checks the node itself. Anything it cannot answer exactly goes to the module."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from fakenode import LAYOUTS
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.action.cdi_spec import spec_in_place
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi, cdi_files, node_reads
from ansible_collections.gpu_node.container_toolkit.plugins.modules import cdi_spec, node_info
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import ReadAhead

# What the module and the action both report, compared field by field.
FIELDS = ("changed", "changes", "path", "previous_driver_version", "format", "kind", "cdi_version", "devices",
          "driver_version", "driver_root", "dev_root", "spec", "warnings")


def look(node, monkeypatch, **options):
    """The look at the node as the gpu_node role takes it, through JSON as it travels."""
    result, failed = run_module(node_info.main, dict(
        {"host_root": str(node.root), "read_ahead": {"trees": list(cdi.SPEC_DIRS)}}, **options), monkeypatch=monkeypatch)
    assert not failed, result
    return json.loads(json.dumps(result))


def spec_args(node, found, **options):
    """cdi_spec's validated arguments, the roots taken from the look as the role takes them."""
    args = dict({"host_root": str(node.root), "driver_root": found["driver_root"], "dev_root": found["dev_root"]},
                **options)
    validated = ArgumentSpecValidator(cdi_files.argument_spec()).validate(args)
    assert not validated.error_messages, validated.error_messages
    return validated.validated_parameters


def module(node, monkeypatch, found, **options):
    args = {k: v for k, v in spec_args(node, found, **options).items() if v is not None and k != "read_ahead"}
    result, failed = run_module(cdi_spec.main, args, diff=True, monkeypatch=monkeypatch)
    assert not failed, result
    return result


def answered(node, monkeypatch, **options):
    found = look(node, monkeypatch)
    return spec_in_place(spec_args(node, found, **options), ReadAhead(found["read_ahead"])), found


def same(node, monkeypatch, **options):
    """The action's answer, checked against the module's own no-op."""
    answer, found = answered(node, monkeypatch, **options)
    assert answer is not None
    checked = module(node, monkeypatch, found, **options)
    assert not checked["changed"]
    assert {k: answer.get(k) for k in FIELDS} == {k: checked.get(k) for k in FIELDS}
    return answer


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_spec_in_place_is_answered_as_the_module_answers(fake_node_factory, monkeypatch, layout):
    node = fake_node_factory(layout)
    found = look(node, monkeypatch)
    assert module(node, monkeypatch, found)["changed"]
    answer = same(node, monkeypatch)
    assert answer["devices"] and answer["path"] == cdi.default_path("management")


def test_per_gpu_and_management_specs_side_by_side_and_in_json(cos_node, monkeypatch):
    found = look(cos_node, monkeypatch)
    for options in ({}, {"spec_mode": "gpu"}, {"spec_mode": "gpu", "path": "/etc/cdi/nvidia-gpus.json"}):
        assert module(cos_node, monkeypatch, found, **options)["changed"]
    same(cos_node, monkeypatch)
    same(cos_node, monkeypatch, spec_mode="gpu")
    assert same(cos_node, monkeypatch, spec_mode="gpu", path="/etc/cdi/nvidia-gpus.json")["format"] == "json"


def test_a_spec_of_the_same_kind_elsewhere_is_warned_about_both_ways(cos_node, monkeypatch):
    found = look(cos_node, monkeypatch)
    module(cos_node, monkeypatch, found)
    spec = cos_node.node_path(cdi.default_path("management"))
    other = cos_node.node_path("/etc/cdi/nvidia-old.yaml")
    other.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(spec, other)
    assert any("nvidia-old.yaml" in w for w in same(cos_node, monkeypatch)["warnings"])


def test_anything_to_change_or_not_read_ahead_goes_to_the_module(cos_node, monkeypatch):
    found = look(cos_node, monkeypatch)
    module(cos_node, monkeypatch, found)
    spec = cos_node.node_path(cdi.default_path("management"))
    good = spec.read_bytes()
    assert answered(cos_node, monkeypatch)[0] is not None
    spec.write_bytes(good.replace(b"void", b"all"))
    assert answered(cos_node, monkeypatch)[0] is None
    spec.write_bytes(good)
    spec.chmod(0o600)
    assert answered(cos_node, monkeypatch)[0] is None
    spec.chmod(0o644)
    assert answered(cos_node, monkeypatch, state="absent")[0] is None
    assert answered(cos_node, monkeypatch, library_search_paths=["/nowhere"])[0] is None
    assert answered(cos_node, monkeypatch, path="/opt/cdi/nvidia.yaml")[0] is None
    # A look that did not read the spec directories, or read none of them.
    found = look(cos_node, monkeypatch, read_ahead={"files": []})
    assert spec_in_place(spec_args(cos_node, found), ReadAhead(found["read_ahead"])) is None
    spec.unlink()
    assert answered(cos_node, monkeypatch)[0] is None


def test_a_link_the_module_would_follow_goes_to_the_module(cos_node, monkeypatch):
    found = look(cos_node, monkeypatch)
    module(cos_node, monkeypatch, found)
    assert answered(cos_node, monkeypatch)[0] is not None
    etc_cdi = cos_node.node_path("/etc/cdi")
    etc_cdi.mkdir(parents=True, exist_ok=True)
    os.symlink("/var/run/cdi/nvidia.yaml", str(etc_cdi / "linked.yaml"))
    assert answered(cos_node, monkeypatch)[0] is None


def test_a_spec_directory_with_a_file_too_large_to_send_goes_to_the_module(cos_node, monkeypatch):
    found = look(cos_node, monkeypatch)
    module(cos_node, monkeypatch, found)
    assert answered(cos_node, monkeypatch)[0] is not None
    other = cos_node.node_path("/etc/cdi/vendor.yaml")
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_text("cdiVersion: 0.5.0\n" + "#" * node_reads.TREE_CONTENT_LIMIT + "\n")
    assert answered(cos_node, monkeypatch)[0] is None
