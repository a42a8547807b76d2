"""cdi_spec against real consumers: Debian's CDI JSON schema, the CDI Go library's strict
validation, podman 4.3 injecting the devices into a busybox container, and the real ``ansible``."""

from __future__ import annotations

import json
import os
import stat

import cdi_tools
import pytest
import yaml
from ansible_runner import run_module as ansible_module
from fakenode import link_driver_root
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi
from ansible_collections.gpu_node.container_toolkit.plugins.modules import cdi_spec

COS_HOOK = "/home/kubernetes/bin/nvidia/toolkit/nvidia-cdi-hook"
COS_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"

# (file name, module arguments): every shape of spec the module writes.
VARIANTS = [
    ("management.yaml", {"mode": "management"}),
    ("management.json", {"mode": "management", "disable_hooks": ["all"]}),
    ("gpu.yaml", {"mode": "gpu"}),
    ("gpu.json", {"mode": "gpu", "device_name_strategy": ["index", "uuid", "type-index"]}),
    ("gpu-one.yaml", {"mode": "gpu", "devices": ["1"], "all_device": False, "container_driver_root": "/usr/local/nvidia"}),
    ("gpu-ctk.yaml", {"mode": "gpu", "hook_path": "/usr/bin/nvidia-ctk", "ldconfig_path": "/sbin/ldconfig",
                      "vendor": "example.com", "class": "accel"}),
]


def generate(node, monkeypatch, directory, mig=False):
    """Write every variant for ``node`` into the host dir ``directory``; return their node paths."""
    paths = []
    for name, args in VARIANTS:
        result, failed = run_module(cdi_spec.main, dict(args, host_root=str(node.root), path=directory + "/" + name),
                                    monkeypatch=monkeypatch)
        assert not failed, result
        if mig and args["mode"] == "gpu" and "devices" not in args:
            assert any(":" in d.split("=")[1] for d in result["devices"]), result["devices"]
        paths.append(node.node_path(result["path"]))
    return paths


@pytest.fixture(scope="module")
def validator():
    reason = cdi_tools.schema_missing()
    if reason:
        pytest.skip(reason)
    return cdi_tools.schema_validator()


@pytest.mark.parametrize("layout, mig", [("cos", False), ("ubuntu", False), ("driver-container", False), ("cos", True)])
def test_every_spec_passes_schema_and_cdi_library(fake_node_factory, monkeypatch, validator, layout, mig):
    node = fake_node_factory(layout, mig=mig)
    paths = generate(node, monkeypatch, "/etc/cdi", mig=mig)
    for path in paths:
        text = path.read_text()
        assert str(node.root) not in text
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        errors = [e.message for e in validator.iter_errors(data)]
        assert not errors, (path.name, errors)
    reason = cdi_tools.go_missing()
    if reason:
        pytest.skip("JSON schema checked; CDI library validation skipped: " + reason)
    ok, reports = cdi_tools.go_validate(*paths)
    assert ok, reports
    by_name = {os.path.basename(r["path"]): r for r in reports}
    assert by_name["management.yaml"]["devices"] == ["management.nvidia.com/gpu=all"]
    assert by_name["management.yaml"]["hooks"] == 3 and by_name["management.json"]["hooks"] == 0
    assert by_name["gpu-one.yaml"]["devices"][:2] == ["nvidia.com/gpu=1", "nvidia.com/gpu=%s" % node.gpus[1]["uuid"]]
    assert by_name["gpu-ctk.yaml"]["devices"][-1] == "example.com/accel=all"
    assert "NVIDIA_VISIBLE_DEVICES=void" in by_name["gpu.yaml"]["env"]


def test_cdi_library_rejects_what_it_should(tmp_path, fake_node_factory, monkeypatch):
    """The strict validator is not a rubber stamp: an unknown field and a bad device name fail."""
    reason = cdi_tools.go_missing()
    if reason:
        pytest.skip(reason)
    node = fake_node_factory("cos")
    (good,) = [p for p in generate(node, monkeypatch, "/etc/cdi") if p.name == "gpu.json"]
    spec = json.loads(good.read_text())
    spec["containerEdits"]["unknownField"] = True
    (tmp_path / "unknown.json").write_text(json.dumps(spec))
    spec = json.loads(good.read_text())
    spec["devices"][0]["name"] = "bad name!"
    (tmp_path / "badname.json").write_text(json.dumps(spec))
    for name, expected in (("unknown.json", "unknown field"), ("badname.json", "bad name!")):
        ok, message = cdi_tools.go_validate(tmp_path / name)
        assert not ok and expected in message, (name, message)


# (vendor, class, device name): names at the edges of CDI's rules. Dots in a class are left out:
# they are a 0.6.0 feature that Debian's (0.5.0) library rejects by design.
NAMES = [
    ("nvidia.com", "gpu", "0"), ("ab", "cd", "e"), ("a-b_c.d9", "e-f_g9", "GPU-1:2.3_x"),
    ("a", "gpu", "0"), ("vendor", "b", "0"),  # one character: the library panics, we refuse
    ("9vendor.com", "gpu", "0"), ("vendor.com.", "gpu", "0"), ("v/x", "gpu", "0"), ("vendor", "-gpu", "0"),
    ("vendor", "gpu_", "0"), ("vendor", "g u", "0"), ("vendor", "gpu", "-0"), ("vendor", "gpu", "0:"),
    ("vendor", "gpu", "a b"), ("vendor", "gpu", "a/b"),
]


def test_name_rules_agree_with_the_cdi_library(tmp_path):
    """cdi.check_name refuses exactly the kinds and device names the CDI library refuses."""
    reason = cdi_tools.go_missing()
    if reason:
        pytest.skip(reason)
    disagreements = []
    for number, (vendor, cls, name) in enumerate(NAMES):
        try:
            cdi.check_name("vendor", vendor)
            cdi.check_name("class", cls)
            cdi.check_name("device name", name)
            ours = True
        except cdi.CdiError:
            ours = False
        spec = {"cdiVersion": "0.5.0", "kind": "%s/%s" % (vendor, cls),
                "devices": [{"name": name, "containerEdits": {"env": ["A=1"]}}]}
        path = tmp_path / ("%d.json" % number)
        path.write_text(json.dumps(spec))
        theirs, message = cdi_tools.go_validate(path)
        if ours != theirs:
            disagreements.append((vendor, cls, name, ours, message))
    assert not disagreements


@pytest.fixture
def podman_ready():
    reason = cdi_tools.podman_missing()
    if reason:
        pytest.skip(reason)


def cos_with_fake_hook(fake_node_factory, log):
    node = fake_node_factory("cos")
    hook = node.node_path(COS_HOOK)
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text('#!/bin/sh\necho "$@" >> %s\n' % log)
    hook.chmod(0o755)
    return node


SHOW = ('for f in /dev/nvidia*; do stat -c "%n %F %t:%T" $f; done; '
        'stat -c "%n %F" /lib64/libcuda.so.535.104.12 /bin/nvidia-smi; '
        'echo env=$NVIDIA_VISIBLE_DEVICES; (echo >> /lib64/libcuda.so.535.104.12) 2>/dev/null && echo rw || echo ro')


def devices_seen(stdout):
    return {line.split()[0]: line.split()[-1] for line in stdout.splitlines() if line.startswith("/dev/")}


@pytest.mark.parametrize("mode, device", [("management", "management.nvidia.com/gpu=all"), ("gpu", "nvidia.com/gpu=0")])
def test_podman_injects_devices_from_cos_spec(tmp_path, fake_node_factory, monkeypatch, podman_ready, mode, device):
    log = tmp_path / "hook.log"
    node = cos_with_fake_hook(fake_node_factory, log)
    result, failed = run_module(cdi_spec.main, {"host_root": str(node.root), "mode": mode, "hook_path": COS_HOOK,
                                                "path": "/run/cdi/%s.yaml" % mode}, monkeypatch=monkeypatch)
    assert not failed, result
    assert device in result["devices"]
    proc = cdi_tools.podman_run(
        node.node_path("/run/cdi"), [device], SHOW, tmp_path / "podman",
        binds=[(None, "/home"), (node.node_path(COS_DRIVER_ROOT), COS_DRIVER_ROOT)],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = devices_seen(proc.stdout)
    # stat prints majors and minors in hex: nvidiactl is 195:255, nvidia0 195:0.
    assert seen["/dev/nvidiactl"] == "c3:ff" and seen["/dev/nvidia0"] == "c3:0"
    assert "character special file" in proc.stdout
    if mode == "management":
        assert seen["/dev/nvidia1"] == "c3:1" and seen["/dev/nvidia-uvm"] == "1fd:0"
    else:
        assert "/dev/nvidia1" not in seen
    assert "/lib64/libcuda.so.535.104.12 regular file" in proc.stdout
    assert "/bin/nvidia-smi regular file" in proc.stdout
    assert "env=void" in proc.stdout and proc.stdout.rstrip().endswith("ro")
    hooks = log.read_text().splitlines()
    assert [h.split()[0] for h in hooks] == ["create-symlinks", "enable-cuda-compat", "update-ldcache"]
    assert "--link libcuda.so.1::/lib64/libcuda.so" in hooks[0]


def test_podman_rejects_unknown_device(tmp_path, fake_node_factory, monkeypatch, podman_ready):
    node = cos_with_fake_hook(fake_node_factory, tmp_path / "hook.log")
    run_module(cdi_spec.main, {"host_root": str(node.root), "mode": "gpu", "hook_path": COS_HOOK,
                               "path": "/run/cdi/nvidia.yaml"}, monkeypatch=monkeypatch)
    proc = cdi_tools.podman_run(node.node_path("/run/cdi"), ["nvidia.com/gpu=7"], "true", tmp_path / "podman",
                                binds=[(None, "/home"), (node.node_path(COS_DRIVER_ROOT), COS_DRIVER_ROOT)])
    assert proc.returncode != 0 and "unresolvable CDI devices" in proc.stderr


def test_podman_drops_a_device_defined_twice_as_the_warning_says(
        tmp_path, fake_node_factory, monkeypatch, podman_ready):
    """Two specs of one kind in one directory: the module warns, and podman indeed cannot use the device."""
    node = cos_with_fake_hook(fake_node_factory, tmp_path / "hook.log")
    args = {"host_root": str(node.root), "mode": "gpu", "hook_path": COS_HOOK}
    run_module(cdi_spec.main, dict(args, path="/run/cdi/a.yaml"), monkeypatch=monkeypatch)
    result, failed = run_module(cdi_spec.main, dict(args, path="/run/cdi/b.yaml"), monkeypatch=monkeypatch)
    assert not failed and any(w.startswith("/run/cdi/a.yaml also declares kind nvidia.com/gpu")
                              for w in result["warnings"])
    proc = cdi_tools.podman_run(node.node_path("/run/cdi"), ["nvidia.com/gpu=0"], "true", tmp_path / "podman",
                                binds=[(None, "/home"), (node.node_path(COS_DRIVER_ROOT), COS_DRIVER_ROOT)])
    assert proc.returncode != 0 and "unresolvable CDI devices" in proc.stderr, proc.stderr


def test_ansible_check_real_check_real(cos_node):
    """The done-when task through the real ``ansible`` command: changed true, true, false, false."""
    args = {"host_root": str(cos_node.root), "mode": "management", "hook_path": COS_HOOK}
    target = cos_node.node_path("/var/run/cdi/management.nvidia.com-gpu.yaml")
    changed = []
    for check in (True, False, True, False):
        result = ansible_module("cdi_spec", args, check=check, diff=check)
        assert result["_rc"] == 0, result
        changed.append(result["changed"])
        if len(changed) == 1:  # the first check run: nothing written, the diff shows the spec
            assert not target.exists() and "+kind: management.nvidia.com/gpu" in result["_diff_text"]
    assert changed == [True, True, False, False]
    text = target.read_text()
    assert str(cos_node.root) not in text
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    spec = yaml.safe_load(text)
    mounts = {m["hostPath"] for m in spec["containerEdits"]["mounts"]}
    assert {lib["path"] for lib in cos_node.libraries} | set(cos_node.binaries) | set(cos_node.firmware) <= mounts
    nodes = {n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]}
    assert nodes == {d["path"] for d in cos_node.device_nodes}
    assert [h["args"][1] for h in spec["containerEdits"]["hooks"]] == ["create-symlinks", "enable-cuda-compat",
                                                                       "update-ldcache"]
    gpu = ansible_module("cdi_spec", dict(args, mode="gpu"))
    uuids = [g["uuid"] for g in cos_node.gpus]
    assert gpu["_rc"] == 0 and [d.split("=")[1] for d in gpu["devices"]] == ["0", uuids[0], "1", uuids[1], "all"]


def test_ansible_failure_is_clear(cos_node):
    result = ansible_module("cdi_spec", {"host_root": str(cos_node.root), "dev_root": COS_DRIVER_ROOT})
    assert result["_rc"] != 0 and "set dev_root: /" in result["msg"] and "Traceback" not in result["msg"]


def test_podman_uses_a_spec_made_through_a_relative_driver_root_link(tmp_path, fake_node_factory, monkeypatch,
                                                                     podman_ready):
    """COS-style: the driver root is a relative link; containers still see /lib64/libcuda.so.X."""
    log = tmp_path / "hook.log"
    node = cos_with_fake_hook(fake_node_factory, log)
    link_driver_root(node, "/home/nvidia-real", relative=True)  # kept under /home: the namespace's tmpfs
    result, failed = run_module(cdi_spec.main, {"host_root": str(node.root), "mode": "management",
                                                "hook_path": COS_HOOK, "path": "/run/cdi/management.yaml"},
                                monkeypatch=monkeypatch)
    assert not failed, result
    mounts = {m["hostPath"]: m["containerPath"] for m in result["spec"]["containerEdits"]["mounts"]}
    assert mounts[COS_DRIVER_ROOT + "/lib64/libcuda.so.535.104.12"] == "/lib64/libcuda.so.535.104.12"
    proc = cdi_tools.podman_run(node.node_path("/run/cdi"), ["management.nvidia.com/gpu=all"], SHOW,
                                tmp_path / "podman", binds=[(None, "/home"), (node.node_path("/home"), "/home")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "/lib64/libcuda.so.535.104.12 regular file" in proc.stdout
    assert "--link libcuda.so.1::/lib64/libcuda.so" in log.read_text().splitlines()[0]


def test_ansible_refuses_libraries_of_another_version(fake_node_factory):
    node = fake_node_factory("cos", driver_version="535.104.12", kernel_version="550.54.15")
    result = ansible_module("cdi_spec", {"host_root": str(node.root), "hook_path": COS_HOOK})
    assert result["_rc"] != 0 and "Traceback" not in result["msg"]
    assert result["msg"].startswith("kernel module 550.54.15, libraries 535.104.12 found under " + COS_DRIVER_ROOT)
    assert not node.node_path("/var/run/cdi/management.nvidia.com-gpu.yaml").exists()
