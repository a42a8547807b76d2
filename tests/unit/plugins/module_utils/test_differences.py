from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import DifferenceTracker


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
    assert tracker.reasons() == ["runtime nvidia: missing", "default_runtime_name: 'runc' -> 'nvidia'"]
    assert tracker.as_diff() == {
        "before": {"runtime nvidia": None, "default_runtime_name": "runc"},
        "after": {"runtime nvidia": {"BinaryName": "/x"}, "default_runtime_name": "nvidia"},
    }
