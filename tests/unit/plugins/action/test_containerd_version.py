"""containerd_runtime asks the node's containerd for its release only where that runs on the node itself."""

from __future__ import annotations

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.action import containerd_runtime


class Files:
    """The part of NodeFiles the question uses: which binaries exist, and a command run on the node."""

    def __init__(self):
        self.ran = []

    def existing(self, host_root, paths):
        return ["/usr/bin/containerd"]

    def run(self, argv):
        self.ran.append(argv)
        return 0, "containerd github.com/containerd/containerd v1.7.34 abc"


def ask(host_root):
    files = Files()
    action = containerd_runtime.ActionModule.__new__(containerd_runtime.ActionModule)
    return action._containerd_version(files, host_root), files.ran


def test_on_the_node_itself_its_containerd_is_asked():
    assert ask("/") == ("containerd github.com/containerd/containerd v1.7.34 abc", [["/usr/bin/containerd", "--version"]])


@pytest.mark.parametrize("host_root", ["/host", "/host/", "/tmp/node", "//host"])
def test_a_node_seen_under_another_host_root_never_has_a_binary_run(host_root):
    assert ask(host_root) == (None, [])
