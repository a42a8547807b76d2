"""toolkit_install through the real ``ansible`` command: trees, .deb, .rpm, tarballs, URLs, mounts.

The installed wrappers are run for real; their stand-in ``.real`` binaries record how they were
called. Running a wrapper needs its host paths to exist, so it happens inside a private mount
namespace (``unshare -m``) where a tmpfs on ``/home`` carries the node's install dir, and a
tmpfs on ``/proc`` carries a ``modules`` file saying the ``nvidia`` module is loaded.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shlex
import shutil
import subprocess
import threading

import pytest
import toolkit_artifacts as ta
from ansible_runner import ansible_env, run_module

INSTALL = "/home/kubernetes/bin/nvidia/toolkit"
CONFIG = INSTALL + "/.config/nvidia-container-runtime/config.toml"
WRAPPED = [n for n in ta.BINARIES if n != "nvidia-cdi-hook"]
EXPECTED = sorted(
    WRAPPED + [n + ".real" for n in WRAPPED]
    + ["nvidia-cdi-hook", "nvidia-container-toolkit", "libnvidia-container.so.1", "libnvidia-container-go.so.1",
       "libnvidia-container.so.%s" % ta.VERSION, "libnvidia-container-go.so.%s" % ta.VERSION]
)

needs_unshare = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                                   reason="needs root and unshare for mount namespaces")


def args_for(node, src, **extra):
    args = {"host_root": str(node.root), "src": src, "install_dir": INSTALL}
    args.update(extra)
    return args


def four_runs(args):
    results = [run_module("toolkit_install", args, check=check) for check in (True, False, True, False)]
    for result in results:
        assert result["_rc"] == 0, result
    assert [r["changed"] for r in results] == [True, True, False, False]
    return results


def installed(node):
    path = node.node_path(INSTALL)
    return sorted(n for n in os.listdir(path) if n != ".toolkit-manifest.json") if os.path.isdir(path) else None


def namespace(script, env=None, check=True):
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-ec", script],
                          capture_output=True, text=True, env=env, check=False)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def run_wrappers(node, record, loaded=True):
    """Run every installed command with two arguments inside a namespace that shows the install."""
    lines = [
        "mount -t tmpfs tmpfs /home",
        "mkdir -p %s" % INSTALL,
        "mount --bind %s %s" % (shlex.quote(str(node.node_path(INSTALL))), INSTALL),
    ]
    if loaded:
        lines += ["mount -t tmpfs tmpfs /proc",
                  "echo 'nvidia 56717312 2 nvidia_uvm, Live 0x0000000000000000 (PO)' > /proc/modules"]
    for name in ta.BINARIES + ("nvidia-container-toolkit",):
        lines.append("%s/%s --flag 'two words'" % (INSTALL, name))
    namespace("\n".join(lines), env={"PATH": "/usr/bin:/bin", "TOOLKIT_RECORD": str(record)})
    return ta.read_records(record)


def test_cos_tree_install_wrappers_and_removal(cos_node, tmp_path):
    tree = ta.build_tree(tmp_path / "artifacts")
    fallback = tmp_path / "fallback-runc"
    fallback.write_text(ta.stand_in("fallback-runc"))
    fallback.chmod(0o755)
    args = args_for(cos_node, str(tree), low_level_runtime=str(fallback))
    results = four_runs(args)
    assert installed(cos_node) == EXPECTED
    assert sorted(results[1]["added"]) == EXPECTED
    assert {c["path"]: c["action"] for c in results[1]["changes"]} == dict(
        {INSTALL: "created", INSTALL + "/.toolkit-manifest.json": "created"},
        **{INSTALL + "/" + name: "created" for name in EXPECTED})
    assert results[3]["changes"] == []
    assert str(cos_node.root) not in json.dumps({k: v for k, v in results[1].items() if not k.startswith("_")})

    calls = {call["name"] + ("#%d" % i if call["name"] == "nvidia-container-runtime-hook" else ""): call
             for i, call in enumerate(run_wrappers(cos_node, tmp_path / "record"))}
    assert len(calls) == len(ta.BINARIES) + 1
    for name, call in calls.items():
        assert call["args"] == ["--flag", "two words"], name
        assert call["version"] == ta.VERSION
        if name == "nvidia-cdi-hook":
            assert call["PATH"] == "/usr/bin:/bin"
            continue
        assert call["PATH"] == INSTALL + ":/usr/bin:/bin", name
        wants_config = name.startswith(("nvidia-container-runtime",))
        assert call["NVIDIA_CTK_CONFIG_FILE_PATH"] == (CONFIG if wants_config else "<unset>"), name
        assert call["LD_LIBRARY_PATH"] == (INSTALL if name == "nvidia-container-cli" else "<unset>"), name

    # Without the nvidia kernel module the runtime wrappers run the fallback runtime.
    calls = run_wrappers(cos_node, tmp_path / "record-unloaded", loaded=False)
    fallback_calls = [c for c in calls if c["name"] == "fallback-runc"]
    assert len(fallback_calls) == 3 and all(c["args"] == ["--flag", "two words"] for c in fallback_calls)

    absent = [run_module("toolkit_install", args_for(cos_node, None, state="absent"), check=check)
              for check in (True, False, True, False)]
    assert [r["changed"] for r in absent] == [True, True, False, False], absent
    assert not os.path.lexists(cos_node.node_path(INSTALL))
    assert sorted(os.listdir(cos_node.node_path("/home/kubernetes/bin/nvidia"))) == [
        "bin", "drivers", "firmware", "lib64", "share", "vulkan"]


def test_debs_then_same_tree_changes_nothing(cos_node, tmp_path):
    tree = ta.build_tree(tmp_path / "artifacts")
    debs = ta.build_debs(tree, tmp_path / "debs")
    four_runs(args_for(cos_node, [str(d) for d in debs]))
    assert installed(cos_node) == EXPECTED
    # The same bytes from another kind of source: nothing to do.
    result = run_module("toolkit_install", args_for(cos_node, str(tree)))
    assert result["_rc"] == 0 and result["changed"] is False, result


def test_rpm(cos_node, tmp_path):
    tree = ta.build_tree(tmp_path / "artifacts", lib_dir=ta.LIB_DIR_RPM)
    rpm = ta.build_rpm(tree, tmp_path / "rpm")
    if rpm is None:
        pytest.skip("rpmbuild is not installed")
    four_runs(args_for(cos_node, str(rpm)))
    assert installed(cos_node) == EXPECTED


def test_tarball_checksum(cos_node, tmp_path):
    tarball = ta.build_tarball(ta.build_tree(tmp_path / "artifacts"), tmp_path / "toolkit.tar.gz")
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    bad = run_module("toolkit_install", args_for(cos_node, str(tarball), checksum="sha256:" + "1" * 64))
    assert bad["_rc"] != 0 and "checksum mismatch" in bad["msg"], bad
    assert not os.path.lexists(cos_node.node_path(INSTALL))
    four_runs(args_for(cos_node, str(tarball), checksum="sha256:" + digest))
    assert installed(cos_node) == EXPECTED


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink_out", "device", "setuid"])
def test_escaping_archive_refused_nothing_written(cos_node, tmp_path, kind):
    tarball = ta.build_tarball(ta.build_tree(tmp_path / "artifacts"), tmp_path / "evil.tar",
                               compression="", extra=[ta.evil_member(kind)])
    result = run_module("toolkit_install", args_for(cos_node, str(tarball)))
    assert result["_rc"] != 0 and "refusing" in result["msg"] and "nothing was written" in result["msg"], result
    assert not os.path.lexists(cos_node.node_path(INSTALL))
    assert not os.path.lexists(tmp_path / "escaped")


def test_escaping_symlink_in_controller_dir_refused(cos_node, tmp_path):
    tree = ta.build_tree(tmp_path / "artifacts")
    os.symlink("../../../../etc", tree / "usr" / "bin" / "etc")
    result = run_module("toolkit_install", args_for(cos_node, str(tree)))
    assert result["_rc"] != 0 and "points outside the archive" in result["msg"], result
    assert not os.path.lexists(cos_node.node_path(INSTALL))


@pytest.fixture
def http_dir(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, "http://127.0.0.1:%d/" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_url_requires_checksum(cos_node, tmp_path, http_dir):
    root, base = http_dir
    tarball = ta.build_tarball(ta.build_tree(tmp_path / "artifacts"), root / "toolkit.tar.gz")
    url = base + "toolkit.tar.gz"
    result = run_module("toolkit_install", args_for(cos_node, url))
    assert result["_rc"] != 0 and "set checksum" in result["msg"]
    result = run_module("toolkit_install", args_for(cos_node, url, checksum="sha256:" + "2" * 64))
    assert result["_rc"] != 0 and "checksum mismatch" in result["msg"]
    result = run_module("toolkit_install", args_for(cos_node, base + "missing.tar.gz", checksum="sha256:" + "2" * 64))
    assert result["_rc"] != 0 and "downloading" in result["msg"]
    assert not os.path.lexists(cos_node.node_path(INSTALL))
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    four_runs(args_for(cos_node, url, checksum="sha256:" + digest))
    assert installed(cos_node) == EXPECTED


def test_missing_src_and_diff(cos_node, tmp_path):
    result = run_module("toolkit_install", args_for(cos_node, str(tmp_path / "nope")))
    assert result["_rc"] != 0 and "not found on the controller" in result["msg"]
    result = run_module("toolkit_install", args_for(cos_node, None))
    assert result["_rc"] != 0 and "src is required" in result["msg"]
    # What the action plugin sends the node is its own to set.
    result = run_module("toolkit_install", args_for(cos_node, str(tmp_path), _wire={"payload": "eA=="}))
    assert result["_rc"] != 0 and result["msg"] == "_wire is set by the action plugin itself, not by a task: remove it"
    tree = ta.build_tree(tmp_path / "artifacts")
    result = run_module("toolkit_install", args_for(cos_node, str(tree)), check=True, diff=True)
    assert result["_rc"] == 0 and "+nvidia-ctk.real: file 0755 sha256:" in result["_diff_text"], result


# --- mounts, for real, inside a private mount namespace ---------------------------------

def ansible_in_namespace(setup, args, tmp_path, out="out"):
    """Run ``setup`` then ``ansible -m toolkit_install`` in one private mount namespace."""
    cmd = ["ansible", "localhost", "-c", "local", "-i", "localhost,", "-m",
           "gpu_node.container_toolkit.toolkit_install", "-a", json.dumps(args)]
    script = setup + "\n" + " ".join(shlex.quote(c) for c in cmd) + " > %s || true\n" % shlex.quote(
        str(tmp_path / out))
    return script


def parse(stdout):
    """The module's result; ``failed`` set from the callback's ``FAILED!`` marker."""
    marker = stdout.find("localhost | ")
    result = json.loads(stdout[stdout.find("{", marker):])
    result["failed"] = stdout.startswith("localhost | FAILED", marker)
    return result


@needs_unshare
def live_mount_table(cos_node):
    """Shell lines that show the namespace's real mount table at the node's /proc/self/mountinfo: bound
    from the script's own shell, which outlives the run (a link to this machine's /proc would lead out
    of the node, and is never followed)."""
    return "mount --bind /proc/$$/mountinfo %s\n" % shlex.quote(str(cos_node.node_path("/proc/self/mountinfo")))


def test_read_only_mount_named(cos_node, tmp_path):
    usr = cos_node.node_path("/usr")
    os.makedirs(usr, exist_ok=True)
    tree = ta.build_tree(tmp_path / "artifacts")
    setup = live_mount_table(cos_node) + "mount --bind {0} {0}\nmount -o remount,bind,ro {0}".format(shlex.quote(str(usr)))
    script = ansible_in_namespace(setup, args_for(cos_node, str(tree), install_dir="/usr/local/nvidia/toolkit"),
                                  tmp_path)
    namespace(script, env=ansible_env(ANSIBLE_STDOUT_CALLBACK="minimal"))
    result = parse((tmp_path / "out").read_text())
    assert result.get("failed"), result
    assert "is on the read-only mount %s" % usr in result["msg"]
    assert not os.path.lexists(cos_node.node_path("/usr/local/nvidia"))


@needs_unshare
def test_noexec_mount_and_exec_mount(cos_node, tmp_path):
    home = shlex.quote(str(cos_node.node_path("/home")))
    tree = ta.build_tree(tmp_path / "artifacts")
    setup = live_mount_table(cos_node) + f"mount --bind {home} {home}\nmount -o remount,bind,noexec,nosuid,nodev {home}"
    env = ansible_env(ANSIBLE_STDOUT_CALLBACK="minimal")

    script = ansible_in_namespace(setup, args_for(cos_node, str(tree)), tmp_path)
    namespace(script, env=env)
    result = parse((tmp_path / "out").read_text())
    assert result.get("failed"), result
    assert "noexec mount %s" % cos_node.node_path("/home") in result["msg"] and "exec_mount=true" in result["msg"]
    assert not os.path.lexists(cos_node.node_path(INSTALL))

    real = shlex.quote(str(cos_node.node_path(INSTALL + "/nvidia-ctk.real")))
    script = ansible_in_namespace(setup, args_for(cos_node, str(tree), exec_mount=True), tmp_path)
    # A second run in the same namespace finds the exec bind mount and changes nothing.
    script += ansible_in_namespace("", args_for(cos_node, str(tree), exec_mount=True), tmp_path, out="out2")
    script += ("TOOLKIT_RECORD={rec} {real} ran-after-remount\n"
               "grep ' {dir} ' /proc/self/mountinfo > {mnt}\n"
               "mount -o remount,bind,noexec {dir}\n"
               "if {real} should-not-run 2>/dev/null; then echo ran-on-noexec; fi\n").format(
        rec=shlex.quote(str(tmp_path / "rec")), real=real, mnt=shlex.quote(str(tmp_path / "mnt")),
        dir=shlex.quote(str(cos_node.node_path(INSTALL))))
    proc = namespace(script, env=env)
    result = parse((tmp_path / "out").read_text())
    assert not result.get("failed") and result["changed"] and result["exec_mount"] is True, result
    again = parse((tmp_path / "out2").read_text())
    assert not again["failed"] and again["changed"] is False and again["exec_mount"] is False, again
    assert again["mount"]["mount_point"] == str(cos_node.node_path(INSTALL))
    assert "ran-on-noexec" not in proc.stdout
    assert [c["args"] for c in ta.read_records(tmp_path / "rec")] == [["ran-after-remount"]]
    options = (tmp_path / "mnt").read_text().split()[5].split(",")
    assert "noexec" not in options and "nosuid" in options


def test_wrong_arguments_are_refused_before_anything_is_read(cos_node, tmp_path):
    """The action plugin validates its arguments as a module would (it did not before)."""
    before = sorted(str(p) for p in cos_node.root.rglob("*"))
    unknown = run_module("toolkit_install", {"host_root": str(cos_node.root), "src": [str(tmp_path)], "colour": 1})
    assert unknown["_rc"] != 0 and "Unsupported parameters" in unknown["msg"] and "colour" in unknown["msg"], unknown
    bad = run_module("toolkit_install", {"host_root": str(cos_node.root), "state": "gone"})
    assert bad["_rc"] != 0 and "value of state must be one of: present, absent, got: gone" in bad["msg"], bad
    assert sorted(str(p) for p in cos_node.root.rglob("*")) == before


# --- config: the toolkit's config.toml in the same module run ------------------------------

def test_config_is_written_in_the_install_run_as_toolkit_config_writes_it(cos_node, tmp_path):
    tree = ta.build_tree(tmp_path / "artifacts")
    config = {"driver_root": "/home/kubernetes/bin/nvidia", "runtime_mode": "cdi",
              "settings": {"nvidia-container-cli": {"debug": "/var/log/nvidia-container-toolkit.log"}}}
    results = four_runs(args_for(cos_node, str(tree), config=config))
    assert [r["config"]["changed"] for r in results] == [True, True, False, False]
    assert results[1]["config"]["path"] == CONFIG and results[1]["config"]["driver_root"] == "/home/kubernetes/bin/nvidia"
    written = cos_node.node_path(CONFIG).read_text()
    assert 'mode = "cdi"' in written and 'debug = "/var/log/nvidia-container-toolkit.log"' in written

    # The same file a toolkit_config task writes with the same options: it finds nothing to change.
    alone = run_module("toolkit_config", dict(config, host_root=str(cos_node.root), install_dir=INSTALL))
    assert alone["_rc"] == 0 and alone["changed"] is False, alone

    # Only the config differs: the task changes, the install's own changes stay empty.
    cos_node.node_path(CONFIG).write_text(written.replace('mode = "cdi"', 'mode = "legacy"'))
    result = run_module("toolkit_install", args_for(cos_node, str(tree), config=config), diff=True)
    assert result["_rc"] == 0 and result["changed"] and result["changes"] == [], result
    assert result["config"]["changes"] == [{"path": CONFIG, "action": "updated", "setting": "nvidia-container-runtime.mode",
                                            "reason": "'legacy' -> 'cdi'"}], result
    assert '-mode = "legacy"' in result["_diff_text"] and '+mode = "cdi"' in result["_diff_text"], result["_diff_text"]
    assert cos_node.node_path(CONFIG).read_text() == written


def test_config_with_a_wrong_option_or_state_absent_is_refused(cos_node, tmp_path):
    tree = ta.build_tree(tmp_path / "artifacts")
    before = sorted(str(p) for p in cos_node.root.rglob("*"))
    bad = run_module("toolkit_install", args_for(cos_node, str(tree), config={"runtime_mode": "fast"}))
    assert bad["_rc"] != 0 and bad["msg"].startswith("config: ") and "runtime_mode" in bad["msg"], bad
    own = run_module("toolkit_install", args_for(cos_node, str(tree), config={"install_dir": "/opt"}))
    assert own["_rc"] != 0 and "install_dir" in own["msg"], own
    absent = run_module("toolkit_install", {"host_root": str(cos_node.root), "install_dir": INSTALL,
                                            "state": "absent", "config": {}})
    assert absent["_rc"] != 0 and "config is for state=present" in absent["msg"], absent
    assert sorted(str(p) for p in cos_node.root.rglob("*")) == before


def test_a_config_that_cannot_be_edited_is_left_and_nothing_is_installed(cos_node, tmp_path):
    tree = ta.build_tree(tmp_path / "artifacts")
    path = cos_node.node_path(CONFIG)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"[nvidia-container-cli\nroot = \n")
    result = run_module("toolkit_install", args_for(cos_node, str(tree), config={}))
    assert result["_rc"] != 0 and CONFIG in result["msg"], result
    assert path.read_bytes() == b"[nvidia-container-cli\nroot = \n"
    assert installed(cos_node) == [".config"]  # the config's own directory: no binaries
