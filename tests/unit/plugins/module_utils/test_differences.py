from __future__ import annotations

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import (
    DifferenceTracker,
    change,
    change_line,
    file_action,
)


def test_equal_values_are_not_differences():
    tracker = DifferenceTracker()
    assert tracker.add("enable_cdi", True, True) is False
    assert not tracker.changed and len(tracker) == 0
    assert tracker.as_diff() == {"before": {}, "after": {}}


def test_differences_are_reported_once_with_reasons():
    tracker = DifferenceTracker()
    assert tracker.add("runtime nvidia", None, {"BinaryName": "/x"}, reason="missing") is True
    assert tracker.add("default_runtime_name", "runc", "nvidia") is True
    assert tracker.changed and len(tracker) == 2
    assert tracker.changes("/etc/containerd/config.toml") == [
        {"path": "/etc/containerd/config.toml", "action": "updated", "setting": "runtime nvidia", "reason": "missing"},
        {"path": "/etc/containerd/config.toml", "action": "updated", "setting": "default_runtime_name",
         "reason": "'runc' -> 'nvidia'"},
    ]
    assert tracker.as_diff() == {
        "before": {"runtime nvidia": None, "default_runtime_name": "runc"},
        "after": {"runtime nvidia": {"BinaryName": "/x"}, "default_runtime_name": "nvidia"},
    }


def test_a_whole_file_difference_names_its_own_path_and_action():
    tracker = DifferenceTracker()
    tracker.add("file /etc/docker/daemon.json", "created by this module", None, reason="created by this module",
                path="/etc/docker/daemon.json", action="removed")
    tracker.add("drop_in /etc/containerd/conf.d/99-nvidia.toml", None, "text", path="/etc/containerd/conf.d/99-nvidia.toml")
    tracker.add("imports", [], ["/etc/containerd/conf.d/99-nvidia.toml"], reason="added")
    # The settings of a file that was missing: the file is created.
    assert tracker.changes("/etc/containerd/config.toml", created=True) == [
        {"path": "/etc/docker/daemon.json", "action": "removed", "reason": "created by this module"},
        {"path": "/etc/containerd/conf.d/99-nvidia.toml", "action": "created"},
        {"path": "/etc/containerd/config.toml", "action": "created", "setting": "imports", "reason": "added"},
    ]


def test_change_refuses_an_action_word_the_collection_does_not_use():
    assert change("/x", "kept", reason="changed by hand") == {"path": "/x", "action": "kept", "reason": "changed by hand"}
    with pytest.raises(ValueError, match="'deleted' is not one of created, updated"):
        change("/x", "deleted")


def test_file_action_and_change_line():
    assert [file_action(None, "a"), file_action("a", "b"), file_action("a", None)] == ["created", "updated", "removed"]
    assert change_line(change("/x.toml", "updated", "missing", "runtime nvidia")) == "updated /x.toml: runtime nvidia: missing"
    assert change_line(change("/etc/containerd", "removed")) == "removed /etc/containerd"
