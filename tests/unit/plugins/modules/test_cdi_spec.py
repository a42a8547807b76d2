"""cdi_spec in-process on fake nodes (cos, ubuntu, driver-container)."""

from __future__ import annotations

import json
import os
import posixpath
import time

import pytest
import yaml
from confined import free, full_disk, needs_unshare, node_lock_held, read_only, run_confined
from fakenode import link_driver_root
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.modules import cdi_spec

COS_HOOK = "/home/kubernetes/bin/nvidia/toolkit/nvidia-cdi-hook"
MANAGEMENT_PATH = "/var/run/cdi/management.nvidia.com-gpu.yaml"


def run(node, monkeypatch, check_mode=False, diff=False, **args):
    args.setdefault("host_root", str(node.root))
    return run_module(cdi_spec.main, args, check_mode=check_mode, diff=diff, monkeypatch=monkeypatch)


def ok(node, monkeypatch, **kwargs):
    """Run the module and insist that it succeeded."""
    result, failed = run(node, monkeypatch, **kwargs)
    assert not failed, result
    return result


def written(node, path=MANAGEMENT_PATH):
    return node.node_path(path).read_text()


def expected_container_path(node, host_path):
    if node.driver_root == "/":
        return host_path
    return host_path[len(node.driver_root):]


@pytest.mark.parametrize("layout", ["cos", "ubuntu", "driver-container"])
def test_management_spec_has_everything(fake_node_factory, monkeypatch, layout):
    node = fake_node_factory(layout)
    result, failed = run(node, monkeypatch, hook_path=COS_HOOK)
    assert not failed, result
    assert result["changed"] is True
    assert result["path"] == MANAGEMENT_PATH and result["kind"] == "management.nvidia.com/gpu"
    text = written(node)
    assert str(node.root) not in text and str(node.root) not in json.dumps(result)
    spec = yaml.safe_load(text)
    assert spec == result["spec"]
    assert oct(node.node_path(MANAGEMENT_PATH).stat().st_mode & 0o7777) == "0o644"
    nodes = {(n["path"], n["major"], n["minor"]) for n in spec["devices"][0]["containerEdits"]["deviceNodes"]}
    assert nodes == {(d["path"], d["major"], d["minor"]) for d in node.device_nodes}
    mounts = {m["hostPath"]: m["containerPath"] for m in spec["containerEdits"]["mounts"]}
    for host_path in [lib["path"] for lib in node.libraries] + node.binaries:
        assert mounts[host_path] == expected_container_path(node, host_path)
    for host_path in node.firmware:
        assert mounts[host_path].startswith("/lib/firmware/nvidia/%s/" % node.driver_version)
    hooks = spec["containerEdits"]["hooks"]
    assert [h["args"][1] for h in hooks] == ["create-symlinks", "enable-cuda-compat", "update-ldcache"]
    assert {h["path"] for h in hooks} == {COS_HOOK}
    dev_root = "/" if layout != "driver-container" else node.driver_root
    for edit in spec["devices"][0]["containerEdits"]["deviceNodes"]:
        assert edit.get("hostPath", edit["path"]) == os.path.join(dev_root, edit["path"].lstrip("/"))
    assert spec["cdiVersion"] == ("0.5.0" if layout == "driver-container" else "0.3.0")
    assert result["driver_version"] == node.driver_version
    assert "warnings" not in result


def test_cos_config_files_and_sockets(cos_node, ubuntu_node, monkeypatch):
    result = ok(cos_node, monkeypatch)
    mounts = {m["hostPath"]: m for m in result["spec"]["containerEdits"]["mounts"]}
    assert mounts["/home/kubernetes/bin/nvidia/vulkan/icd.d/nvidia_icd.json"]["containerPath"] == \
        "/etc/vulkan/icd.d/nvidia_icd.json"
    result = ok(ubuntu_node, monkeypatch)
    mounts = {m["hostPath"]: m for m in result["spec"]["containerEdits"]["mounts"]}
    assert "/usr/share/glvnd/egl_vendor.d/10_nvidia.json" in mounts


def test_gpu_mode_devices(cos_node, monkeypatch):
    result, failed = run(cos_node, monkeypatch, mode="gpu")
    assert not failed, result
    assert result["path"] == "/etc/cdi/nvidia.yaml"
    uuids = [g["uuid"] for g in cos_node.gpus]
    assert result["devices"] == ["nvidia.com/gpu=" + n for n in ["0", uuids[0], "1", uuids[1], "all"]]
    spec = yaml.safe_load(written(cos_node, "/etc/cdi/nvidia.yaml"))
    assert spec["cdiVersion"] == "0.5.0"
    by_name = {d["name"]: d["containerEdits"]["deviceNodes"] for d in spec["devices"]}
    assert [(n["path"], n["minor"]) for n in by_name["1"]] == [("/dev/nvidia1", 1)]
    assert [n["path"] for n in spec["containerEdits"]["deviceNodes"]] == [
        "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"]


def test_gpu_mode_mig(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", mig=True)
    result, failed = run(node, monkeypatch, mode="gpu", device_name_strategy=["index"])
    assert not failed, result
    names = [d.split("=")[1] for d in result["devices"]]
    assert names == ["0", "0:0", "0:1", "1", "1:0", "1:1", "all"]
    management = ok(node, monkeypatch)
    paths = [n["path"] for n in management["spec"]["devices"][0]["containerEdits"]["deviceNodes"]]
    assert "/dev/nvidia-caps/nvidia-cap1" in paths and "/dev/nvidia-caps/nvidia-cap10" in paths


def test_idempotent_bytes_and_mtime_untouched(cos_node, monkeypatch):
    first = ok(cos_node, monkeypatch, mode="gpu")
    target = cos_node.node_path("/etc/cdi/nvidia.yaml")
    os.utime(target, (1_000_000_000, 1_000_000_000))
    before = target.read_bytes()
    inode = target.stat().st_ino
    second, failed = run(cos_node, monkeypatch, mode="gpu")
    assert not failed and first["changed"] is True and second["changed"] is False
    assert target.read_bytes() == before
    assert target.stat().st_mtime == 1_000_000_000 and target.stat().st_ino == inode
    assert second["previous_driver_version"] == cos_node.driver_version


def test_check_mode_and_diff(cos_node, monkeypatch):
    result, failed = run(cos_node, monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"] is True
    assert not cos_node.node_path(MANAGEMENT_PATH).exists()
    assert result["diff"]["before"] == "" and "kind: management.nvidia.com/gpu" in result["diff"]["after"]
    run(cos_node, monkeypatch)
    result = ok(cos_node, monkeypatch, check_mode=True, diff=True)
    assert result["changed"] is False and "diff" not in result


def test_driver_upgrade_rewrites(fake_node_factory, monkeypatch):
    old = fake_node_factory("cos", driver_version="535.104.12")
    new = fake_node_factory("cos", driver_version="550.54.15")
    result = ok(old, monkeypatch)
    target = new.node_path(MANAGEMENT_PATH)
    target.parent.mkdir(parents=True)
    target.write_text(written(old))
    result, failed = run(new, monkeypatch, diff=True)
    assert not failed and result["changed"] is True
    assert result["previous_driver_version"] == "535.104.12" and result["driver_version"] == "550.54.15"
    text = target.read_text()
    assert "535.104.12" not in text and "libcuda.so.550.54.15" in text
    assert "# driver_version: 550.54.15" in text
    assert "535.104.12" in result["diff"]["before"]


def test_json_format_and_mode_fix(cos_node, monkeypatch):
    result, failed = run(cos_node, monkeypatch, path="/etc/cdi/nvidia.json", mode="gpu")
    assert not failed and result["format"] == "json"
    target = cos_node.node_path("/etc/cdi/nvidia.json")
    assert json.loads(target.read_text()) == result["spec"]
    target.chmod(0o600)
    result = ok(cos_node, monkeypatch, path="/etc/cdi/nvidia.json", mode="gpu", check_mode=True)
    assert result["changed"] is True and target.stat().st_mode & 0o777 == 0o600
    result = ok(cos_node, monkeypatch, path="/etc/cdi/nvidia.json", mode="gpu")
    assert result["changed"] is True and target.stat().st_mode & 0o777 == 0o644
    result = ok(cos_node, monkeypatch, path="/etc/cdi/nvidia.json", mode="gpu", format="yaml")
    assert result["changed"] is True and target.read_text().startswith("# Generated")


def test_state_absent(cos_node, monkeypatch):
    run(cos_node, monkeypatch)
    result = ok(cos_node, monkeypatch, state="absent", check_mode=True, diff=True)
    assert result["changed"] is True and cos_node.node_path(MANAGEMENT_PATH).exists()
    assert result["diff"]["after"] == ""
    result = ok(cos_node, monkeypatch, state="absent")
    assert result["changed"] is True and not cos_node.node_path(MANAGEMENT_PATH).exists()
    result = ok(cos_node, monkeypatch, state="absent")
    assert result["changed"] is False


def test_absent_needs_no_driver(tmp_path, monkeypatch):
    result, failed = run_module(cdi_spec.main, {"host_root": str(tmp_path), "state": "absent"}, monkeypatch=monkeypatch)
    assert not failed and result["changed"] is False


def test_warns_outside_spec_dirs(cos_node, monkeypatch):
    result, failed = run(cos_node, monkeypatch, path="/tmp/specs/nvidia.yaml")
    assert not failed
    assert any("/tmp/specs/nvidia.yaml is outside /etc/cdi, /var/run/cdi, /run/cdi" in w for w in result["warnings"])
    assert cos_node.node_path("/tmp/specs/nvidia.yaml").exists()


def test_cos_devices_not_under_driver_root(cos_node, monkeypatch):
    result, failed = run(cos_node, monkeypatch, dev_root="/home/kubernetes/bin/nvidia")
    assert failed
    assert "dev_root /home/kubernetes/bin/nvidia" in result["msg"] and "set dev_root: /" in result["msg"]


def test_cos_libcuda_not_under_root(cos_node, monkeypatch):
    result, failed = run(cos_node, monkeypatch, driver_root="/")
    assert failed
    assert "/lib64/libcuda.so.*" in result["searched"] and "/usr/lib/x86_64-linux-gnu/libcuda.so.*" in result["searched"]
    assert "/etc/ld.so.cache" in result["searched"] and "Set driver_root" in result["msg"]
    assert len(result["msg"]) < 500


def test_no_libcuda_anywhere(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", missing=("libcuda",))
    result, failed = run(node, monkeypatch)
    assert failed
    assert "no NVIDIA driver found" in result["msg"]
    assert "/home/kubernetes/bin/nvidia/lib64/libcuda.so.*" in result["searched"]


def test_unknown_gpu(cos_node, monkeypatch):
    result, failed = run(cos_node, monkeypatch, mode="gpu", devices=["2"])
    assert failed and "unknown GPU in devices: 2" in result["msg"]
    result, failed = run(cos_node, monkeypatch, mode="gpu", devices=[cos_node.gpus[1]["uuid"]])
    assert not failed and result["devices"][0] == "nvidia.com/gpu=1"


def test_discovery_warnings_are_task_warnings(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", broken=("library",))
    result, failed = run(node, monkeypatch)
    assert not failed and any("libnvidia-broken" in w for w in result["warnings"])


def test_unwritable_directory_fails_cleanly(cos_node, monkeypatch):
    blocker = cos_node.node_path("/etc/cdi")
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file, not a directory\n")
    result, failed = run(cos_node, monkeypatch, mode="gpu")
    assert failed and result["msg"].startswith(
        "cannot write /etc/cdi/nvidia.yaml: /etc/cdi exists and is not a directory; move it away")
    assert blocker.read_text() == "a file, not a directory\n"
    assert ok(cos_node, monkeypatch, mode="gpu", state="absent")["changed"] is False


def test_absolute_var_run_link_stays_inside_host_root(cos_node, monkeypatch):
    """On real nodes /var/run -> /run: with a host_root the link is resolved inside it, never on this
    machine (a unique vendor keeps a regression from touching anything but its own file)."""
    vendor = "cdi-spec-test-%d.example.com" % os.getpid()
    var_run = cos_node.node_path("/var/run")
    if var_run.exists():
        var_run.rename(cos_node.node_path("/run"))
    else:
        cos_node.node_path("/run").mkdir(exist_ok=True)
        var_run.parent.mkdir(exist_ok=True)
    var_run.symlink_to("/run")
    outside = "/run/cdi/%s-gpu.yaml" % vendor
    try:
        result = ok(cos_node, monkeypatch, vendor=vendor)
        assert result["path"] == "/var/run/cdi/%s-gpu.yaml" % vendor
        assert not os.path.lexists(outside)
        assert cos_node.node_path("/run/cdi/%s-gpu.yaml" % vendor).read_text().startswith("# Generated")
        assert ok(cos_node, monkeypatch, vendor=vendor)["changed"] is False
        assert ok(cos_node, monkeypatch, vendor=vendor, state="absent")["changed"] is True
        assert not cos_node.node_path("/run/cdi/%s-gpu.yaml" % vendor).exists()
    finally:
        if os.path.lexists(outside):
            os.unlink(outside)


def without_dirs_record(data):
    return b"".join(line for line in data.splitlines(True) if not line.startswith(ownership.CREATED.encode()))


def test_symlink_at_path_is_replaced_not_followed(cos_node, monkeypatch):
    ok(cos_node, monkeypatch, path="/etc/cdi/real.yaml")
    real = cos_node.node_path("/etc/cdi/real.yaml")
    link = cos_node.node_path(MANAGEMENT_PATH)
    link.parent.mkdir(parents=True)
    link.symlink_to("/etc/cdi/real.yaml")  # absolute: resolved inside host_root
    before = real.read_bytes()
    result, failed = run(cos_node, monkeypatch, check_mode=True, diff=True)
    assert not failed and result["changed"] is True and link.is_symlink()
    assert result["previous_driver_version"] == cos_node.driver_version
    assert any("is a symlink" in w for w in result["warnings"])
    result = ok(cos_node, monkeypatch)
    # The same spec, but for the record of the directories its write created (/etc/cdi for real.yaml).
    assert result["changed"] is True and not link.is_symlink()
    assert without_dirs_record(link.read_bytes()) == without_dirs_record(before)
    assert real.read_bytes() == before
    assert ok(cos_node, monkeypatch)["changed"] is False
    link.unlink()
    link.symlink_to("/etc/cdi/real.yaml")
    result = ok(cos_node, monkeypatch, state="absent")
    assert result["changed"] is True and not os.path.lexists(link) and real.exists()
    link.symlink_to("/nowhere/x.yaml")  # dangling
    assert ok(cos_node, monkeypatch, state="absent")["changed"] is True and not os.path.lexists(link)


def test_symlink_loop_in_path_fails_cleanly(cos_node, monkeypatch):
    loop = cos_node.node_path("/etc/loop")
    loop.parent.mkdir(parents=True, exist_ok=True)
    loop.symlink_to("/etc/loop")
    result, failed = run(cos_node, monkeypatch, path="/etc/loop/cdi/x.yaml")
    assert failed and "cannot resolve /etc/loop/cdi/x.yaml under host_root" in result["msg"]


@needs_unshare
def test_a_full_disk_fails_cleanly_and_keeps_the_old_spec(cos_node):
    """A real ENOSPC: /etc/cdi is a 64 KiB tmpfs (in a private mount namespace), filled up."""
    old = "# an older spec\nkind: nvidia.com/gpu\n"
    spec_dir = cos_node.node_path("/etc/cdi")
    spec_dir.mkdir(parents=True)
    (spec_dir / "nvidia.yaml").write_text(old)
    result, seen = run_confined("cdi_spec", {"host_root": str(cos_node.root), "spec_mode": "gpu"},
                                full_disk(spec_dir), after=free(spec_dir), look=[spec_dir, spec_dir / "nvidia.yaml"])
    assert result["_rc"] != 0 and result["failed"] is True and result["changed"] is False
    assert result["msg"] == ("cannot write /etc/cdi/nvidia.yaml: No space left on device; the file was left as "
                             "it was")
    assert seen == {str(spec_dir): ["nvidia.yaml"], str(spec_dir / "nvidia.yaml"): old}


@needs_unshare
@pytest.mark.parametrize("state", ["present", "absent"])
def test_a_read_only_spec_dir_fails_cleanly_and_keeps_the_old_spec(cos_node, monkeypatch, state):
    """/var/run/cdi a read-only bind mount: neither the write nor the removal happens, and nothing is left."""
    ok(cos_node, monkeypatch)
    old = written(cos_node)
    spec_dir = cos_node.node_path("/var/run/cdi")
    (spec_dir / "management.nvidia.com-gpu.yaml").write_text(old + "# changed by hand\n")
    result, seen = run_confined("cdi_spec", {"host_root": str(cos_node.root), "state": state},
                                read_only(spec_dir), look=[spec_dir, spec_dir / "management.nvidia.com-gpu.yaml"])
    assert result["_rc"] != 0 and result["changed"] is False
    assert result["msg"].startswith("cannot %s" % ("write" if state == "present" else "remove"))
    assert MANAGEMENT_PATH in result["msg"] and "Read-only file system" in result["msg"]
    assert seen == {str(spec_dir): ["management.nvidia.com-gpu.yaml"],
                    str(spec_dir / "management.nvidia.com-gpu.yaml"): old + "# changed by hand\n"}


def test_host_root_slash_replaces_a_link_too(cos_node, tmp_path, monkeypatch):
    """With host_root / the kernel resolves the path; a link at path is still replaced."""
    driver_root = str(cos_node.node_path("/home/kubernetes/bin/nvidia"))
    args = {"host_root": "/", "driver_root": driver_root, "dev_root": str(cos_node.root),
            "library_search_paths": ["lib64"]}
    real = tmp_path / "real.yaml"
    link = tmp_path / "spec.yaml"
    result, failed = run_module(cdi_spec.main, dict(args, path=str(real)), monkeypatch=monkeypatch)
    assert not failed and result["changed"] is True
    link.symlink_to(real)
    result, failed = run_module(cdi_spec.main, dict(args, path=str(link)), monkeypatch=monkeypatch)
    assert not failed and result["changed"] is True and not link.is_symlink()
    assert link.read_bytes() == real.read_bytes()


def test_unreadable_spec_path_fails_cleanly(cos_node, monkeypatch):
    cos_node.node_path(MANAGEMENT_PATH).mkdir(parents=True)
    result, failed = run(cos_node, monkeypatch)
    assert failed and result["msg"] == "%s is a directory, not a file; nothing was changed" % MANAGEMENT_PATH


def test_a_directory_in_place_of_the_spec_is_not_removed(cos_node, monkeypatch):
    cos_node.node_path(MANAGEMENT_PATH).mkdir(parents=True)
    result, failed = run(cos_node, monkeypatch, state="absent")
    assert failed and "is a directory, not a file" in result["msg"]
    assert cos_node.node_path(MANAGEMENT_PATH).is_dir()


def test_mode_only_change_has_a_diff(cos_node, monkeypatch):
    ok(cos_node, monkeypatch)
    cos_node.node_path(MANAGEMENT_PATH).chmod(0o600)
    result = ok(cos_node, monkeypatch, check_mode=True, diff=True)
    assert result["changed"] is True and result["diff"] == {"before": {"mode": "0600"}, "after": {"mode": "0644"}}


def test_warns_about_other_specs_of_the_same_kind(cos_node, monkeypatch):
    first = ok(cos_node, monkeypatch, mode="gpu")
    assert not any("also declares" in w for w in first.get("warnings", []))
    assert not any("also declares" in w for w in ok(cos_node, monkeypatch, mode="gpu").get("warnings", []))
    ok(cos_node, monkeypatch)  # the management spec in /var/run/cdi is another kind
    second = ok(cos_node, monkeypatch, mode="gpu", path="/var/run/cdi/nvidia.json")
    warnings = [w for w in second["warnings"] if "also declares" in w]
    assert len(warnings) == 1 and warnings[0].startswith("/etc/cdi/nvidia.yaml also declares kind nvidia.com/gpu")


def test_same_kind_check_reads_a_linked_var_run_once(cos_node, monkeypatch):
    cos_node.node_path("/run/cdi").mkdir(parents=True)
    cos_node.node_path("/var").mkdir(exist_ok=True)
    cos_node.node_path("/var/run").symlink_to("/run")
    ok(cos_node, monkeypatch, mode="gpu", path="/run/cdi/a.yaml")
    cos_node.node_path("/run/cdi/notes.txt").write_text("kind: nvidia.com/gpu\n")  # not a spec file
    cos_node.node_path("/run/cdi/odd.yaml").mkdir()  # unreadable: skipped
    result = ok(cos_node, monkeypatch, mode="gpu", path="/etc/cdi/b.yaml")
    assert [w.split()[0] for w in result["warnings"] if "also declares" in w] == ["/var/run/cdi/a.yaml"]


@pytest.mark.parametrize("args", [{"vendor": "x"}, {"vendor": "x", "path": "/etc/cdi/x.yaml"}, {"class": "g p u"}])
def test_bad_kind_is_a_clean_failure(cos_node, monkeypatch, args):
    result, failed = run(cos_node, monkeypatch, mode="gpu", **args)
    assert failed and result["msg"].startswith("invalid CDI ")


# --- a driver root that is a symlink: the spec does not depend on the link --------------------

@pytest.mark.parametrize("layout, target, relative", [
    ("driver-container", "/var/lib/nvidia-driver", False),
    ("cos", "/var/lib/nvidia", True),
])
@pytest.mark.parametrize("container_driver_root", [None, "/usr/local/nvidia"])
def test_driver_root_link_gives_the_same_spec(fake_node_factory, monkeypatch, layout, target, relative,
                                              container_driver_root):
    plain = fake_node_factory(layout)
    linked = fake_node_factory(layout)
    link_driver_root(linked, target, relative=relative)
    args = {"mode": "gpu", "hook_path": COS_HOOK}
    if container_driver_root:
        args["container_driver_root"] = container_driver_root
    expected = ok(plain, monkeypatch, **args)
    result = ok(linked, monkeypatch, **args)
    assert result["spec"] == expected["spec"]
    assert written(linked, "/etc/cdi/nvidia.yaml") == written(plain, "/etc/cdi/nvidia.yaml")
    assert result["driver_root"] == linked.driver_root
    mounts = {m["hostPath"]: m["containerPath"] for m in result["spec"]["containerEdits"]["mounts"]}
    libcuda = "%s/%s/libcuda.so.%s" % (linked.driver_root, "lib64" if layout == "cos" else "usr/lib/x86_64-linux-gnu",
                                       linked.driver_version)
    assert mounts[libcuda] == (container_driver_root or "") + libcuda[len(linked.driver_root):]
    assert not any(path.startswith(target + "/") for path in mounts)
    links = result["spec"]["containerEdits"]["hooks"][0]["args"]
    assert "libcuda.so.1::%s" % posixpath.join(posixpath.dirname(mounts[libcuda]), "libcuda.so") in links


# --- saying what is wrong -------------------------------------------------------------------

def test_libraries_of_another_version_than_the_kernel_module_fail(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", driver_version="535.104.12", kernel_version="550.54.15")
    result, failed = run(node, monkeypatch)
    assert failed and not node.node_path(MANAGEMENT_PATH).exists()
    assert result["msg"].startswith("kernel module 550.54.15, libraries 535.104.12 found under "
                                    "/home/kubernetes/bin/nvidia") and len(result["msg"]) < 500
    assert any(w.startswith("kernel module 550.54.15") for w in result["warnings"])


def test_kernel_module_not_loaded_says_so(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", missing=("kernel_module",))
    result, failed = run(node, monkeypatch, dev_root="/")
    assert failed
    assert "the nvidia kernel module is not loaded" in result["msg"] and "set dev_root" not in result["msg"]
    assert len(result["msg"]) < 500


def test_missing_dev_root_names_it_and_what_was_looked_for(cos_node, monkeypatch):
    result, failed = run(cos_node, monkeypatch, dev_root="/nowhere")
    assert failed
    assert "no NVIDIA device nodes under dev_root /nowhere" in result["msg"]
    assert "looked for /nowhere/dev/nvidia*, /nowhere/dev/nvidia-caps/*" in result["msg"]
    assert result["looked_for"][0] == "/nowhere/dev/nvidia*" and len(result["msg"]) < 500
    assert any(w.startswith("dev_root /nowhere does not exist under host_root") for w in result["warnings"])


def test_dev_root_without_device_nodes(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", missing=("devices",))
    result, failed = run(node, monkeypatch)
    assert failed and "no NVIDIA device nodes under dev_root / " in result["msg"]
    assert "set dev_root: /" not in result["msg"] and "device_nodes module" in result["msg"]


def test_driver_root_that_is_a_file_fails_clearly(cos_node, monkeypatch):
    cos_node.node_path("/opt").mkdir()
    cos_node.node_path("/opt/nvidia").write_text("x")
    result, failed = run(cos_node, monkeypatch, driver_root="/opt/nvidia")
    assert failed and "driver_root /opt/nvidia is a file, not a directory" in result["msg"]


def test_libcuda_without_soname_warns(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", broken=("soname",))
    result = ok(node, monkeypatch)
    libcuda = "/home/kubernetes/bin/nvidia/lib64/libcuda.so.535.104.12"
    assert any(libcuda in w and "no libcuda.so.1" in w for w in result["warnings"])
    links = result["spec"]["containerEdits"]["hooks"][0]["args"]
    assert not any(arg.endswith("/libcuda.so.1") for arg in links)


def test_dangling_soname_link_warns(fake_node_factory, monkeypatch):
    node = fake_node_factory("cos", broken=("dangling_link",))
    result = ok(node, monkeypatch)
    assert any("/home/kubernetes/bin/nvidia/lib64/libcuda.so.1 -> libcuda.so.530.30.02" in w
               for w in result["warnings"])


# --- directories: the ones a write created go with the last spec; no other ---------------------

def test_absent_removes_the_directories_the_write_created(cos_node, monkeypatch):
    assert not cos_node.node_path("/var").exists()
    result = ok(cos_node, monkeypatch)
    assert result["changed"] is True
    assert ownership.created_line(["/var", "/var/run", "/var/run/cdi"], ownership.REMOVES_OWNED) in written(cos_node)
    assert ok(cos_node, monkeypatch)["changed"] is False  # the record is stable
    check = ok(cos_node, monkeypatch, state="absent", check_mode=True)
    assert check["changed"] is True and cos_node.node_path("/var/run/cdi").is_dir()
    result = ok(cos_node, monkeypatch, state="absent")
    assert result["removed_dirs"] == ["/var/run/cdi", "/var/run", "/var"]
    assert not cos_node.node_path("/var").exists()


def test_a_spec_with_an_earlier_releases_record_is_not_rewritten_for_it_and_still_undone(cos_node, monkeypatch):
    ok(cos_node, monkeypatch)
    spec = cos_node.node_path(MANAGEMENT_PATH)
    line = ownership.created_line(["/var", "/var/run", "/var/run/cdi"], ownership.REMOVES_OWNED)
    legacy = spec.read_text().replace(line, '# created_dirs: ["/var", "/var/run", "/var/run/cdi"] (state=absent '
                                            'removes them when empty)')
    spec.write_text(legacy)
    assert ok(cos_node, monkeypatch)["changed"] is False and spec.read_text() == legacy
    assert ok(cos_node, monkeypatch, state="absent")["removed_dirs"] == ["/var/run/cdi", "/var/run", "/var"]


def test_absent_keeps_directories_that_were_there(cos_node, monkeypatch):
    cos_node.node_path("/var/run/cdi").mkdir(parents=True)
    ok(cos_node, monkeypatch)
    assert ownership.CREATED not in written(cos_node)
    result = ok(cos_node, monkeypatch, state="absent")
    assert result["removed_dirs"] == [] and cos_node.node_path("/var/run/cdi").is_dir()


def test_the_last_spec_to_go_takes_the_directories_and_a_strangers_file_keeps_them(cos_node, monkeypatch):
    gpu = "/var/run/cdi/nvidia.com-gpu.yaml"
    ok(cos_node, monkeypatch)
    ok(cos_node, monkeypatch, mode="gpu", path=gpu)
    # The second spec found /var/run/cdi made by the first, and records it too.
    assert ownership.created_line(["/var", "/var/run", "/var/run/cdi"], ownership.REMOVES_OWNED) in written(cos_node, gpu)
    assert ok(cos_node, monkeypatch)["changed"] is False
    assert ok(cos_node, monkeypatch, state="absent")["removed_dirs"] == []
    assert cos_node.node_path(gpu).exists()
    stranger = cos_node.node_path("/var/run/other-daemon.pid")
    stranger.write_text("42\n")
    assert ok(cos_node, monkeypatch, mode="gpu", path=gpu, state="absent")["removed_dirs"] == ["/var/run/cdi"]
    assert stranger.read_text() == "42\n" and not cos_node.node_path("/var/run/cdi").exists()


def test_json_spec_records_nothing_and_leaves_its_directories(cos_node, monkeypatch):
    path = "/etc/cdi/management.nvidia.com-gpu.json"
    ok(cos_node, monkeypatch, path=path)
    json.loads(written(cos_node, path))  # still plain JSON: no comment in it
    assert ok(cos_node, monkeypatch, path=path, state="absent")["removed_dirs"] == []
    assert cos_node.node_path("/etc/cdi").is_dir()


# --- one vocabulary: changes, option names, the node's lock -----------------------------------

def test_changes_name_each_path_and_what_happened(cos_node, monkeypatch):
    made = ok(cos_node, monkeypatch)
    assert made["changes"] == [{"path": "/var", "action": "created"}, {"path": "/var/run", "action": "created"},
                               {"path": "/var/run/cdi", "action": "created"},
                               {"path": MANAGEMENT_PATH, "action": "created"}]
    assert ok(cos_node, monkeypatch)["changes"] == []
    cos_node.node_path(MANAGEMENT_PATH).write_text(written(cos_node) + "# by hand\n")
    assert ok(cos_node, monkeypatch)["changes"] == [{"path": MANAGEMENT_PATH, "action": "updated"}]
    cos_node.node_path(MANAGEMENT_PATH).chmod(0o600)
    assert ok(cos_node, monkeypatch)["changes"] == [{"path": MANAGEMENT_PATH, "action": "mode_changed"}]
    check = ok(cos_node, monkeypatch, state="absent", check_mode=True)
    assert check["changes"] == [{"path": MANAGEMENT_PATH, "action": "removed"}]
    removed = ok(cos_node, monkeypatch, state="absent")
    assert removed["changes"] == [{"path": p, "action": "removed"}
                                  for p in (MANAGEMENT_PATH, "/var/run/cdi", "/var/run", "/var")]


def test_a_link_in_place_of_the_spec_is_replaced(cos_node, monkeypatch):
    ok(cos_node, monkeypatch, path="/etc/cdi/real.yaml")
    link = cos_node.node_path(MANAGEMENT_PATH)
    link.parent.mkdir(parents=True)
    link.symlink_to("/etc/cdi/real.yaml")
    assert ok(cos_node, monkeypatch)["changes"] == [{"path": MANAGEMENT_PATH, "action": "replaced"}]


@pytest.mark.parametrize("old, new", [({"mode": "gpu"}, {"spec_mode": "gpu"}),
                                      ({"mode": "gpu", "class": "accel"}, {"spec_mode": "gpu", "device_class": "accel"})])
def test_the_old_option_names_are_aliases(fake_node_factory, monkeypatch, old, new):
    first, second = fake_node_factory("cos"), fake_node_factory("cos")
    with_old, with_new = ok(first, monkeypatch, **old), ok(second, monkeypatch, **new)
    assert with_old["path"] == with_new["path"] == ("/etc/cdi/nvidia.yaml" if "class" not in old
                                                    else "/etc/cdi/nvidia.com-accel.yaml")
    assert with_old["spec"] == with_new["spec"] and with_new["kind"].endswith("/" + old.get("class", "gpu"))
    assert "warnings" not in with_old


def test_waits_for_another_run_holding_the_nodes_lock(cos_node, monkeypatch):
    """The read-decide-write holds the node's lock: a run started while another holds it waits for it."""
    with node_lock_held(cos_node.root, 1.5):
        started = time.monotonic()
        result = ok(cos_node, monkeypatch)
        waited = time.monotonic() - started
    assert waited >= 1.0 and result["changed"] is True


def _hostile_library(kind):
    import struct

    import binfmt
    data = bytearray(binfmt.elf_shared_object("libnvidia-hostile.so.1"))
    if kind == "huge-offset":  # os.pread once raised "Python int too large to convert to C long"
        struct.pack_into("<Q", data, 32, 2 ** 63)
    elif kind == "4GiB-headers":  # once a MemoryError
        struct.pack_into("<HH", data, 54, 65535, 65535)
    elif kind == "truncated":
        data = data[:80]
    return bytes(data)


@pytest.mark.parametrize("kind", ["huge-offset", "4GiB-headers", "truncated", "fifo"])
def test_a_malformed_library_is_skipped_with_a_warning_naming_it(cos_node, monkeypatch, kind):
    """One bad file in the driver directory must not break the first step of site.yml."""
    from ansible_collections.gpu_node.container_toolkit.plugins.modules import nvidia_driver_info

    name = "/home/kubernetes/bin/nvidia/lib64/libnvidia-hostile.so.535.104.12"
    if kind == "fifo":
        os.mkfifo(cos_node.node_path(name))
    else:
        cos_node.node_path(name).write_bytes(_hostile_library(kind))
    facts, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert not failed, facts
    assert any(name in warning for warning in facts.get("warnings", [])) or kind == "fifo", facts.get("warnings")
    assert name not in [lib["path"] for lib in facts["libraries"]]
    assert "/home/kubernetes/bin/nvidia/lib64/libcuda.so.535.104.12" in [lib["path"] for lib in facts["libraries"]]
    result = ok(cos_node, monkeypatch)
    assert result["changed"] and "libcuda.so.535.104.12" in written(cos_node)
    assert "libnvidia-hostile" not in written(cos_node)


SECRET_LINKS = {
    # (driver file replaced by a link, where it points, the secret's mode)
    "firmware to /etc/shadow": ("firmware/nvidia/535.104.12/gsp_ga10x.bin", "/etc/shadow", 0o640),
    "Vulkan ICD to /etc/shadow": ("vulkan/icd.d/nvidia_icd.json", "/etc/shadow", 0o640),
    "firmware to a readable file of another name": ("firmware/nvidia/535.104.12/gsp_tu10x.bin", "/etc/passwd", 0o644),
    "binary to a root-only key": ("bin/nvidia-smi", "/root/.ssh/nvidia-smi", 0o600),
    "library to a root-only file": ("lib64/libnvidia-ml.so.535.104.12", "/root/libnvidia-ml.so.535.104.12", 0o600),
}


@pytest.mark.parametrize("case", sorted(SECRET_LINKS))
def test_a_driver_file_linked_to_a_node_secret_is_not_mounted(cos_node, monkeypatch, case):
    """A compromised container that can write the driver directory must not get a secret into every GPU container."""
    from ansible_collections.gpu_node.container_toolkit.plugins.modules import nvidia_driver_info

    relative, secret, mode = SECRET_LINKS[case]
    planted = posixpath.join("/home/kubernetes/bin/nvidia", relative)
    cos_node.node_path(secret).parent.mkdir(parents=True, exist_ok=True)
    if relative.startswith("lib64/"):  # a real library, so that only the mode can refuse it
        os.rename(cos_node.node_path(planted), cos_node.node_path(secret))
    else:
        cos_node.node_path(secret).write_bytes(b"root:$6$secret:19000:0:99999:7:::\n")
        cos_node.node_path(planted).unlink()
    os.chmod(cos_node.node_path(secret), mode)
    os.symlink(secret, cos_node.node_path(planted))
    facts, failed = run_module(nvidia_driver_info.main, {"host_root": str(cos_node.root)}, monkeypatch=monkeypatch)
    assert not failed, facts
    warned = [w for w in facts.get("warnings", []) if planted in w and secret in w]
    assert warned and "not mounting" in warned[0], facts.get("warnings")
    listed = facts["firmware"] + facts["config_files"] + facts["binaries"] + [lib["path"] for lib in facts["libraries"]]
    assert planted not in listed and secret not in listed
    result = ok(cos_node, monkeypatch)
    spec = written(cos_node)
    assert result["changed"] and secret not in spec and posixpath.basename(planted) not in spec.replace(
        "libnvidia-ml.so.1", ""), spec
    assert "libcuda.so.535.104.12" in spec


@pytest.mark.parametrize("legacy", [False, True], ids=["record", "earlier-release-record"])
def test_a_forged_created_dirs_record_removes_nothing_outside_the_specs_own_directories(
        cos_node, monkeypatch, tmp_path, legacy):
    """uninstall read the spec's header and removed every empty directory it listed, links followed out of the node."""
    outside = tmp_path / "outside-node"
    (outside / "empty").mkdir(parents=True)
    decoys = ["/etc/empty-admin-dir", "/home/user/.ssh", "/var/lib/empty"]
    for decoy in decoys:
        cos_node.node_path(decoy).mkdir(parents=True, exist_ok=True)
    cos_node.node_path("/escape").symlink_to(str(outside))  # absolute: outside the node if followed here
    ok(cos_node, monkeypatch)
    spec = cos_node.node_path(MANAGEMENT_PATH)
    forged = decoys + ["/escape/empty", "/var/run/cdi/../../../escape/empty", "/", "/var/run/cdi", "/var/run"]
    text = spec.read_text()
    record = ownership.created_line(["/var/run", "/var/run/cdi"], ownership.REMOVES_OWNED)
    assert record in text  # the fake node has no /var/run: the write made both
    spec.write_text(text.replace(record, "# created_dirs: %s" % json.dumps(forged) if legacy
                                 else ownership.created_line(forged)))
    cos_node.node_path("/var/run/keep").write_text("")  # /var/run is no longer empty
    result = ok(cos_node, monkeypatch, state="absent")
    assert not spec.exists()
    # Only the spec's own directory and its parents are its to remove, and only when empty.
    assert result.get("removed_dirs") == ["/var/run/cdi"], result
    assert (outside / "empty").is_dir()
    assert all(cos_node.node_path(decoy).is_dir() for decoy in decoys)
