from __future__ import annotations

from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.modules import nvidia_driver_info


def test_reports_facts_at_top_level(cos_node, monkeypatch):
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert not failed and result["changed"] is False
    assert result["driver_root"] == "/home/kubernetes/bin/nvidia"
    assert result["driver_version"] == "535.104.12"
    assert "warnings" not in result or result["warnings"] == []


def test_warnings_become_module_warnings(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", broken=("library",))
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(node.root)}, monkeypatch=monkeypatch)
    assert not failed
    assert any("libnvidia-broken" in w for w in result["warnings"])


def test_failure_names_option(tmp_path, monkeypatch):
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(tmp_path)}, monkeypatch=monkeypatch)
    assert failed
    assert "no NVIDIA driver found under host_root %s" % tmp_path in result["msg"]
    assert "Set driver_root" in result["msg"]
    # short enough to read; the paths searched are data
    assert len(result["msg"]) < 500 + len(str(tmp_path))
    assert "/home/kubernetes/bin/nvidia/lib64/libcuda.so.*" in result["searched"]
