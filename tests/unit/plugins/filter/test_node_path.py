"""The node_path filter joins host_root and a host path as node_model does, in real Jinja templating."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_node.container_toolkit.plugins.filter import node_path
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_model


@pytest.mark.parametrize("host_root, host_path, expected", [
    ("/", "/etc/containerd/config.toml", "/etc/containerd/config.toml"),
    ("/tmp/node/", "/etc/containerd/config.toml", "/tmp/node/etc/containerd/config.toml"),
    ("/tmp/node", "etc//cdi/../cdi/nvidia.yaml", "/tmp/node/etc/cdi/nvidia.yaml"),
    ("/host", "/", "/host"),
    ("", "/run/containerd/containerd.sock", "/run/containerd/containerd.sock"),
])
def test_same_join_as_the_modules(host_root, host_path, expected):
    joined = node_path.FilterModule().filters()["node_path"](host_root, host_path)
    assert joined == expected == node_model.node_path(host_root, host_path)


def test_non_strings_are_refused_naming_the_filter():
    with pytest.raises(AnsibleFilterError, match=r"node_path: host_root and host_path must be strings, got str and list"):
        node_path.node_path_filter("/", ["/etc"])
