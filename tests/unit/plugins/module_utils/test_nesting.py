from __future__ import annotations

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config, nesting
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toml_edit


def nested(levels):
    value = 1
    for level in range(levels):
        value = {"a": value} if level % 2 else [value]
    return value


@pytest.mark.parametrize("levels", [0, 1, 2, 10, 64, 65, 5000])
def test_depth_counts_dicts_and_lists_without_recursion(levels):
    found = nesting.depth(nested(levels))
    assert found == levels if levels <= nesting.MAX_NESTING else found > nesting.MAX_NESTING


TOO_DEEP = {
    "an inline table 2,000 deep": "version = 2\nx = " + "{a = " * 2000 + "1" + "}" * 2000 + "\n",
    "an array 2,000 deep": "x = " + "[" * 2000 + "]" * 2000 + "\n",
    "an array 65 deep": "x = " + "[" * 65 + "]" * 65 + "\n",
    "tables 70 deep": "[" + ".".join("t%d" % i for i in range(70)) + "]\nx = 1\n",
}


@pytest.mark.parametrize("case", sorted(TOO_DEEP))
def test_a_toml_file_nested_too_deep_is_refused_naming_it(case):
    with pytest.raises(toml_edit.TomlEditError, match=r"^/etc/containerd/config\.toml nests .* more than 64 levels"):
        toml_edit.load(TOO_DEEP[case], "/etc/containerd/config.toml")


def test_real_nesting_is_read():
    assert toml_edit.load("x = " + "[" * 60 + "]" * 60 + "\n", "f")["x"]


@pytest.mark.parametrize("text", [
    '{"x": ' + "[" * 2000 + "]" * 2000 + "}",
    '{"x": ' + '{"a": ' * 2000 + "1" + "}" * 2000 + "}",
    '{"x": ' + "[" * 64 + "]" * 64 + "}",
    '{"x": [' + '{"a": ' * 70 + "1" + "}" * 70 + "]}",
], ids=["array 2,000", "objects 2,000", "array 64 under a key", "objects 70 in an array"])
def test_a_daemon_json_nested_too_deep_is_refused_naming_it(text):
    with pytest.raises(docker_config.ConfigError, match=r"^/etc/docker/daemon\.json nests .* more than 64 levels"):
        docker_config.parse(text, "/etc/docker/daemon.json")
