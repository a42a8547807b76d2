"""site.yml, verify.yml and uninstall.yml on simulated k3s and RKE2 nodes.

Each node has the containerd config its distribution generated (a real one: tests/fixtures/containerd/kube)
and an enabled unit. No k3s runs here: the restart command is the stand-in (tests/support/fake_k3s.py),
which writes the config again as their start does (their template, or ours on their base; the nvidia
runtimes for what it finds in /usr/local/nvidia/toolkit or /usr/bin; default-runtime from
config.yaml.d), and the health check answers yes, as the restart tests stand in for services.
"""

from __future__ import annotations

import json
import sys

import toolkit_artifacts
from ansible_runner import REPO, recap, run_playbook
from fakenode import KUBE_CONFIGS, add_kube

PLAYBOOKS = REPO / "playbooks"
TOOLKIT = "/usr/local/nvidia/toolkit"
STAND_IN = REPO / "tests" / "support" / "fake_k3s.py"
NODES = {"k3s": ("k3s", "01-k3s-v2.toml"), "k3s-extra": ("k3s-agent", "02-k3s-v2-registry-extraruntimes.toml"),
         "k3s-v1": ("k3s", "03-k3s-v1-old.toml"), "k3s-v3": ("k3s", "04-k3s-v3-extraruntimes.toml"),
         "rke2": ("rke2-server", "05-rke2-v2.toml")}


class KubeNode:
    def __init__(self, factory, tmp_path, which):
        self.name = which
        self.service, self.base = NODES[which]
        self.node = factory("ubuntu")
        self.config = add_kube(self.node, self.service, self.base)
        self.distribution = "rke2" if self.service.startswith("rke2") else "k3s"
        self.original = self.config.read_bytes()
        self.drop_in = self.node.node_path("/etc/rancher/%s/config.yaml.d/99-gpu-node-container-toolkit.yaml"
                                           % self.distribution)
        tmp_path = tmp_path / which
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.restarts = tmp_path / "restarts"
        restart = tmp_path / "restart.sh"
        restart.write_text("#!/bin/sh\nset -e\necho %s >> %s\nexec %s %s %s %s %s\n" % (
            self.service, self.restarts, sys.executable, STAND_IN, self.node.root, self.distribution,
            KUBE_CONFIGS / self.base))
        restart.chmod(0o755)
        self.tmp_path = tmp_path
        self.variables = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "gpu_node_host_root": str(self.node.root),
            "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
            "gpu_node_containerd_restart_mode": "command",
            "gpu_node_containerd_restart_command": str(restart),
            "containerd_kube_health_command": "true %s",
            "containerd_restart_timeout": 4,
        }

    def play(self, name, ok=True, **kwargs):
        proc, totals = play_on([self], name, ok=ok, **kwargs)
        return proc, totals[self.name]

    def restart_count(self):
        return len(self.restarts.read_text().splitlines()) if self.restarts.exists() else 0


def play_on(kubes, name, ok=True, **kwargs):
    """``name`` on the nodes ``kubes`` at once (one host each); the output and ``{host: totals}``."""
    extra = kwargs.pop("vars", {})
    inventory = kubes[0].tmp_path.parent / "inventory.json"
    inventory.write_text(json.dumps({"gpu_nodes": {"hosts": {
        kube.name: dict(kube.variables, **extra) for kube in kubes}}}))
    proc = run_playbook(PLAYBOOKS / name, inventory=str(inventory), **kwargs)
    if ok:
        assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return proc, recap(proc.stdout)


def test_site_verify_uninstall_on_each_real_generated_config(fake_node_factory, tmp_path):
    """The five real generated configs, one host each, through the same plays."""
    kubes = [KubeNode(fake_node_factory, tmp_path, which) for which in sorted(NODES)]
    default = {"gpu_node_set_as_default": True}

    # Check mode with --diff: says what it would do, writes nothing, restarts nothing.
    proc, totals = play_on(kubes, "site.yml", check=True, diff=True, vars=default)
    assert proc.stdout.count("default-runtime: nvidia") >= len(kubes)
    for kube in kubes:
        assert totals[kube.name]["changed"] > 0, kube.name
        assert not kube.drop_in.exists() and kube.restart_count() == 0, kube.name
        assert kube.config.read_bytes() == kube.original, kube.name

    _proc, first = play_on(kubes, "site.yml", vars=default)
    for kube in kubes:
        assert first[kube.name]["changed"] > 0, kube.name
        assert kube.drop_in.read_text().endswith("default-runtime: nvidia\n"), kube.name
        # The toolkit is where they look: no template, their config regenerated with the runtime.
        containerd_dir = kube.config.parent
        assert not (containerd_dir / "config.toml.tmpl").exists(), kube.name
        assert not (containerd_dir / "config-v3.toml.tmpl").exists(), kube.name
        assert kube.restart_count() == 1, kube.name
        text = kube.config.read_text()
        assert 'default_runtime_name = "nvidia"' in text, kube.name
        assert "nvidia-container-runtime\"" in text, kube.name
        # Nothing else on the node took our runtimes: no /etc/containerd was made.
        assert not kube.node.node_path("/etc/containerd").exists(), kube.name

    _proc, second = play_on(kubes, "site.yml", vars=default)
    for kube in kubes:
        assert second[kube.name]["changed"] == 0 and kube.restart_count() == 1, kube.name

    verify, _totals = play_on(kubes, "verify.yml", vars=default)
    assert "would change" not in verify.stdout, verify.stdout[-4000:]
    for kube in kubes:
        assert kube.service in verify.stdout, kube.name

    _proc, removed = play_on(kubes, "uninstall.yml")
    for kube in kubes:
        assert removed[kube.name]["changed"] > 0, kube.name
        assert not kube.drop_in.exists(), kube.name
        assert not kube.node.node_path("/etc/rancher").exists(), kube.name
        assert kube.config.read_bytes() == kube.original, kube.name


def test_default_runtime_off_again_removes_the_drop_in_and_restarts(fake_node_factory, tmp_path):
    kube = KubeNode(fake_node_factory, tmp_path, "rke2")
    kube.play("site.yml", vars={"gpu_node_set_as_default": True})
    assert kube.drop_in.exists()
    count = kube.restart_count()
    _proc, totals = kube.play("site.yml")
    assert totals["changed"] > 0 and not kube.drop_in.exists()
    assert kube.restart_count() == count + 1
    assert 'default_runtime_name = "nvidia"' not in kube.config.read_text()


def test_a_regenerated_config_without_the_runtime_is_rolled_back(fake_node_factory, tmp_path):
    """A k3s that ignores the drop-in (an old release without default-runtime): the check after the
    restart finds no default, the drop-in goes again, and the service is restarted on the old files."""
    kube = KubeNode(fake_node_factory, tmp_path, "k3s")
    ignoring = tmp_path / "old-k3s.sh"
    ignoring.write_text("#!/bin/sh\nset -e\necho k3s >> %s\nmv %s %s.off 2>/dev/null || true\n%s %s %s k3s %s\n"
                        "mv %s.off %s 2>/dev/null || true\n" % (
                            kube.restarts, kube.drop_in, kube.drop_in, sys.executable, STAND_IN, kube.node.root,
                            KUBE_CONFIGS / kube.base, kube.drop_in, kube.drop_in))
    ignoring.chmod(0o755)
    settings = {"gpu_node_set_as_default": True, "gpu_node_containerd_restart_command": str(ignoring)}
    proc, totals = kube.play("site.yml", ok=False, vars=settings)
    assert totals["failed"] == 1
    assert "default_runtime_name is None, not 'nvidia'" in proc.stdout
    assert "removed /etc/rancher/k3s/config.yaml.d/99-gpu-node-container-toolkit.yaml" in proc.stdout
    assert not kube.drop_in.exists()
    assert kube.restart_count() == 2
