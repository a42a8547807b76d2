"""playbooks/site.yml, verify.yml and uninstall.yml on simulated COS nodes, as operators run them."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

import node_tree
import old_python
import pytest
import toolkit_artifacts
from ansible.release import __version__ as ansible_version
from ansible_runner import REPO, recap, run_playbook
from fakenode import GKE_CONTAINERD_CONFIG, upgrade_driver

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config as dc

PLAYBOOKS = REPO / "playbooks"
TOOLKIT = "/home/kubernetes/bin/nvidia/toolkit"
SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"
DOCKER_CONFIG = "/etc/docker/daemon.json"
# Stands in for the daemon.json GKE writes at boot on COS images that run Docker.
ANSIBLE_CORE = tuple(int(part) for part in ansible_version.split(".")[:2])
GKE_DAEMON_JSON = (REPO / "tests" / "fixtures" / "docker" / "docker-docs-logging.json").read_text()


@pytest.fixture
def cos_site(fake_node_factory, tmp_path):
    node = fake_node_factory("cos", missing=("nvidiactl",))
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    extra = {"gpu_node_hosts": "localhost", "gpu_node_host_root": str(node.root),
             "gpu_node_toolkit_src": str(artifacts), "gpu_node_containerd_restart_mode": "none"}
    return node, extra


def _play(name, extra, **kwargs):
    proc = run_playbook(PLAYBOOKS / name, extra_vars=extra, **kwargs)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    return proc, recap(proc.stdout)["localhost"]


def test_site_check_mode_writes_nothing(cos_site):
    node, extra = cos_site
    config = node.node_path("/etc/containerd/config.toml")
    before = config.read_bytes()
    proc, totals = _play("site.yml", extra, check=True, diff=True)
    assert totals["changed"] > 0
    assert config.read_bytes() == before
    assert not node.node_path(TOOLKIT).exists()
    assert not node.node_path(SPEC).exists()
    assert not node.node_path("/dev/nvidiactl").exists()
    assert 'runtimes.nvidia' in proc.stdout  # --diff previews the containerd edit


def test_site_provisions_cos_then_no_change_then_uninstall_restores_bytes(cos_site):
    node, extra = cos_site
    config = node.node_path("/etc/containerd/config.toml")
    original = config.read_bytes()

    _proc, first = _play("site.yml", extra)
    assert first["changed"] > 0 and first["failed"] == 0
    assert stat.S_ISREG(node.node_path(TOOLKIT + "/nvidia-container-runtime.real").stat().st_mode)
    toolkit_config = node.node_path(TOOLKIT + "/.config/nvidia-container-runtime/config.toml").read_text()
    assert 'root = "/home/kubernetes/bin/nvidia"' in toolkit_config
    assert 'ldconfig = "@/sbin/ldconfig"' in toolkit_config
    text = config.read_text()
    for runtime in ("nvidia", "nvidia-cdi", "nvidia-legacy"):
        assert 'BinaryName = "%s/nvidia-container-runtime%s"' % (
            TOOLKIT, "" if runtime == "nvidia" else "." + runtime.split("-")[1]) in text
    assert "enable_cdi = true" in text
    assert 'default_runtime_name = "runc"' in text
    assert str(node.root) not in text
    assert "management.nvidia.com/gpu" in node.node_path(SPEC).read_text()
    ctl = os.stat(node.node_path("/dev/nvidiactl"))
    assert (os.major(ctl.st_rdev), os.minor(ctl.st_rdev)) == (195, 255)

    _proc, second = _play("site.yml", extra)
    assert second["changed"] == 0

    verify_proc, _verify = _play("verify.yml", extra)
    assert "problems" in verify_proc.stdout and "would change" not in verify_proc.stdout

    _proc, removed = _play("uninstall.yml", extra)
    assert removed["changed"] > 0
    assert config.read_bytes() == original
    assert not node.node_path(SPEC).exists()
    leftovers = list(node.node_path(TOOLKIT).rglob("*")) if node.node_path(TOOLKIT).exists() else []
    assert leftovers == []


def test_verify_reports_an_unprovisioned_node(cos_site):
    _node, extra = cos_site
    proc = run_playbook(PLAYBOOKS / "verify.yml", extra_vars=extra)
    # Problems fail the run (tests/integration/test_verify.py has the table and report-only mode).
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "runtimes: would change" in proc.stdout
    assert "CDI specs: would change /var/run/cdi/management.nvidia.com-gpu.yaml: missing" in proc.stdout
    assert "device nodes: would change: created /dev/nvidiactl" in proc.stdout


def test_reboot_reapply_script_brings_a_fresh_etc_back(cos_site):
    node, extra = cos_site
    _play("site.yml", extra)
    config = node.node_path("/etc/containerd/config.toml")
    provisioned = config.read_bytes()
    script = node.node_path(TOOLKIT + "/.gpu-node/reapply.sh")
    subprocess.run(["shellcheck", str(script)], check=True)

    # A reboot: GKE writes its config again, /var/run and the driver's control node are gone.
    config.write_text(GKE_CONTAINERD_CONFIG)
    os.unlink(node.node_path(SPEC))
    os.unlink(node.node_path("/dev/nvidiactl"))
    env = dict(os.environ, HOST_ROOT=str(node.root), GPU_NODE_RESTART="none")
    proc = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert config.read_bytes() == provisioned
    assert node.node_path(SPEC).exists()
    ctl = os.stat(node.node_path("/dev/nvidiactl"))
    assert (os.major(ctl.st_rdev), os.minor(ctl.st_rdev)) == (195, 255)
    assert "restored the provisioned containerd config" in proc.stderr

    # Running the playbook after the re-apply finds nothing to do.
    proc, again = _play("site.yml", extra, diff=True)
    assert again["changed"] == 0, proc.stdout[-6000:]

    # GKE changed its config in the meantime: the script leaves it alone and says so.
    changed_config = GKE_CONTAINERD_CONFIG.replace("max_container_log_line_size = 262144", "max_container_log_line_size = 1")
    config.write_text(changed_config)
    proc = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert "run the provisioning playbook again" in proc.stderr
    assert config.read_text() == changed_config


def test_reboot_with_a_driver_upgrade_makes_the_specs_again_with_no_playbook_run(cos_site):
    """GKE installs a new driver at boot: reapply.sh has gpu-node-cdi make the specs from the running
    driver, keeps them for the next boot, and the next site.yml run finds nothing to change."""
    node, extra = cos_site
    _play("site.yml", extra)
    old = node.driver_version
    script = node.node_path(TOOLKIT + "/.gpu-node/reapply.sh")
    settings = node.node_path(TOOLKIT + "/.gpu-node/cdi-refresh.json").read_text()
    assert '"spec_mode": "management"' in settings or '"mode": "management"' in settings

    upgrade_driver(node, "550.54.15")
    node.node_path("/etc/containerd/config.toml").write_text(GKE_CONTAINERD_CONFIG)
    os.unlink(node.node_path(SPEC))
    env = dict(os.environ, HOST_ROOT=str(node.root), GPU_NODE_RESTART="none")
    proc = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "regenerated the CDI specs for driver 550.54.15 (they were made for %s)" % old in proc.stderr
    spec = node.node_path(SPEC).read_text()
    assert "550.54.15" in spec and old not in spec
    kept = node.node_path(TOOLKIT + "/.gpu-node/cdi" + SPEC).read_text()
    assert kept == spec
    assert node.node_path(TOOLKIT + "/.gpu-node/driver-version").read_text() == "550.54.15\n"

    _proc, again = _play("site.yml", extra)
    assert again["changed"] == 0

    # A driver tree gpu-node-cdi cannot read: the old spec stays and the script says what to do.
    for library in node.node_path("/home/kubernetes/bin/nvidia/lib64").glob("libcuda.so*"):
        library.unlink()
    upgrade = node.node_path("/proc/driver/nvidia/version")
    upgrade.write_text(upgrade.read_text().replace("550.54.15", "560.28.03"))
    proc = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "run the provisioning playbook again" in proc.stderr
    assert node.node_path(SPEC).read_text() == spec


@pytest.mark.parametrize("boot_config", [GKE_DAEMON_JSON, None], ids=["edited", "created"])
def test_reboot_reapply_script_brings_dockers_daemon_json_back(cos_site, tmp_path, boot_config):
    """Docker only (older GKE images): reapply.sh, the unit and the snippet are kept without containerd's
    copies; after a reboot daemon.json and docker_runtime's journal come back byte for byte and Docker
    is restarted, through GPU_NODE_DOCKER_RESTART."""
    node, extra = cos_site
    extra = dict(extra, gpu_node_container_engines="docker", gpu_node_docker_restart_mode="none")
    config = node.node_path(DOCKER_CONFIG)
    journal = node.node_path(dc.journal_path(DOCKER_CONFIG))
    if boot_config is not None:
        config.parent.mkdir(parents=True)
        config.write_text(boot_config)
    _play("site.yml", extra)
    provisioned, provisioned_journal = config.read_bytes(), journal.read_bytes()
    assert b"nvidia-container-runtime" in provisioned
    kept = node.node_path(TOOLKIT + "/.gpu-node")
    assert not (kept / "containerd-provisioned.toml").exists()
    assert {"reapply.sh", "cloud-init.yaml", "docker-provisioned.json", "docker-journal.json"} <= set(os.listdir(kept))
    script = kept / "reapply.sh"
    subprocess.run(["shellcheck", str(script)], check=True)

    calls = tmp_path / "restarts"
    recorder = tmp_path / "record-restart"
    recorder.write_text('#!/bin/sh\necho "$*" >> "%s"\n' % calls)
    recorder.chmod(0o755)
    env = dict(os.environ, HOST_ROOT=str(node.root), GPU_NODE_RESTART="%s containerd" % recorder,
               GPU_NODE_DOCKER_RESTART="%s docker" % recorder)

    def reboot(daemon_json):
        """GKE writes its daemon.json again (none where there was none); /etc's journal and /var/run are gone."""
        if daemon_json is None:
            shutil.rmtree(config.parent)
        else:
            config.write_text(daemon_json)
            journal.unlink()
        os.unlink(node.node_path(SPEC))

    reboot(boot_config)
    proc = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "restored Docker's provisioned daemon.json" in proc.stderr
    assert config.read_bytes() == provisioned
    assert journal.read_bytes() == provisioned_journal
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600
    assert node.node_path(SPEC).exists()
    assert calls.read_text() == "docker\n"  # Docker only: containerd was not touched

    # The playbook after the re-apply finds nothing to do: docker_runtime reads its journal again.
    proc, again = _play("site.yml", extra, diff=True)
    assert again["changed"] == 0, proc.stdout[-6000:]

    # A second run of the script on a node it already brought back: nothing to restore or restart.
    proc = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "Docker's daemon.json already provisioned" in proc.stderr, proc.stderr
    assert calls.read_text() == "docker\n"

    # GKE's daemon.json is not the one provisioning started from: left alone, and the script says so.
    changed_config = '{\n    "log-level": "debug"\n}\n'
    reboot(changed_config)
    proc = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert ("Docker's daemon.json differs from the one provisioning started from: run the provisioning playbook "
            "again") in proc.stderr
    assert config.read_text() == changed_config and not journal.exists()
    assert calls.read_text() == "docker\n"


def test_cloud_init_snippet_and_unit(cos_site):
    node, extra = cos_site
    _play("site.yml", extra)
    import yaml

    cloud = node.node_path(TOOLKIT + "/.gpu-node/cloud-init.yaml").read_text()
    assert cloud.startswith("#cloud-config")
    data = yaml.safe_load(cloud)
    unit = data["write_files"][0]["content"]
    assert "ExecStart=%s/.gpu-node/reapply.sh" % TOOLKIT in unit
    assert data["runcmd"][-1] == "systemctl start gpu-node-reapply.service"
    if shutil.which("systemd-analyze"):
        unit_file = node.node_path("/tmp/gpu-node-reapply.service")
        unit_file.parent.mkdir(parents=True, exist_ok=True)
        unit_file.write_text(unit)
        proc = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit_file)], capture_output=True, text=True, check=False)
        assert "gpu-node-reapply.service" not in proc.stderr or "not executable" in proc.stderr, proc.stderr


def test_a_node_python_too_old_fails_once_naming_it_before_anything_changes(cos_site):
    """RHEL 8's platform-python is 3.6: the run stops at the first module, saying which Python and what to set."""
    python36 = old_python.find(6)
    if python36 is None:
        pytest.skip("no Python 3.6 here (pyenv builds it on CI machines)")
    node, extra = cos_site
    before = node_tree.listing(node.root)
    proc = run_playbook(PLAYBOOKS / "site.yml", extra_vars=dict(extra, ansible_python_interpreter=python36))
    assert proc.returncode != 0 and recap(proc.stdout)["localhost"]["failed"] == 1, proc.stdout[-3000:]
    assert node_tree.listing(node.root) == before
    failures = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [localhost]")]
    assert len(failures) == 1, proc.stdout[-3000:]
    if ANSIBLE_CORE < (2, 17):  # it still runs modules on 3.6, and ours stop with this
        assert "needs Python 3.8 or later on the node, and this module ran with %s (Python 3.6." % python36 in failures[0]
        assert "ansible_python_interpreter" in failures[0]
    else:  # Ansible's own module wrapper no longer parses on 3.6
        assert "SyntaxError" in failures[0], failures[0]
