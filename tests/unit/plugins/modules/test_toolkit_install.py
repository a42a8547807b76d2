from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import textwrap

import pytest
import toolkit_artifacts as ta
from module_runner import run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs, toolkit_source
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeRoot
from ansible_collections.gpu_node.container_toolkit.plugins.modules import toolkit_install
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.local_command import run_tool

INSTALL = "/home/kubernetes/bin/nvidia/toolkit"
needs_unshare = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                                   reason="needs root and unshare for mount namespaces")
MANIFEST = ".toolkit-manifest.json"
EXPECTED = sorted(
    [n for n in ta.BINARIES if n != "nvidia-cdi-hook"]
    + [n + ".real" for n in ta.BINARIES if n != "nvidia-cdi-hook"]
    + ["nvidia-cdi-hook", "nvidia-container-toolkit", "libnvidia-container.so.1", "libnvidia-container-go.so.1",
       "libnvidia-container.so.%s" % ta.VERSION, "libnvidia-container-go.so.%s" % ta.VERSION]
)


@pytest.fixture
def node(cos_node):
    ta.build_tree(cos_node.node_path("/var/lib/toolbox/toolkit"))
    return cos_node


def install(node, monkeypatch, check=False, diff=False, **extra):
    """The module run as its action plugin runs it: ``expected``, ``payload`` and ``config_write``
    travel in ``_wire``."""
    args = {"host_root": str(node.root), "src": ["/var/lib/toolbox/toolkit"], "remote_src": True,
            "install_dir": INSTALL}
    wire = {key: extra.pop(key) for key in ("expected", "payload", "config_write") if key in extra}
    wire.update(extra.pop("_wire", {}))
    if wire:
        args["_wire"] = argument_specs.wire_text(wire)
    args.update(extra)
    return run_module(toolkit_install.main, args, check_mode=check, diff=diff, monkeypatch=monkeypatch)


def listing(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else None


def snapshot(path):
    """name -> (kind, bytes or target, mode, inode) for every entry, to prove nothing was touched."""
    result = {}
    for name in listing(path) or []:
        full = os.path.join(path, name)
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            result[name] = ("link", os.readlink(full), st.st_ino)
        elif stat.S_ISREG(st.st_mode):
            with open(full, "rb") as handle:
                result[name] = ("file", handle.read(), stat.S_IMODE(st.st_mode), st.st_ino)
        else:
            result[name] = ("other",)
    return result


def test_install_check_real_check_real(node, monkeypatch):
    target = node.node_path(INSTALL)
    flags = []
    for check in (True, False, True, False):
        result, failed = install(node, monkeypatch, check=check)
        assert not failed, result
        flags.append(result["changed"])
        if check and len(flags) == 1:
            assert listing(target) is None
    assert flags == [True, True, False, False]
    assert listing(target) == sorted(EXPECTED + [MANIFEST])
    for name in EXPECTED + [MANIFEST]:
        st = os.lstat(os.path.join(target, name))
        assert st.st_uid == 0 and st.st_gid == 0
        assert not stat.S_IMODE(st.st_mode) & 0o022 or stat.S_ISLNK(st.st_mode)
    assert os.readlink(os.path.join(target, "nvidia-container-toolkit")) == "nvidia-container-runtime-hook"
    assert os.readlink(os.path.join(target, "libnvidia-container.so.1")) == "libnvidia-container.so.%s" % ta.VERSION
    real = open(os.path.join(target, "nvidia-ctk.real"), "rb").read()
    assert real == open(node.node_path("/var/lib/toolbox/toolkit/usr/bin/nvidia-ctk"), "rb").read()
    wrapper = open(os.path.join(target, "nvidia-container-runtime")).read()
    assert "exec '%s/nvidia-container-runtime.real' \"$@\"" % INSTALL in wrapper
    assert str(node.root) not in wrapper
    manifest = json.load(open(os.path.join(target, MANIFEST)))
    assert sorted(manifest["files"]) == EXPECTED
    assert manifest["files"]["nvidia-ctk.real"]["sha256"] == hashlib.sha256(real).hexdigest()
    assert manifest["created_dirs"] == [INSTALL]
    assert result["mount"]["mount_point"] == "/home/kubernetes/bin"
    assert not [n for n in os.listdir(target) if n.startswith(".toolkit-staging")]


def test_diff_lists_files(node, monkeypatch):
    result, failed = install(node, monkeypatch, check=True, diff=True)
    assert not failed
    assert result["diff"]["before"] == ""
    assert "nvidia-container-toolkit: link -> nvidia-container-runtime-hook\n" in result["diff"]["after"]
    assert "nvidia-ctk.real: file 0755 sha256:" in result["diff"]["after"]
    install(node, monkeypatch)
    result, failed = install(node, monkeypatch, diff=True)
    assert not failed and result["diff"]["before"] == result["diff"]["after"]


def test_update_replaces_only_what_changed(node, monkeypatch):
    install(node, monkeypatch)
    target = node.node_path(INSTALL)
    before = snapshot(target)
    tree = node.node_path("/var/lib/toolbox/toolkit")
    (ta.build_tree(tree, version="1.15.0"))
    for lib in ta.LIBRARIES:
        os.unlink(os.path.join(tree, ta.LIB_DIR_DEB, "%s.so.%s" % (lib, ta.VERSION)))
    result, failed = install(node, monkeypatch)
    assert not failed and result["changed"]
    assert "libnvidia-container.so.1.15.0" in result["added"]
    assert sorted(result["removed"]) == ["libnvidia-container-go.so.1.14.3", "libnvidia-container.so.1.14.3"]
    assert "nvidia-ctk.real" in result["updated"] and "libnvidia-container.so.1" in result["updated"]
    assert "nvidia-ctk" not in result["updated"]  # the wrapper did not change
    after = snapshot(target)
    assert after["nvidia-ctk"] == before["nvidia-ctk"]  # same inode: not rewritten
    assert os.readlink(os.path.join(target, "libnvidia-container.so.1")) == "libnvidia-container.so.1.15.0"
    assert not os.path.exists(os.path.join(target, "libnvidia-container.so.1.14.3"))


def test_mode_change_is_repaired(node, monkeypatch):
    install(node, monkeypatch)
    path = node.node_path(INSTALL + "/nvidia-ctk.real")
    os.chmod(path, stat.S_IMODE(0o775))
    result, failed = install(node, monkeypatch)
    assert not failed and result["changed"] and result["updated"] == ["nvidia-ctk.real"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755


def test_absent_removes_everything(node, monkeypatch):
    install(node, monkeypatch)
    args = {"host_root": str(node.root), "install_dir": INSTALL, "state": "absent"}
    result, failed = run_module(toolkit_install.main, args, check_mode=True, diff=True, monkeypatch=monkeypatch)
    assert not failed and result["changed"] and sorted(result["removed"]) == EXPECTED
    assert "nvidia-ctk.real: file 0755" in result["diff"]["before"]
    assert listing(node.node_path(INSTALL)) == sorted(EXPECTED + [MANIFEST])
    result, failed = run_module(toolkit_install.main, args, monkeypatch=monkeypatch)
    assert not failed and result["changed"]
    assert not os.path.lexists(node.node_path(INSTALL))
    assert listing(node.node_path("/home/kubernetes/bin/nvidia")) == sorted(
        ["bin", "drivers", "firmware", "lib64", "share", "vulkan"])
    result, failed = run_module(toolkit_install.main, args, monkeypatch=monkeypatch)
    assert not failed and not result["changed"]


def test_absent_keeps_foreign_files_and_dir(node, monkeypatch):
    install(node, monkeypatch)
    config = node.node_path(INSTALL + "/.config/nvidia-container-runtime/config.toml")
    os.makedirs(os.path.dirname(config))
    open(config, "w").write("# user config\n")
    args = {"host_root": str(node.root), "install_dir": INSTALL, "state": "absent"}
    result, failed = run_module(toolkit_install.main, args, monkeypatch=monkeypatch)
    assert not failed and result["changed"]
    assert listing(node.node_path(INSTALL)) == [".config"]


def test_absent_without_manifest_removes_nothing(node, monkeypatch):
    target = node.node_path(INSTALL)
    os.makedirs(target)
    open(os.path.join(target, "nvidia-ctk"), "w").write("not ours\n")
    args = {"host_root": str(node.root), "install_dir": INSTALL, "state": "absent"}
    result, failed = run_module(toolkit_install.main, args, monkeypatch=monkeypatch)
    assert not failed and not result["changed"]
    assert "no .toolkit-manifest.json" in result["warnings"][0]
    assert listing(target) == ["nvidia-ctk"]


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink_out", "device", "setuid"])
def test_unsafe_tarball_refused_nothing_written(node, monkeypatch, kind):
    tarball = node.node_path("/var/lib/toolbox/evil.tar.gz")
    ta.build_tarball(node.node_path("/var/lib/toolbox/toolkit"), tarball, extra=[ta.evil_member(kind)])
    result, failed = install(node, monkeypatch, src=["/var/lib/toolbox/evil.tar.gz"])
    assert failed and "refusing archive" in result["msg"], result
    assert not os.path.lexists(node.node_path(INSTALL))


def test_tarball_with_checksum(node, monkeypatch):
    tarball = node.node_path("/var/lib/toolbox/toolkit.tar.xz")
    ta.build_tarball(node.node_path("/var/lib/toolbox/toolkit"), tarball, compression="xz")
    digest = hashlib.sha256(open(tarball, "rb").read()).hexdigest()
    result, failed = install(node, monkeypatch, src=["/var/lib/toolbox/toolkit.tar.xz"], checksum=["sha256:" + "0" * 64])
    assert failed and "checksum mismatch" in result["msg"] and "nothing was written" in result["msg"]
    assert not os.path.lexists(node.node_path(INSTALL))
    result, failed = install(node, monkeypatch, src=["/var/lib/toolbox/toolkit.tar.xz"], checksum=["sha256:" + digest])
    assert not failed and result["changed"] and sorted(result["added"]) == EXPECTED


def test_hardlinks_in_tarball(node, monkeypatch, tmp_path):
    import tarfile
    tarball = node.node_path("/var/lib/toolbox/links.tar")
    with tarfile.open(tarball, "w") as tar:
        tar.add(node.node_path("/var/lib/toolbox/toolkit/usr/bin/nvidia-ctk"), arcname="bin/nvidia-ctk")
        info = tarfile.TarInfo("bin/nvidia-cdi-hook")
        info.type = tarfile.LNKTYPE
        info.linkname = "bin/nvidia-ctk"
        tar.addfile(info)
        info = tarfile.TarInfo("bin/nvidia-container-cli")
        info.type = tarfile.LNKTYPE
        info.linkname = "bin/missing"
        tar.addfile(info)
    result, failed = install(node, monkeypatch, src=["/var/lib/toolbox/links.tar"])
    assert failed and "not an earlier file" in result["msg"]


@pytest.mark.parametrize("extra, message", [
    ({"src": ["/var/lib/toolbox/nothing"]}, "src /var/lib/toolbox/nothing does not exist"),
    ({"checksum": ["sha256:" + "0" * 64]}, "checksum cannot be checked for the directory"),
    ({"checksum": ["a", "b"]}, "checksum has 2 items but src has 1"),
    ({"src": ["/etc"]}, "no toolkit files found in src"),
    ({"src": []}, "src is required"),
    ({"remote_src": False}, "run this module through its action plugin"),
    ({"src": ["/etc/os-release"]}, "/etc/os-release is not a directory, a package or a readable tarball"),
])
def test_argument_failures(node, monkeypatch, extra, message):
    result, failed = install(node, monkeypatch, **extra)
    assert failed and message in result["msg"], result
    assert not os.path.lexists(node.node_path(INSTALL))


def test_bad_checksum_format(node, monkeypatch):
    tarball = node.node_path("/var/lib/toolbox/t.tar")
    ta.build_tarball(node.node_path("/var/lib/toolbox/toolkit"), tarball, compression="")
    result, failed = install(node, monkeypatch, src=["/var/lib/toolbox/t.tar"], checksum=["crc:1"])
    assert failed and "checksum must look like" in result["msg"]


def test_partial_source_warns(node, monkeypatch):
    tree = node.node_path("/var/lib/toolbox/partial")
    ta.build_tree(tree, only=["nvidia-container-runtime", "nvidia-container-runtime.cdi"], flat=True)
    result, failed = install(node, monkeypatch, src=["/var/lib/toolbox/partial"])
    assert not failed and "nvidia-ctk" in result["missing"]
    assert any("not in src" in w for w in result["warnings"])
    assert "nvidia-container-toolkit" not in listing(node.node_path(INSTALL))


def test_symlink_escaping_in_source_dir_refused(node, monkeypatch):
    os.symlink("/etc/shadow", node.node_path("/var/lib/toolbox/toolkit/usr/bin/evil"))
    result, failed = install(node, monkeypatch)
    assert failed and "points outside the archive" in result["msg"]


def test_conflicting_directory(node, monkeypatch):
    os.makedirs(node.node_path(INSTALL + "/nvidia-ctk"))
    result, failed = install(node, monkeypatch)
    assert failed and "cannot install over %s/nvidia-ctk" % INSTALL in result["msg"]


def test_corrupt_manifest(node, monkeypatch):
    os.makedirs(node.node_path(INSTALL))
    open(node.node_path(INSTALL + "/" + MANIFEST), "w").write("{")
    result, failed = install(node, monkeypatch)
    assert failed and "is not a manifest this module can use" in result["msg"]


def test_failed_swap_keeps_previous_install(node, monkeypatch):
    install(node, monkeypatch)
    target = node.node_path(INSTALL)
    before = snapshot(target)
    ta.build_tree(node.node_path("/var/lib/toolbox/toolkit"), version="2.0.0")
    real_rename = os.rename
    calls = {"n": 0}

    def failing_rename(src, dst, *args, **kwargs):
        if ".toolkit-staging-" in str(src) and "/new/" in str(src):
            calls["n"] += 1
            if calls["n"] == 4:
                raise OSError(28, "No space left on device")
        return real_rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "rename", failing_rename)
    result, failed = install(node, monkeypatch)
    monkeypatch.setattr(os, "rename", real_rename)
    assert failed and "No space left on device" in result["msg"]
    after = snapshot(target)
    assert {k: v[:2] for k, v in after.items()} == {k: v[:2] for k, v in before.items()}


def mountinfo(node, text):
    with open(node.node_path("/proc/self/mountinfo"), "w") as handle:
        handle.write(text)


def test_read_only_mount_fails(node, monkeypatch):
    result, failed = install(node, monkeypatch, install_dir="/usr/local/nvidia/toolkit")
    assert failed
    assert "install_dir /usr/local/nvidia/toolkit is on the read-only mount / (ext2, options ro,relatime)" in result["msg"]
    assert not os.path.lexists(node.node_path("/usr/local/nvidia/toolkit"))


def test_noexec_mount_fails_without_exec_mount(node, monkeypatch):
    result, failed = install(node, monkeypatch, install_dir="/home/toolkit")
    assert failed
    assert "noexec mount /home (ext4, options rw,nosuid,nodev,noexec,relatime)" in result["msg"]
    assert "exec_mount=true" in result["msg"]
    assert not os.path.lexists(node.node_path("/home/toolkit"))


def test_noexec_mount_check_mode_reports_remount(node, monkeypatch):
    result, failed = install(node, monkeypatch, install_dir="/home/toolkit", exec_mount=True, check=True)
    assert not failed and result["changed"] and result["exec_mount"] is True
    assert not os.path.lexists(node.node_path("/home/toolkit"))


def test_noexec_mount_remount_command(node, monkeypatch):
    commands = []

    def fake_run_command(self, args, **kwargs):
        commands.append(args)
        return 0, "", ""

    monkeypatch.setattr(toolkit_install.AnsibleModule, "run_command", fake_run_command)
    monkeypatch.setattr(toolkit_install.AnsibleModule, "get_bin_path", lambda self, name, **kw: "/bin/" + name)
    result, failed = install(node, monkeypatch, install_dir="/home/toolkit", exec_mount=True)
    assert not failed and result["exec_mount"] is True
    target = str(node.node_path("/home/toolkit"))
    assert commands == [["/bin/mount", "--bind", target, target],
                        ["/bin/mount", "-o", "remount,bind,exec,rw,nosuid,nodev,relatime", target]]


def test_remount_failure_is_reported(node, monkeypatch):
    monkeypatch.setattr(toolkit_install.AnsibleModule, "run_command", lambda self, args, **kw: (32, "", "permission denied"))
    monkeypatch.setattr(toolkit_install.AnsibleModule, "get_bin_path", lambda self, name, **kw: "/bin/" + name)
    result, failed = install(node, monkeypatch, install_dir="/home/toolkit", exec_mount=True)
    assert failed and "bind-mounting" in result["msg"] and "permission denied" in result["msg"]


def test_missing_mountinfo_warns(node, monkeypatch):
    os.unlink(node.node_path("/proc/self/mountinfo"))
    result, failed = install(node, monkeypatch)
    assert not failed and any("not checking the mount" in w for w in result["warnings"])


def test_garbled_mountinfo_fails(node, monkeypatch):
    mountinfo(node, "nonsense\n")
    result, failed = install(node, monkeypatch)
    assert failed and "cannot parse" in result["msg"]


def test_custom_config_path_and_fallback(node, monkeypatch):
    _result, failed = install(node, monkeypatch, config_path="/etc/nvidia-container-runtime/config.toml",
                              low_level_runtime="/usr/bin/crun")
    assert not failed
    hook = open(node.node_path(INSTALL + "/nvidia-container-runtime-hook")).read()
    assert "NVIDIA_CTK_CONFIG_FILE_PATH='/etc/nvidia-container-runtime/config.toml'" in hook
    runtime = open(node.node_path(INSTALL + "/nvidia-container-runtime.cdi")).read()
    assert "exec '/usr/bin/crun' \"$@\"" in runtime


def test_stale_staging_removed_and_writable_dir_warned(node, monkeypatch):
    target = node.node_path(INSTALL)
    os.makedirs(os.path.join(target, ".toolkit-staging-old", "sub"))
    os.chmod(target, stat.S_IMODE(0o777))
    result, failed = install(node, monkeypatch)
    assert not failed and result["changed"]
    assert any("world-writable" in w for w in result["warnings"])
    assert not os.path.exists(os.path.join(target, ".toolkit-staging-old"))


def test_changes_name_every_path_and_action(node, monkeypatch):
    result, failed = install(node, monkeypatch, check=True)
    assert not failed
    actions = {c["path"]: c["action"] for c in result["changes"]}
    assert actions[INSTALL] == "created" and actions[INSTALL + "/" + MANIFEST] == "created"
    assert all(actions[INSTALL + "/" + n] == "created" for n in EXPECTED)
    assert sorted(p for p in actions if p.startswith(INSTALL + "/")) == sorted(
        INSTALL + "/" + n for n in EXPECTED + [MANIFEST])
    assert install(node, monkeypatch)[0]["changes"] == result["changes"]
    os.chmod(node.node_path(INSTALL + "/nvidia-ctk.real"), 0o700)
    result, failed = install(node, monkeypatch)
    assert result["changes"] == [{"path": INSTALL + "/nvidia-ctk.real", "action": "updated"}]
    assert install(node, monkeypatch)[0]["changes"] == []
    args = {"host_root": str(node.root), "install_dir": INSTALL, "state": "absent"}
    result, failed = run_module(toolkit_install.main, args, monkeypatch=monkeypatch)
    removed = {c["path"] for c in result["changes"] if c["action"] == "removed"}
    assert removed == {INSTALL + "/" + n for n in EXPECTED + [MANIFEST]} | {INSTALL}


def test_a_second_run_waits_for_the_lock_then_fails_naming_the_holder(node, monkeypatch):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK % (sys.path,), str(node.root)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        # The module waits node_fs's 60 s; a test waits half a second.
        monkeypatch.setattr(NodeRoot.locked.__wrapped__, "__defaults__", (0.5, 0.1))
        result, failed = install(node, monkeypatch)
    finally:
        holder.kill()
        holder.wait()
    assert failed and "another run is changing this node" in result["msg"] and "pid %d" % holder.pid in result["msg"]
    assert not os.path.lexists(node.node_path(INSTALL))


def test_links_in_install_dir_are_resolved_inside_host_root(node, monkeypatch):
    os.makedirs(node.node_path("/var/lib/google/toolkit"))
    os.symlink("/var/lib/google/toolkit", node.node_path("/home/toolkit"))  # absolute: the node's, exec
    result, failed = install(node, monkeypatch, install_dir="/home/toolkit")
    assert not failed and result["changed"], result
    assert sorted(os.listdir(node.node_path("/var/lib/google/toolkit"))) == sorted(EXPECTED + [MANIFEST])
    assert result["files"][0].startswith("/var/lib/google/toolkit/")
    assert "exec '/home/toolkit/nvidia-ctk.real'" in open(node.node_path("/var/lib/google/toolkit/nvidia-ctk")).read()


def test_packages_are_read_on_the_node_too(node, monkeypatch):
    debs = ta.build_debs(node.node_path("/var/lib/toolbox/toolkit"), node.node_path("/var/lib/toolbox/debs"))
    srcs = ["/var/lib/toolbox/debs/" + os.path.basename(str(d)) for d in debs]
    result, failed = install(node, monkeypatch, src=srcs)
    assert not failed and sorted(result["added"]) == EXPECTED
    result, failed = install(node, monkeypatch)  # the same bytes from the tree: nothing to do
    assert not failed and not result["changed"]


@pytest.mark.skipif(not (shutil.which("zstd") and shutil.which("rpm2cpio") and shutil.which("rpmbuild")),
                    reason="zstd, rpm2cpio and rpmbuild are in scripts/apt-packages.txt")
def test_package_commands_run_on_the_node_through_run_command(node, monkeypatch):
    tree = node.node_path("/var/lib/toolbox/toolkit")
    debs = ta.build_debs(tree, node.node_path("/var/lib/toolbox/zst"), compression="zstd")
    rpm = ta.build_rpm(ta.build_tree(node.node_path("/var/lib/toolbox/rpm-tree"), lib_dir=ta.LIB_DIR_RPM),
                       node.node_path("/var/lib/toolbox/rpm"))
    ran = []
    real_run_command = toolkit_install.AnsibleModule.run_command

    def run_command(self, args, **kwargs):
        ran.append(os.path.basename(args[0]))
        return real_run_command(self, args, **kwargs)

    monkeypatch.setattr(toolkit_install.AnsibleModule, "run_command", run_command)
    srcs = ["/var/lib/toolbox/zst/" + os.path.basename(str(d)) for d in debs]
    result, failed = install(node, monkeypatch, src=srcs)
    assert not failed and sorted(result["added"]) == EXPECTED, result
    assert ran == ["zstd"] * len(debs)
    result, failed = install(node, monkeypatch, src=["/" + os.path.relpath(str(rpm), str(node.root))])
    assert not failed and ran[-1] == "rpm2cpio", result

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(toolkit_install.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)
    result, failed = install(node, monkeypatch, src=srcs)
    assert failed and "install the zstd command where src is read" in result["msg"], result


HOLD_LOCK = textwrap.dedent("""
    import sys, time
    sys.path[:0] = %r
    from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeRoot
    with NodeRoot(sys.argv[1]).locked():
        print("held", flush=True)
        time.sleep(60)
""")

# Runs the module in-process in a private mount namespace and prints, as JSON lines, the
# install dir's content before, the result, and the content after.
IN_NAMESPACE = textwrap.dedent("""
    import hashlib, json, os, sys
    sys.path[:0] = %r
    from module_runner import run_module
    from ansible_collections.gpu_node.container_toolkit.plugins.modules import toolkit_install

    def content(path):
        found = {}
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            if name == ".filler":
                continue
            found[name] = os.readlink(full) if os.path.islink(full) else (
                "dir" if os.path.isdir(full) else hashlib.sha256(open(full, "rb").read()).hexdigest())
        return found

    where = sys.argv[1]
    for args in json.loads(sys.argv[2]):
        before = content(where)
        result, failed = run_module(toolkit_install.main, args)
        print(json.dumps({"before": before, "failed": failed, "msg": result.get("msg"), "after": content(where)}))
""")


def in_namespace(node, setup, runs):
    """``setup`` (shell) then each of ``runs`` (module args), in one private mount namespace."""
    where = str(node.node_path(INSTALL))
    script = "%s\nexec %s -c \"$1\" %s \"$2\"" % (setup, shlex.quote(sys.executable), shlex.quote(where))
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-ec", script, "sh",
                           IN_NAMESPACE % (sys.path,), json.dumps(runs)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def args_of(node, **extra):
    return dict({"host_root": str(node.root), "src": ["/var/lib/toolbox/toolkit"], "remote_src": True,
                 "install_dir": INSTALL}, **extra)


@needs_unshare
def test_a_full_disk_fails_cleanly_with_the_old_install_intact(node, monkeypatch, tmp_path):
    install(node, monkeypatch)
    ta.build_tree(node.node_path("/var/lib/toolbox/toolkit"), version="2.0.0")
    here = shlex.quote(str(node.node_path(INSTALL)))
    saved = shlex.quote(str(tmp_path / "saved"))
    # A real ENOSPC: the install copied onto a small tmpfs, which is then filled up.
    setup = (f"cp -a {here} {saved}\nmount -t tmpfs -o size=256k tmpfs {here}\ncp -a {saved}/. {here}/\n"
             f"head -c 1M /dev/zero > {here}/.filler 2>/dev/null || true")
    full, again = in_namespace(node, setup + "\n", [args_of(node), args_of(node, state="absent")])
    assert full["failed"] and "No space left on device" in full["msg"] and "nothing was changed" in full["msg"], full
    assert full["after"] == full["before"] and MANIFEST in full["after"]  # no staging directory left either
    assert not again["failed"] and again["after"] == {}  # removal needs no space


@needs_unshare
def test_a_read_only_install_dir_fails_cleanly_with_the_old_install_intact(node, monkeypatch):
    install(node, monkeypatch)
    ta.build_tree(node.node_path("/var/lib/toolbox/toolkit"), version="2.0.0")
    here = shlex.quote(str(node.node_path(INSTALL)))
    table = shlex.quote(str(node.node_path("/proc/self/mountinfo")))
    setup = f"mount --bind {here} {here}\nmount -o remount,bind,ro {here}"
    # The node's (fake) mount table does not show the read-only mount: the writes themselves fail.
    update, remove = in_namespace(node, setup, [args_of(node), args_of(node, state="absent")])
    assert update["failed"] and "Read-only file system; nothing was changed" in update["msg"], update
    assert update["after"] == update["before"]
    assert remove["failed"] and "cannot remove %s/" % INSTALL in remove["msg"] and "Read-only" in remove["msg"]
    assert remove["after"] == update["before"]
    # With the live mount table, the mount check names the read-only mount before any write.
    # Bound, not linked (a link to this machine's /proc is outside the node, and never followed):
    # the table of the shell's pid, which becomes the module's Python (exec).
    live = f"mount --bind /proc/$$/mountinfo {table}\n"
    (named,) = in_namespace(node, setup + "\n" + live, [args_of(node)])
    assert named["failed"] and "is on the read-only mount %s" % node.node_path(INSTALL) in named["msg"], named
    assert named["after"] == update["before"]


def _expected_from(node):
    """What the action plugin sends instead of the sources: the manifest's files, as entries."""
    with open(node.node_path(INSTALL + "/" + MANIFEST)) as handle:
        files = json.load(handle)["files"]
    return {name: ({"type": "symlink", "target": entry["target"]} if entry["type"] == "link"
                   else {"type": "file", "sha256": entry["sha256"], "mode": entry["mode"]})
            for name, entry in files.items()}


def test_expected_checks_an_install_without_its_sources(node, monkeypatch):
    first, _failed = install(node, monkeypatch)
    expected = _expected_from(node)
    before = snapshot(node.node_path(INSTALL))
    result, failed = install(node, monkeypatch, diff=True, src=[], expected=expected)
    assert not failed and not result["changed"] and "payload_needed" not in result
    assert result["files"] == first["files"] and result["diff"]["before"] == result["diff"]["after"]
    assert snapshot(node.node_path(INSTALL)) == before


@pytest.mark.parametrize("check", [False, True], ids=["run", "check"])
def test_expected_that_differs_asks_for_the_sources_and_changes_nothing(node, monkeypatch, check):
    install(node, monkeypatch)
    expected = _expected_from(node)
    path = node.node_path(INSTALL + "/nvidia-ctk.real")
    with open(path, "wb") as handle:
        handle.write(b"#!/bin/sh\necho replaced\n")
    before = snapshot(node.node_path(INSTALL))
    result, failed = install(node, monkeypatch, check=check, src=[], expected=expected)
    assert not failed and snapshot(node.node_path(INSTALL)) == before
    if check:
        # Check mode writes nothing anyway: the checksums are enough to say what would change.
        assert result["changed"] and result["updated"] == ["nvidia-ctk.real"] and "payload_needed" not in result
    else:
        assert result["payload_needed"] is True and result["changed"] is False


def test_expected_that_is_not_entries_fails_naming_it(node, monkeypatch):
    result, failed = install(node, monkeypatch, src=[], expected={"../x": {"type": "file"}})
    assert failed and "expected is not what the action plugin sends" in result["msg"]
    assert not os.path.exists(node.node_path(INSTALL))


def test_the_controllers_payload_installs_what_src_gives(node, monkeypatch):
    # The action plugin reads src on the controller and sends the tree with the arguments.
    tree = toolkit_source.read_source(str(node.node_path("/var/lib/toolbox/toolkit")), run_tool, "toolkit")
    payload = toolkit_source.write_payload(tree)
    result, failed = install(node, monkeypatch, src=[], payload=payload, _ansible_verbosity=3)
    assert not failed and result["changed"], result
    assert listing(node.node_path(INSTALL)) == sorted(EXPECTED + [MANIFEST])
    # no_log: the files never come back in the result.
    assert payload[:100] not in json.dumps(result)


def test_a_payload_that_is_not_base64_fails_naming_it(node, monkeypatch):
    result, failed = install(node, monkeypatch, src=[], payload="not base64!")
    assert failed and "payload is not what the action plugin sends" in result["msg"]
    assert not os.path.exists(node.node_path(INSTALL))


def test_a_payload_member_leaving_the_install_dir_is_refused(node, monkeypatch):
    # Hostile or corrupt: the node checks the payload as it checks any tarball.
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("../../etc/cron.d/x")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))
    result, failed = install(node, monkeypatch, src=[], payload=base64.b64encode(buffer.getvalue()).decode())
    assert failed and "../../etc/cron.d/x" in result["msg"] and "the toolkit sources the controller sent" in result["msg"]
    assert not os.path.exists(node.node_path(INSTALL)) and not os.path.exists(node.node_path("/etc/cron.d/x"))


CONFIG = INSTALL + "/.config/nvidia-container-runtime/config.toml"


def test_config_write_goes_in_after_the_install(node, monkeypatch):
    text = '[nvidia-container-cli]\nroot = "/home/kubernetes/bin/nvidia"\n'
    result, failed = install(node, monkeypatch, config_write={"path": CONFIG, "content": text, "expect_absent": True})
    assert not failed and result["changed"], result
    assert node.node_path(CONFIG).read_text() == text
    assert stat.S_IMODE(os.stat(node.node_path(CONFIG)).st_mode) == 0o644
    written = result["config_write"]
    assert written["changed"] and written["path"] == CONFIG
    assert written["dirs_created"] == [INSTALL + "/.config", INSTALL + "/.config/nvidia-container-runtime"]
    # The install's own changes do not name the config: they say whether the binaries changed.
    assert CONFIG not in [change["path"] for change in result["changes"]]

    again, failed = install(node, monkeypatch, config_write={"path": CONFIG, "content": text, "expect_absent": True})
    assert not failed and not again["changed"] and not again["config_write"]["changed"] and again["changes"] == []


def test_config_write_alone_changes_the_task_not_the_install(node, monkeypatch):
    install(node, monkeypatch)
    result, failed = install(node, monkeypatch, config_write={"path": CONFIG, "content": "a = 1\n"})
    assert not failed and result["changed"] and result["changes"] == [] and result["config_write"]["changed"]


def test_config_changed_meanwhile_fails_after_the_install_and_is_kept(node, monkeypatch):
    install(node, monkeypatch, config_write={"path": CONFIG, "content": "a = 1\n"})
    node.node_path(CONFIG).write_text("edited = true\n")
    stale = hashlib.sha256(b"a = 1\n").hexdigest()
    result, failed = install(node, monkeypatch, config_write={"path": CONFIG, "content": "a = 2\n", "backup": True,
                                                              "expect_sha256": stale})
    assert failed and "the toolkit is installed, but its config %s was not written" % CONFIG in result["msg"]
    assert "changed on the node" in result["msg"]
    assert node.node_path(CONFIG).read_text() == "edited = true\n"
    assert listing(node.node_path(INSTALL + "/.config/nvidia-container-runtime")) == ["config.toml"]


def test_config_write_keeps_a_backup(node, monkeypatch):
    install(node, monkeypatch, config_write={"path": CONFIG, "content": "a = 1\n"})
    result, failed = install(node, monkeypatch, config_write={"path": CONFIG, "content": "a = 2\n", "backup": True,
                                                              "expect_sha256": hashlib.sha256(b"a = 1\n").hexdigest()})
    assert not failed and result["config_write"]["backup_file"].startswith(CONFIG + ".")
    assert node.node_path(result["config_write"]["backup_file"]).read_text() == "a = 1\n"
    assert node.node_path(CONFIG).read_text() == "a = 2\n"


def test_config_write_waits_for_the_payload(node, monkeypatch):
    """When the install differs from what the action expected, nothing is written, the config neither."""
    install(node, monkeypatch)
    expected = _expected_from(node)
    with open(node.node_path(INSTALL + "/nvidia-ctk.real"), "wb") as handle:
        handle.write(b"#!/bin/sh\necho replaced\n")
    result, failed = install(node, monkeypatch, src=[], expected=expected,
                             config_write={"path": CONFIG, "content": "a = 1\n", "expect_absent": True})
    assert not failed and result["payload_needed"] and "config_write" not in result
    assert not node.node_path(CONFIG).exists()


def test_config_write_in_check_mode_writes_nothing(node, monkeypatch):
    result, failed = install(node, monkeypatch, check=True, config_write={"path": CONFIG, "content": "a = 1\n"})
    assert not failed and result["changed"] and result["config_write"]["changed"]
    assert not node.node_path(INSTALL).exists()


def test_config_write_that_is_not_what_the_action_sends_fails(node, monkeypatch):
    result, failed = install(node, monkeypatch, config_write={"content": "a = 1\n"})
    assert failed and "config_write is not what the action plugin sends: no path" in result["msg"]


def test_a_wire_key_the_action_plugin_never_sends_fails_naming_it(node, monkeypatch):
    result, failed = install(node, monkeypatch, _wire={"payloads": "x"})
    assert failed and result["msg"] == "_wire is not what the action plugin sends: no key payloads"
    assert not os.path.exists(node.node_path(INSTALL))


@pytest.mark.parametrize("text,problem", [("{not json", "not JSON"), ("[1]", "not a JSON object")])
def test_a_wire_that_is_not_the_action_plugins_json_fails_naming_it(node, monkeypatch, text, problem):
    monkeypatch.setattr(argument_specs, "wire_text", lambda _wire: text)
    result, failed = install(node, monkeypatch, _wire={"payload": "eA=="})
    assert failed and result["msg"] == "_wire is not what the action plugin sends: %s" % problem


def test_the_wire_is_one_string_so_no_path_in_it_is_masked_in_the_result():
    # no_log hides an option's values wherever the result repeats them; the wire is one JSON text,
    # which no result repeats, so the paths and digests the wire carries stay readable.
    spec = argument_specs.toolkit_install()["_wire"]
    assert spec == {"type": "str", "no_log": True}
    wire = argument_specs.wire_text({"config_write": {"path": "/usr/local/nvidia/toolkit/x"}})
    assert argument_specs.wire_of(wire) == {"config_write": {"path": "/usr/local/nvidia/toolkit/x"}}
    assert argument_specs.wire_of(None) == {}
