"""nvidia_driver_info through the real ``ansible`` command, as users run it."""

from __future__ import annotations

import json
import subprocess

from ansible_runner import ansible_env, run_module
from fakenode import link_driver_root


def test_cos_node_done_when(cos_node):
    result = run_module("nvidia_driver_info", {"host_root": str(cos_node.root)})
    assert result["_rc"] == 0, result
    assert result["driver_root"] == "/home/kubernetes/bin/nvidia"
    assert result["dev_root"] == "/"
    assert result["driver_version"] == "535.104.12"
    libs = {lib["path"]: lib["soname"] for lib in result["libraries"]}
    expected = {lib["path"]: lib["soname"] for lib in cos_node.libraries}
    assert libs == expected
    assert libs["/home/kubernetes/bin/nvidia/lib64/libcuda.so.535.104.12"] == "libcuda.so.1"
    assert [(g["uuid"], g["minor"]) for g in result["gpus"]] == [(g["uuid"], g["minor"]) for g in cos_node.gpus]
    assert str(cos_node.root) not in json.dumps({k: v for k, v in result.items() if not k.startswith("_")})
    assert result["changed"] is False


def test_cos_driver_root_behind_a_relative_link(cos_node):
    link_driver_root(cos_node, "/var/lib/nvidia", relative=True)
    result = run_module("nvidia_driver_info", {"host_root": str(cos_node.root)})
    assert result["_rc"] == 0, result
    assert result["driver_root"] == "/home/kubernetes/bin/nvidia"
    assert result["driver_root_resolved"] == "/var/lib/nvidia"
    assert {lib["path"] for lib in result["libraries"]} == {lib["path"] for lib in cos_node.libraries}
    assert "[WARNING]" not in result["_stderr"], result["_stderr"]


def test_problems_are_warnings_not_failures(fake_node_factory):
    node = fake_node_factory("cos", driver_version="535.104.12", kernel_version="550.54.15", broken=("soname",))
    result = run_module("nvidia_driver_info", {"host_root": str(node.root)})
    assert result["_rc"] == 0, result
    # Ansible prints a result's warnings on stderr, as [WARNING] lines (wrapped: compare without spaces).
    stderr = "".join(result["_stderr"].split())
    assert "kernelmodule550.54.15,libraries535.104.12foundunder/home/kubernetes/bin/nvidia" in stderr, stderr
    assert "libcuda.so.535.104.12hasnone" in stderr
    assert result["library_version"] == "535.104.12"


def test_ubuntu_node_through_ld_cache(ubuntu_node):
    result = run_module("nvidia_driver_info", {"host_root": str(ubuntu_node.root), "library_search_paths": []})
    assert result["_rc"] == 0, result
    assert len(result["libraries"]) == len(ubuntu_node.libraries)


def test_check_mode_and_clear_failure(tmp_path):
    result = run_module("nvidia_driver_info", {"host_root": str(tmp_path)}, check=True)
    assert result["_rc"] != 0
    assert "no NVIDIA driver found" in result["msg"]
    assert "Traceback" not in result["msg"]


def test_ansible_doc_renders_every_module():
    env = ansible_env()
    listing = subprocess.run(["ansible-doc", "-l", "gpu_node.container_toolkit", "-j"], capture_output=True,
                             text=True, env=env, check=True)
    modules = sorted(json.loads(listing.stdout))
    assert "gpu_node.container_toolkit.nvidia_driver_info" in modules
    for module in modules:
        doc = subprocess.run(["ansible-doc", "-j", module], capture_output=True, text=True, env=env, check=False)
        assert doc.returncode == 0, doc.stderr
        data = json.loads(doc.stdout)[module]["doc"]
        assert {"check_mode", "diff_mode", "safe_file_operations"} <= set(data["attributes"]), module
