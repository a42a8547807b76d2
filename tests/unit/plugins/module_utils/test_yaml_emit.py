"""The YAML emitter: every value reads back the same through PyYAML, quoting only where needed."""

from __future__ import annotations

import random

import pytest
import yaml

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import yaml_emit


@pytest.mark.parametrize("value, text", [
    ("nvidia.com/gpu", "nvidia.com/gpu"),
    ("/dev/nvidia0", "/dev/nvidia0"),
    ("NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_VISIBLE_DEVICES=void"),
    ("libcuda.so.1::/lib64/libcuda.so", "libcuda.so.1::/lib64/libcuda.so"),
    ("--link", "--link"),
    ("--host-driver-version=535.104.12", "--host-driver-version=535.104.12"),
    ("GPU-5a9e4a0c-4e4f-0d34-2b4c-3a9d6c1d2e3f", "GPU-5a9e4a0c-4e4f-0d34-2b4c-3a9d6c1d2e3f"),
    ("0", '"0"'),
    ("12", '"12"'),
    ("0.5.0", "0.5.0"),
    ("535.104", '"535.104"'),
    ("1e3", '"1e3"'),
    ("0x1f", '"0x1f"'),
    ("0o17", '"0o17"'),
    ("1_000", '"1_000"'),
    ("1:20", '"1:20"'),
    (".5", '".5"'),
    (".inf", '".inf"'),
    ("yes", '"yes"'),
    ("No", '"No"'),
    ("on", '"on"'),
    ("y", '"y"'),
    ("null", '"null"'),
    ("~", '"~"'),
    ("2024-01-02", '"2024-01-02"'),
    ("", '""'),
    ("a: b", '"a: b"'),
    ("a #b", '"a #b"'),
    ("key:", '"key:"'),
    ("-", '"-"'),
    ("---", '"---"'),
    ("...", '"..."'),
    ("-1", '"-1"'),
    ("*alias", '"*alias"'),
    ("&anchor", '"&anchor"'),
    ("!tag", '"!tag"'),
    ("'quoted'", "\"'quoted'\""),
    ('say "hi"', '"say \\"hi\\""'),
    ("back\\slash", '"back\\\\slash"'),
    ("tab\there", '"tab\\there"'),
    ("line\nbreak", '"line\\nbreak"'),
    ("nul\0", '"nul\\0"'),
    ("bell\x07", '"bell\\x07"'),
    ("nel\x85", '"nel\\x85"'),
    ("ls\u2028", '"ls\\u2028"'),
    ("bom\ufeff", '"bom\\ufeff"'),
    ("héllo", '"héllo"'),
    ("emoji\U0001F600", '"emoji\U0001F600"'),
    (None, "null"),
    (True, "true"),
    (False, "false"),
    (0, "0"),
    (438, "438"),
    (-3, "-3"),
])
def test_scalar(value, text):
    assert yaml_emit.scalar(value) == text
    assert yaml.safe_load(yaml_emit.dump({"k": value})) == {"k": value}


@pytest.mark.parametrize("value, text", [
    ({}, "{}\n"),
    ([], "[]\n"),
    ({"a": 1}, "a: 1\n"),
    ({"a": [], "b": {}}, "a: []\nb: {}\n"),
    ({"a": ["x", "z"]}, "a:\n- x\n- z\n"),
    ({"a": {"b": {"c": "d"}}}, "a:\n  b:\n    c: d\n"),
    ({"a": [{"b": 1, "c": [2]}]}, "a:\n- b: 1\n  c:\n  - 2\n"),
    ([[1, [2, 3]], []], "- - 1\n  - - 2\n    - 3\n- []\n"),
    ({"0": "zero"}, '"0": zero\n'),
    ("plain", "plain\n"),
])
def test_dump(value, text):
    assert yaml_emit.dump(value) == text
    assert yaml.safe_load(text) == value


def test_keeps_key_order():
    value = {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [], "containerEdits": {}}
    assert [line.split(":")[0] for line in yaml_emit.dump(value).splitlines()] == list(value)


@pytest.mark.parametrize("value", [1.5, b"bytes", {1: "int key"}, {"set": {1, 2}}])
def test_rejects_what_cdi_never_holds(value):
    with pytest.raises(TypeError):
        yaml_emit.dump(value)


def test_random_strings_round_trip():
    rng = random.Random(20261203)  # noqa: S311 - reproducible test data, not secrets
    alphabet = "aZ09 _-./:=,+@#&*!|>'\"%`?[]{}~\\\t\n\r\0\x7f\x85\xa0é\u2028\ufeff\U0001F600yesnoYn"
    for _case in range(3000):
        text = "".join(rng.choice(alphabet) for _char in range(rng.randint(0, 12)))
        doc = {"s": text, "l": [text, {"k": text}]}
        assert yaml.safe_load(yaml_emit.dump(doc)) == doc, repr(text)
