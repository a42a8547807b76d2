"""Nodes a compromised container, another tool or a broken disk could leave behind, through the real
``ansible`` command: the collection fails clearly, never hangs, and changes nothing."""

from __future__ import annotations

import json
import os
import re

import node_tree
import pytest
import toolkit_artifacts
from ansible_runner import REPO, run_module, run_playbook

PLAYBOOKS = REPO / "playbooks"
SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"
RUNTIMES = [{"name": "nvidia", "binary": "/usr/bin/nvidia-container-runtime"}]
ENGINE_FILES = {
    "containerd_runtime": "/etc/containerd/config.toml",
    "docker_runtime": "/etc/docker/daemon.json",
    "crio_runtime": "/etc/crio/crio.conf.d/99-nvidia.toml",
    "toolkit_config": "/etc/nvidia-container-runtime/config.toml",
}


def plant(root, host_path, kind):
    here = root / host_path.lstrip("/")
    here.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(here)
    else:  # reads like /dev/zero: never ends
        os.mknod(here, 0o20666, os.makedev(1, 5))
    return here


@pytest.mark.parametrize("kind", ["fifo", "zero-device"])
@pytest.mark.parametrize("module", sorted(ENGINE_FILES))
def test_a_fifo_or_device_where_a_config_file_goes_fails_naming_it(tmp_path, module, kind):
    root = tmp_path / "node"
    path = ENGINE_FILES[module]
    plant(root, path, kind)
    before = node_tree.listing(root)
    args = {"host_root": str(root), "path": path}
    if module == "toolkit_config":
        args["driver_root"] = "/"
    else:
        args["runtimes"] = RUNTIMES
    result = run_module(module, args)
    what = "FIFO" if kind == "fifo" else "character device"
    assert result["_rc"] != 0 and "%s is a %s, not a regular file" % (path, what) in result["msg"], result
    assert node_tree.listing(root) == before


DEEP = {
    "containerd_runtime": ("/etc/containerd/config.toml", "version = 2\nx = " + "{a = " * 2000 + "1" + "}" * 2000 + "\n"),
    "docker_runtime": ("/etc/docker/daemon.json", '{"x": ' + "[" * 2000 + "]" * 2000 + "}\n"),
    # Another tool's drop-in, which the module reads to find the runtime it starts from.
    "crio_runtime": ("/etc/crio/crio.conf.d/10-other.conf", "x = " + "[" * 2000 + "]" * 2000 + "\n"),
    "toolkit_config": ("/etc/nvidia-container-runtime/config.toml", "x = " + "[" * 2000 + "]" * 2000 + "\n"),
}


@pytest.mark.parametrize("module", sorted(DEEP))
def test_a_file_nested_thousands_deep_fails_naming_it(tmp_path, module):
    """Python's parsers recurse: 2,000 levels gave 'maximum recursion depth exceeded' with no file named."""
    root = tmp_path / "node"
    path, text = DEEP[module]
    (root / path.lstrip("/")).parent.mkdir(parents=True)
    (root / path.lstrip("/")).write_text(text)
    before = node_tree.listing(root)
    args = {"host_root": str(root)}
    if module == "toolkit_config":
        args.update(path=path, driver_root="/")
    else:
        args["runtimes"] = RUNTIMES
    result = run_module(module, args)
    assert result["_rc"] != 0 and "%s nests tables, arrays or objects more than 64 levels deep" % path in result["msg"], result
    assert node_tree.listing(root) == before


DECOYS = ["/etc/empty-admin-dir", "/home/user/.ssh", "/var/lib/empty"]


def _forge(text):
    """The record of created directories in ``text`` with decoys added: what a compromised container
    that can write the engine's config directory could leave."""
    forged, count = re.subn(r'(when empty: |"created_dirs": )\[', lambda m: m.group(1) + "[" + "".join(
        json.dumps(d) + ", " for d in DECOYS + ["/escape/empty"]), text, count=1)
    assert count == 1, text[:300]
    return forged


RECORDS = {
    # module: (the file holding the record, the directories the first write made)
    "containerd_runtime": ("/etc/containerd/config.toml", ["/etc/containerd"]),
    "docker_runtime": ("/etc/docker/.daemon.json.gpu_node.container_toolkit.json", ["/etc/docker"]),
    "crio_runtime": ("/etc/crio/crio.conf.d/99-nvidia.toml", ["/etc/crio/crio.conf.d", "/etc/crio"]),
}


@pytest.mark.parametrize("module", sorted(RECORDS))
def test_a_forged_record_of_created_directories_removes_none_but_the_files_own(tmp_path, module):
    root = tmp_path / "node"
    outside = tmp_path / "outside"
    (outside / "empty").mkdir(parents=True)
    for decoy in DECOYS:
        (root / decoy.lstrip("/")).mkdir(parents=True)
    (root / "escape").symlink_to(str(outside))
    args = {"host_root": str(root), "runtimes": RUNTIMES}
    made = run_module(module, args)
    assert made["_rc"] == 0 and made["changed"], made
    record, own = RECORDS[module]
    path = root / record.lstrip("/")
    path.write_text(_forge(path.read_text()))
    removed = run_module(module, dict(args, state="absent"))
    assert removed["_rc"] == 0, removed
    assert sorted(removed.get("removed_dirs") or []) == sorted(own), removed
    assert all((root / decoy.lstrip("/")).is_dir() for decoy in DECOYS)
    assert (outside / "empty").is_dir()


def test_site_verify_and_uninstall_on_a_hostile_node_stay_inside_it_and_lose_nothing(fake_node_factory, tmp_path):
    """The playbooks, end to end, on a COS node a compromised container has been at: driver files
    linked to the node's secrets, a link out of the node, and between site and uninstall every
    record of created directories forged to list decoys and that link."""
    node = fake_node_factory("cos", missing=("nvidiactl",))
    root = node.root
    outside = tmp_path / "outside"
    (outside / "empty").mkdir(parents=True)
    (outside / "secret").write_text("not the node's\n")
    outside_before = node_tree.listing(outside)
    (root / "escape").symlink_to(str(outside))  # absolute: out of the node if followed here
    for decoy in DECOYS:
        (root / decoy.lstrip("/")).mkdir(parents=True, exist_ok=True)
    shadow = root / "etc/shadow"
    shadow.write_text("root:$6$secret:19000:0:99999:7:::\n")
    shadow.chmod(0o640)
    for relative in ("firmware/nvidia/535.104.12/gsp_ga10x.bin", "vulkan/icd.d/nvidia_icd.json"):
        planted = root / "home/kubernetes/bin/nvidia" / relative
        planted.unlink()
        planted.symlink_to("/etc/shadow")
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    extra = {"gpu_node_hosts": "localhost", "gpu_node_host_root": str(root), "gpu_node_toolkit_src": str(artifacts),
             "gpu_node_containerd_restart_mode": "none"}
    gke_config = (root / "etc/containerd/config.toml").read_bytes()

    site = run_playbook(PLAYBOOKS / "site.yml", extra_vars=extra)
    assert site.returncode == 0, site.stdout[-4000:]
    spec = root / SPEC.lstrip("/")
    assert "/etc/shadow" not in spec.read_text() and "gsp_ga10x.bin" not in spec.read_text()
    verify = run_playbook(PLAYBOOKS / "verify.yml", extra_vars=extra)
    assert verify.returncode == 0, verify.stdout[-4000:]

    forged = []
    for record in (SPEC, "/home/kubernetes/bin/nvidia/toolkit/.toolkit-manifest.json"):
        path = root / record.lstrip("/")
        text = path.read_text()
        if "created_dirs" in text or ": created;" in text:
            path.write_text(_forge(text))
            forged.append(record)
    assert forged == [SPEC, "/home/kubernetes/bin/nvidia/toolkit/.toolkit-manifest.json"]

    uninstall = run_playbook(PLAYBOOKS / "uninstall.yml", extra_vars=extra)
    assert uninstall.returncode == 0, uninstall.stdout[-4000:]
    assert node_tree.listing(outside) == outside_before
    assert all((root / decoy.lstrip("/")).is_dir() for decoy in DECOYS)
    assert (root / "etc/containerd/config.toml").read_bytes() == gke_config
    assert shadow.read_text().startswith("root:") and not spec.exists()
