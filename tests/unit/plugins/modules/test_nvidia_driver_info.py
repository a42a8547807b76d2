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


def test_version_mismatch_is_a_warning_with_the_versions_as_data(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", driver_version="535.104.12", kernel_version="550.54.15")
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(node.root)}, monkeypatch=monkeypatch)
    assert not failed
    assert result["driver_version"] == "550.54.15" and result["library_version"] == "535.104.12"
    assert len(result["libraries"]) == len(node.libraries)
    (warning,) = result["warnings"]
    assert warning.startswith("kernel module 550.54.15, libraries 535.104.12 found under /home/kubernetes/bin/nvidia")


def test_driver_root_that_is_a_file_fails(cos_node, monkeypatch):
    cos_node.node_path("/opt").mkdir()
    cos_node.node_path("/opt/nvidia").write_text("x")
    result, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root), "driver_root": "/opt/nvidia"},
                                monkeypatch=monkeypatch)
    assert failed and "driver_root /opt/nvidia is a file, not a directory" in result["msg"]
