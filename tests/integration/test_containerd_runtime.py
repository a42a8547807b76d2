# -*- coding: utf-8 -*-
"""containerd_runtime through real ansible, checked by a real containerd (Debian's 1.6.20).

Each config is first pointed at a temporary directory (sockets, root, state, runc's root) so
that a real daemon can start on the edited file; then the module edits it as it would on a
node, and ``containerd config dump`` and the CRI ``Status`` call say what containerd made of it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import cri
import grpc
import pytest
import tomlkit
from ansible_runner import ansible_env, run_module

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "containerd"
CONFIG = "/etc/containerd/config.toml"
NVIDIA = ("nvidia", "nvidia-cdi", "nvidia-legacy")
COS_TOOLKIT = "/home/kubernetes/bin/nvidia/toolkit"

needs_containerd = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("containerd"),
    reason="needs root and containerd (apt-get install -y containerd runc)",
)


@pytest.fixture
def workdir():
    """A short directory (unix socket paths are limited to 108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="ctd"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def node_with(root, fixture_name, workdir, isolate=True):
    text = (FIXTURES / fixture_name).read_text()
    sock = None
    if isolate:
        text, sock = cri.isolate(text, workdir)
    config = Path(root) / CONFIG.lstrip("/")
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)
    return config, text, sock


def four_runs(args):
    """check, real, check, real: the changed flags must be true, true, false, false."""
    results = [run_module("containerd_runtime", args, check=check) for check in (True, False, True, False)]
    for result in results:
        assert result["_rc"] == 0, result
    assert [r["changed"] for r in results] == [True, True, False, False]
    assert [r["restart_required"] for r in results] == [True, True, False, False]
    return results


def runtimes_seen(status):
    return status["info"]["config"]["containerd"]["runtimes"]


@needs_containerd
def test_gke_cos_config_done_when(tmp_path, workdir):
    """The issue's "done when", on a GKE-on-COS style config with comments."""
    config, original, sock = node_with(tmp_path, "gke-cos.toml", workdir)
    args = {"host_root": str(tmp_path), "install_dir": COS_TOOLKIT, "enable_cdi": True}
    results = four_runs(args)
    assert {"path": CONFIG, "action": "updated", "setting": "runtime nvidia",
            "reason": "missing (added, copied from runc)"} in results[1]["changes"]
    assert results[1]["config_version"] == 2 and results[1]["path"] == CONFIG
    edited = config.read_text()
    for line in original.splitlines():
        if line.strip().startswith("#"):
            assert line in edited.splitlines()

    assert tomlkit.parse(edited)["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"] is True
    dump = cri.config_dump(config)["plugins"]["io.containerd.grpc.v1.cri"]
    # containerd 1.7 added enable_cdi; 1.6.20 loads the file and drops the key it does not know.
    assert dump.get("enable_cdi", True) is True
    assert dump["containerd"]["default_runtime_name"] == "runc"
    assert dump["cni"]["bin_dir"] == "/home/kubernetes/bin"
    for name in NVIDIA:
        runtime = dump["containerd"]["runtimes"][name]
        suffix = "" if name == "nvidia" else "." + name.split("-")[1]
        assert runtime["options"]["BinaryName"] == COS_TOOLKIT + "/nvidia-container-runtime" + suffix
        assert runtime["options"]["SystemdCgroup"] is True
    with cri.Containerd(config, sock, workdir / "containerd.log"):
        status = cri.status(sock)
    assert status["conditions"]["RuntimeReady"] is True
    handlers = runtimes_seen(status)
    assert sorted(handlers) == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
    assert handlers["nvidia"]["options"]["BinaryName"] == COS_TOOLKIT + "/nvidia-container-runtime"
    assert handlers["nvidia"]["options"]["SystemdCgroup"] is True
    assert status["info"]["config"].get("enableCDI", True) is True

    removed = run_module("containerd_runtime", dict(args, state="absent"), diff=True)
    assert removed["changed"] is True and removed["restart_required"] is True
    assert "-[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]" in removed["_diff_text"]
    assert config.read_text() == original
    again = run_module("containerd_runtime", dict(args, state="absent"))
    assert again["changed"] is False and again["restart_required"] is False


@needs_containerd
def test_debian_package_config(tmp_path, workdir):
    """Debian 12's own config.toml (indented, no runtimes table) with the gpu_node role's arguments:
    one change laid out as containerd lays out its files, then none, and absent gives the package's bytes."""
    config, original, _sock = node_with(tmp_path, "debian-12-package.toml", workdir, isolate=False)
    args = {"host_root": str(tmp_path), "enable_cdi": True, "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"]}
    four_runs(args)
    lines = config.read_text().splitlines()
    assert edit_journal.added_mark("    enable_cdi = true") in lines
    assert edit_journal.added_mark('        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]') in lines
    assert '          runtime_type = "io.containerd.runc.v2"' in lines
    assert '            BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi"' in lines
    dump = cri.config_dump(config)["plugins"]["io.containerd.grpc.v1.cri"]
    assert dump["cni"]["bin_dir"] == "/usr/lib/cni"
    assert sorted(dump["containerd"]["runtimes"]) == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
    text, sock = cri.isolate(config.read_text(), workdir)
    isolated = workdir / "isolated.toml"
    isolated.write_text(text)
    with cri.Containerd(isolated, sock, workdir / "containerd.log"):
        assert sorted(runtimes_seen(cri.status(sock))) == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]

    removed = run_module("containerd_runtime", dict(args, state="absent"))
    assert removed["changed"] is True
    assert config.read_text() == original
    assert run_module("containerd_runtime", dict(args, state="absent"))["changed"] is False


@needs_containerd
def test_default_config_set_as_default_with_backup_and_diff(tmp_path, workdir):
    config, original, sock = node_with(tmp_path, "containerd-1.6.20-default.toml", workdir)
    args = {"host_root": str(tmp_path), "set_as_default": True, "backup": True}
    result = run_module("containerd_runtime", args, diff=True)
    assert result["changed"] is True, result
    backup = tmp_path / result["backup_file"].lstrip("/")
    assert result["backup_file"].startswith(CONFIG + ".") and backup.read_text() == original
    diff = result["_diff_text"]
    assert '-      default_runtime_name = "runc"' in diff
    assert '+      default_runtime_name = "nvidia"  # gpu_node.container_toolkit: was "      default_runtime_name = \\"runc\\""' in diff
    # Only added lines apart from the default runtime.
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert removed == ['-      default_runtime_name = "runc"']
    assert cri.config_dump(config)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"] == "nvidia"
    with cri.Containerd(config, sock, workdir / "containerd.log"):
        handlers = runtimes_seen(cri.status(sock))
    assert sorted(handlers) == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
    assert handlers["nvidia-cdi"]["options"]["BinaryName"] == "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi"
    mode_before = backup.stat().st_mode
    removed = run_module("containerd_runtime", {"host_root": str(tmp_path), "state": "absent"})
    assert removed["changed"] is True and {"path": CONFIG, "action": "updated", "setting": "default_runtime_name",
                                           "reason": "'nvidia' -> 'runc' (restored)"} in removed["changes"]
    assert config.read_text() == original
    assert config.stat().st_mode == mode_before


@needs_containerd
def test_drop_in_keeps_runc_and_cri_settings(tmp_path, workdir):
    """containerd 1.6 replaces the CRI table from imports: the drop-in must carry all of it."""
    text, sock = cri.isolate((FIXTURES / "gke-cos.toml").read_text(), workdir)
    config = tmp_path / "config.toml"
    config.write_text(text)
    drop_in = tmp_path / "conf.d" / "99-nvidia.toml"
    drop_in.parent.mkdir()
    args = {"path": str(config), "drop_in": str(drop_in), "set_as_default": True}
    result = run_module("containerd_runtime", args)
    assert result["changed"] is True and result["drop_in"] == str(drop_in), result
    assert run_module("containerd_runtime", args, check=True)["changed"] is False
    assert tomlkit.parse(config.read_text())["imports"] == [str(drop_in)]
    dump = cri.config_dump(config)["plugins"]["io.containerd.grpc.v1.cri"]
    assert sorted(dump["containerd"]["runtimes"]) == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
    assert dump["containerd"]["default_runtime_name"] == "nvidia"
    assert dump["sandbox_image"] == "gke.gcr.io/pause:3.8"
    assert dump["cni"]["bin_dir"] == "/home/kubernetes/bin"
    with cri.Containerd(config, sock, workdir / "containerd.log"):
        assert sorted(runtimes_seen(cri.status(sock))) == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
    removed = run_module("containerd_runtime", dict(args, state="absent"))
    assert removed["changed"] is True
    assert config.read_text() == text and not drop_in.exists()


def test_fake_cos_node(cos_node):
    """The fake COS node's own GKE config; paths written are host paths, never host_root."""
    config = Path(cos_node.node_path(CONFIG))
    original = config.read_text()
    result = run_module("containerd_runtime", {"host_root": str(cos_node.root), "install_dir": COS_TOOLKIT})
    assert result["changed"] is True and result["config_version"] == 2, result
    text = config.read_text()
    assert str(cos_node.root) not in text
    runtimes = tomlkit.parse(text).unwrap()["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    assert runtimes["nvidia"]["options"]["BinaryName"] == COS_TOOLKIT + "/nvidia-container-runtime"
    assert runtimes["nvidia"]["options"]["SystemdCgroup"] is True
    assert run_module("containerd_runtime", {"host_root": str(cos_node.root), "state": "absent"})["changed"] is True
    assert config.read_text() == original


def test_missing_file(tmp_path):
    """No config at all: one is created (version 2: the node's containerd is not asked), runc kept."""
    result = run_module("containerd_runtime", {"host_root": str(tmp_path)})
    assert result["changed"] is True
    assert result["config_version_source"].startswith("default (host_root is not /")
    data = tomlkit.parse((tmp_path / CONFIG.lstrip("/")).read_text()).unwrap()
    runtimes = data["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    assert sorted(runtimes) == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]


@pytest.mark.parametrize("where", ["/usr/bin/containerd", "/usr/local/bin/containerd"])
def test_a_containerd_binary_under_host_root_is_never_run(tmp_path, where):
    """Ansible in a container beside the node (host_root /host): a binary planted on the node would
    run with the controller's rights. The version comes from the option, else it is 2."""
    config = tmp_path / CONFIG.lstrip("/")
    config.parent.mkdir(parents=True)
    config.write_text("")
    sentinel = tmp_path.parent / ("ran-" + tmp_path.name)
    fake = tmp_path / where.lstrip("/")
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\ntouch %s\necho 'containerd github.com/containerd/containerd/v2 v2.0.11 abc'\n" % sentinel)
    fake.chmod(0o755)
    result = run_module("containerd_runtime", {"host_root": str(tmp_path)})
    assert not sentinel.exists()
    assert result["config_version"] == 2 and result["config_version_source"] == (
        "default (host_root is not /: the node's containerd binary is not run from here; set config_version to choose)")
    result = run_module("containerd_runtime", {"host_root": str(tmp_path), "state": "absent"})
    config.write_text("")
    result = run_module("containerd_runtime", {"host_root": str(tmp_path), "config_version": "3"})
    assert result["config_version"] == 3 and "io.containerd.cri.v1.runtime" in tomlkit.parse(config.read_text())["plugins"]
    assert not sentinel.exists()


def test_symlinked_config_edits_target(tmp_path):
    target = tmp_path / "home" / "containerd" / "config.toml"
    target.parent.mkdir(parents=True)
    original = (FIXTURES / "containerd-1.7.34-default.toml").read_text()
    target.write_text(original)
    link = tmp_path / CONFIG.lstrip("/")
    link.parent.mkdir(parents=True)
    link.symlink_to("/home/containerd/config.toml")   # absolute, inside host_root
    result = run_module("containerd_runtime", {"host_root": str(tmp_path)})
    assert result["changed"] is True and result["path"] == "/home/containerd/config.toml"
    assert result["symlinks"] == ["%s is a symlink; edited its target /home/containerd/config.toml" % CONFIG]
    assert link.is_symlink() and "runtimes.nvidia]" in target.read_text()


BAD_INPUT = [
    ("broken TOML", 'version = 2\n[plugins\n', {},
     "%s is not valid TOML" % CONFIG),
    ("runtimes not a table", 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\nruntimes = 3\n', {},
     'plugins."io.containerd.grpc.v1.cri".containerd.runtimes must be a table, but it is a int (3)'),
    ("unknown version", 'version = 5\n', {}, "containerd config version 5 is not supported by this module"),
    ("failing validate", (FIXTURES / "gke-cos.toml").read_text(),
     {"validate": "sh -c 'echo config rejected >&2; exit 3' %s"},
     "failed to validate (rc 3: config rejected)"),
]


@pytest.mark.parametrize("text, extra, message", [case[1:] for case in BAD_INPUT], ids=[case[0] for case in BAD_INPUT])
def test_bad_input_leaves_file_alone(tmp_path, text, extra, message):
    config = tmp_path / CONFIG.lstrip("/")
    config.parent.mkdir(parents=True)
    config.write_text(text)
    result = run_module("containerd_runtime", dict({"host_root": str(tmp_path)}, **extra))
    assert result["_rc"] != 0 and result["changed"] is False
    assert message in result["msg"], result["msg"]
    assert "left as it was" in result["msg"]
    assert config.read_text() == text
    assert sorted(p.name for p in config.parent.iterdir()) == ["config.toml"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare for a read-only bind mount")
def test_read_only_file_system(tmp_path):
    """The node's /etc is a read-only bind mount (inside ``unshare -m``, so only ansible sees it)."""
    etc = tmp_path / "etc" / "containerd"
    etc.mkdir(parents=True)
    original = (FIXTURES / "gke-cos.toml").read_text()
    (etc / "config.toml").write_text(original)
    args = json.dumps({"host_root": str(tmp_path)})
    script = (
        'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && '
        'exec ansible localhost -c local -i localhost, -m gpu_node.container_toolkit.containerd_runtime -a "$2"'
    )
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", str(tmp_path / "etc"), args],
        capture_output=True, text=True, env=ansible_env(ANSIBLE_STDOUT_CALLBACK="minimal"), check=False,
    )
    assert proc.returncode != 0, proc.stdout
    result = json.loads(proc.stdout[proc.stdout.index("{", proc.stdout.index("localhost | ")):])
    assert "could not write %s" % CONFIG in result["msg"]
    assert "not writable" in result["msg"] or "Read-only file system" in result["msg"]
    assert (etc / "config.toml").read_text() == original


@needs_containerd
@pytest.mark.skipif(not shutil.which("busybox") or not shutil.which("ctr"), reason="needs busybox-static and ctr")
def test_run_pod_sandbox_execs_configured_binary(tmp_path, workdir):
    """CRI RunPodSandbox with handler nvidia runs the BinaryName the module wrote (a recording stand-in)."""
    text, sock = cri.isolate((FIXTURES / "containerd-1.6.20-default.toml").read_text(), workdir)
    doc = tomlkit.parse(text)
    doc["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"] = cri.pause_image_tar(workdir / "pause.tar")
    config = tmp_path / CONFIG.lstrip("/")
    config.parent.mkdir(parents=True)
    config.write_text(doc.as_string())
    toolkit = workdir / "toolkit"      # a real host path: the daemon runs on this machine
    toolkit.mkdir()
    calls = workdir / "calls.log"
    stand_in = toolkit / "nvidia-container-runtime"
    stand_in.write_text('#!/bin/sh\necho "$@" >> "%s"\nexec runc "$@"\n' % calls)
    stand_in.chmod(0o755)
    result = run_module("containerd_runtime", {"host_root": str(tmp_path), "install_dir": str(toolkit)})
    assert result["changed"] is True, result
    with cri.Containerd(config, sock, workdir / "containerd.log"):
        cri.import_image(sock, workdir / "pause.tar")
        sandbox = cri.run_pod_sandbox(sock, "nvidia")
        try:
            recorded = calls.read_text()
        finally:
            cri.remove_pod_sandbox(sock, sandbox)
    assert "create --bundle" in recorded and sandbox in recorded


@needs_containerd
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not os.path.isdir("/etc/containerd"),
                    reason="needs root, unshare and Debian's containerd package")
def test_enable_cdi_on_containerd_1_6_warns(tmp_path):
    """Debian's containerd 1.6 on the node itself (host_root /): its release is asked, enable_cdi is
    written, and the result says it has no effect. Run in a private mount namespace with a tmpfs
    on /etc/containerd, so that this machine's own config is never touched."""
    fixture = FIXTURES / "gke-cos.toml"
    script = tmp_path / "in-namespace.sh"
    script.write_text(
        "set -e\nmount -t tmpfs tmpfs /etc/containerd\ncp %s /etc/containerd/config.toml\n"
        "for i in 1 2; do ansible localhost -c local -i localhost, -m gpu_node.container_toolkit.containerd_runtime "
        "-a '{\"host_root\": \"/\", \"enable_cdi\": true}' >%s/run$i.out 2>%s/run$i.err || true; done\n"
        % (fixture, tmp_path, tmp_path))
    before = Path("/etc/containerd/config.toml").read_bytes() if os.path.exists("/etc/containerd/config.toml") else None
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", str(script)],
                          capture_output=True, text=True, env=ansible_env(), check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    first, again = [(tmp_path / ("run%d.out" % i)).read_text() + (tmp_path / ("run%d.err" % i)).read_text()
                    for i in (1, 2)]
    assert "CHANGED" in first and "containerd 1.6 on the node has no CDI support" in first, first
    assert "SUCCESS" in again and "no CDI support" not in again, again
    after = Path("/etc/containerd/config.toml").read_bytes() if os.path.exists("/etc/containerd/config.toml") else None
    assert after == before


def test_missing_file_removed_again_with_its_directory(tmp_path):
    """No /etc/containerd at all: present records that it made the file and the directory, absent
    (check mode first) removes both, with no backup even with backup=true; nothing is left."""
    (tmp_path / "etc").mkdir()
    args = {"host_root": str(tmp_path), "backup": True}
    made = run_module("containerd_runtime", args)
    assert made["changed"] is True and made.get("backup_files") == {CONFIG: None}, made
    config = tmp_path / CONFIG.lstrip("/")
    assert config.read_text().splitlines()[0].endswith('["/etc/containerd"]')
    check = run_module("containerd_runtime", dict(args, state="absent"), check=True)
    assert check["changed"] is True and config.exists()
    assert {"path": "/etc/containerd", "action": "removed",
            "reason": "created by this module; removed only when empty"} in check["changes"]
    removed = run_module("containerd_runtime", dict(args, state="absent"))
    assert removed["changed"] is True and removed["restart_required"] is True, removed
    assert removed["removed_dirs"] == ["/etc/containerd"] and "backup_file" not in removed
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["etc"]
    assert run_module("containerd_runtime", dict(args, state="absent"))["changed"] is False


def test_missing_file_with_a_strangers_file_next_to_it_keeps_the_directory(tmp_path):
    run_module("containerd_runtime", {"host_root": str(tmp_path)})
    other = tmp_path / "etc" / "containerd" / "certs.toml"
    other.write_text("# someone else's\n")
    removed = run_module("containerd_runtime", {"host_root": str(tmp_path), "state": "absent"})
    assert removed["removed_dirs"] == [] and other.read_text() == "# someone else's\n"
    assert not (tmp_path / CONFIG.lstrip("/")).exists()
    assert {"path": "/etc/containerd", "action": "kept", "reason": "created by this module; not empty"} in removed["changes"]


def test_remove_backups_takes_only_the_copies_this_module_made(tmp_path, workdir):
    config, original, _sock = node_with(tmp_path, "gke-cos.toml", workdir, isolate=False)
    folder = config.parent
    mine = folder / "config.toml.1.2020-01-01@00:00:00~"  # an operator's copy of an older config
    mine.write_text(original.replace("262144", "1"))
    unrelated = folder / "config.toml.bak"
    unrelated.write_text(original)
    args = {"host_root": str(tmp_path), "backup": True}
    first = run_module("containerd_runtime", args)
    second = run_module("containerd_runtime", dict(args, set_as_default=True))
    removed = run_module("containerd_runtime", dict(args, state="absent"))
    made = {first["backup_file"], second["backup_file"], removed["backup_file"]}
    assert len(made) == 3 and config.read_text() == original
    # check mode names them and removes nothing; then they go, and only they.
    check = run_module("containerd_runtime", {"host_root": str(tmp_path), "state": "absent", "remove_backups": True},
                       check=True)
    assert sorted(check["removed_backups"]) == sorted(made) and all((tmp_path / b.lstrip("/")).exists() for b in made)
    clean = run_module("containerd_runtime", {"host_root": str(tmp_path), "state": "absent", "remove_backups": True})
    assert clean["changed"] is True and sorted(clean["removed_backups"]) == sorted(made)
    assert sorted(p.name for p in folder.iterdir()) == sorted(["config.toml", mine.name, unrelated.name])
    again = run_module("containerd_runtime", {"host_root": str(tmp_path), "state": "absent", "remove_backups": True})
    assert again["changed"] is False and again["removed_backups"] == []


def test_remove_backups_after_a_created_file_takes_its_directory_too(tmp_path):
    """Made from nothing, then changed (a backup of our own file), then removed: the backup and
    the directory go with remove_backups."""
    args = {"host_root": str(tmp_path), "backup": True}
    run_module("containerd_runtime", args)
    changed = run_module("containerd_runtime", dict(args, set_as_default=True))
    assert changed["backup_file"].startswith(CONFIG + ".")
    removed = run_module("containerd_runtime", dict(args, state="absent"))
    assert removed["removed_dirs"] == []  # the backup is still in /etc/containerd
    clean = run_module("containerd_runtime", {"host_root": str(tmp_path), "state": "absent", "remove_backups": True})
    assert clean["removed_backups"] == [changed["backup_file"]] and clean["removed_dirs"] == ["/etc/containerd", "/etc"]
    assert list(tmp_path.iterdir()) == []


def _start_edit(root, runtimes):
    args = {"host_root": str(root), "install_dir": COS_TOOLKIT, "runtimes": runtimes}
    cmd = ["ansible", "localhost", "-c", "local", "-i", "localhost,", "-m",
           "gpu_node.container_toolkit.containerd_runtime", "-a", json.dumps(args)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=ansible_env(ANSIBLE_STDOUT_CALLBACK="minimal"))


def test_two_runs_editing_one_config_at_once_lose_nothing(tmp_path):
    """Two ansible processes edit one config at the same moment, six times over: each time both
    runtimes end up in the file, or one run is refused (the file changed between its read and its
    write) and the file holds the other's whole edit; running it again then adds its runtime."""
    mine = [{"name": "nvidia", "binary": COS_TOOLKIT + "/nvidia-container-runtime"}]
    theirs = [{"name": "gpu-b", "binary": "/opt/b/runtime"}]
    refused_rounds = 0
    for round_ in range(6):
        root = tmp_path / str(round_)
        config, _original, _sock = node_with(root, "gke-cos.toml", tmp_path, isolate=False)
        runs = [_start_edit(root, mine), _start_edit(root, theirs)]
        outcomes = [(run.wait(timeout=300), run.communicate()[0]) for run in runs]
        refused = [i for i, (rc, _out) in enumerate(outcomes) if rc != 0]
        assert len(refused) <= 1, outcomes
        names = set(tomlkit.parse(config.read_text()).unwrap()["plugins"]["io.containerd.grpc.v1.cri"]
                    ["containerd"]["runtimes"])
        if refused:
            refused_rounds += 1
            assert "changed on the node while this task ran (another run?)" in outcomes[refused[0]][1], outcomes
            kept = "gpu-b" if refused[0] == 0 else "nvidia"
            assert kept in names and ({"nvidia", "gpu-b"} - {kept}).isdisjoint(names)
            again = _start_edit(root, (mine, theirs)[refused[0]])
            assert again.wait(timeout=300) == 0, again.communicate()
            names = set(tomlkit.parse(config.read_text()).unwrap()["plugins"]["io.containerd.grpc.v1.cri"]
                        ["containerd"]["runtimes"])
        assert {"nvidia", "gpu-b", "runc"} <= names, (round_, names)
        assert not [p.name for p in config.parent.iterdir() if ".gpn-tmp." in p.name]
    print("rounds with a refused run: %d of 6" % refused_rounds)


@needs_containerd
def test_docker_containerd_io_config_gets_cri_only_when_asked(tmp_path, workdir):
    """Docker's containerd.io ships disabled_plugins = ["cri"]: registered runtimes there are
    inert. Reported without enable_cri (and real containerd shows no CRI); with it, real
    containerd serves CRI with the runtimes; absent gives the package's bytes back."""
    config, original, _sock = node_with(tmp_path, "containerd-io-package.toml", workdir, isolate=False)
    args = {"host_root": str(tmp_path), "enable_cdi": True}

    def cri_of_config():
        text, sock = cri.isolate(config.read_text(), workdir, version=1)
        isolated = workdir / "isolated.toml"
        isolated.write_text(text)
        with cri.Containerd(isolated, sock, workdir / "containerd.log"):
            try:
                return sorted(runtimes_seen(cri.status(sock, timeout=10)))
            except grpc.RpcError as exc:  # containerd answers, but has no CRI service
                assert exc.code() == grpc.StatusCode.UNIMPLEMENTED, exc
                return None

    plain = run_module("containerd_runtime", args)
    assert plain["_rc"] == 0 and plain["changed"] and plain["cri_disabled_by"] == ["cri"], plain
    # Ansible prints warnings on stderr, wrapped at its terminal width.
    assert "disabled_pluginslists'cri',socontainerdloadsnoCRIplugin" in "".join(plain["_stderr"].split()), plain
    assert cri_of_config() is None

    enabled = [run_module("containerd_runtime", dict(args, enable_cri=True), check=check) for check in (True, False, False)]
    assert [r["changed"] for r in enabled] == [True, True, False], enabled
    assert [r["cri_disabled_by"] for r in enabled] == [[], [], []]
    assert {"path": CONFIG, "action": "updated", "setting": "disabled_plugins",
            "reason": "['cri'] -> [] (enable_cri)"} in enabled[1]["changes"]
    assert cri_of_config() == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]

    removed = run_module("containerd_runtime", dict(args, state="absent"))
    assert removed["changed"] and config.read_text() == original
