"""How site.yml composes the roles (issue 12): one look at the node, whose result every later step uses."""

from __future__ import annotations

import json

import toolkit_artifacts
from ansible_runner import REPO, recap, run_playbook

PLAYBOOKS = REPO / "playbooks"
TOOLKIT_CONFIG = "/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml"
REPORT_PLAYBOOK = """
- name: Provision, then report what the toolkit role registered
  hosts: localhost
  gather_facts: false
  roles: [gpu_node.container_toolkit.gpu_node]
  post_tasks:
    - name: Write the report
      ansible.builtin.copy:
        dest: "{{ report }}"
        mode: "0644"
        content: >-
          {{ {"config": toolkit_config_result, "install_changed": toolkit_install_result is changed,
              "install_changes": toolkit_install_result.changes,
              "binaries_changed": gpu_node__runtime_binaries_changed | bool} | to_json }}
"""


def _site(node, artifacts, extra_args=(), **extra):
    extra_vars = dict({"gpu_node_hosts": "localhost", "gpu_node_host_root": str(node.root),
                       "gpu_node_toolkit_src": str(artifacts), "gpu_node_containerd_restart_mode": "none"}, **extra)
    return run_playbook(PLAYBOOKS / "site.yml", extra_vars=extra_vars, extra_args=list(extra_args))


def test_driver_container_node_gets_one_driver_root_everywhere(fake_node_factory, tmp_path):
    """The toolkit's config and the CDI spec name the same driver root: the one discovery found."""
    node = fake_node_factory("driver-container")
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    proc = _site(node, artifacts)
    assert proc.returncode == 0, proc.stdout[-5000:]

    config = node.node_path(TOOLKIT_CONFIG).read_text()
    assert 'root = "/run/nvidia/driver"' in config, config
    spec = node.node_path("/var/run/cdi/management.nvidia.com-gpu.yaml").read_text()
    assert "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libcuda.so." in spec


def test_the_driver_is_looked_at_once_per_run(fake_node_factory, tmp_path):
    node = fake_node_factory("cos")
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    proc = _site(node, artifacts, extra_args=["-v"])
    assert proc.returncode == 0, proc.stdout[-5000:]
    headers = [line for line in proc.stdout.splitlines() if line.startswith("TASK [")]
    discoveries = [line for line in headers if "Look at the node (" in line or "Discover" in line]
    assert len(discoveries) == 1, discoveries
    assert len(headers) >= 10


def test_no_driver_fails_before_anything_is_changed(fake_node_factory, tmp_path):
    node = fake_node_factory("cos")
    for library in node.root.rglob("libcuda.so*"):
        library.unlink()
    before = sorted(str(p.relative_to(node.root)) for p in node.root.rglob("*"))
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    proc = _site(node, artifacts)
    assert proc.returncode != 0
    totals = recap(proc.stdout)["localhost"]
    assert totals["changed"] == 0 and totals["failed"] == 1
    assert "no NVIDIA driver found" in proc.stdout
    assert sorted(str(p.relative_to(node.root)) for p in node.root.rglob("*")) == before


def test_no_driver_with_cdi_off_still_installs_the_toolkit(fake_node_factory, tmp_path):
    node = fake_node_factory("ubuntu")
    for library in node.root.rglob("libcuda.so*"):
        library.unlink()
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    proc = _site(node, artifacts, gpu_node_cdi_enabled=False)
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert node.node_path("/usr/local/nvidia/toolkit/nvidia-container-runtime").exists()
    assert 'root = "/"' in node.node_path(TOOLKIT_CONFIG).read_text()


def test_platform_comes_from_the_discovery_result(fake_node_factory, tmp_path):
    """An os-release ID no platform knows fails up front, naming it and gpu_node_platform."""
    node = fake_node_factory("ubuntu")
    node.node_path("/etc/os-release").write_text("ID=plan9\n")
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    proc = _site(node, artifacts)
    assert proc.returncode != 0
    assert "os-release ID 'plan9'" in proc.stdout and "gpu_node_platform" in proc.stdout
    assert recap(proc.stdout)["localhost"]["changed"] == 0

    proc = _site(node, artifacts, gpu_node_platform="ubuntu")
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert recap(proc.stdout)["localhost"]["changed"] > 0


def _modules_run(node, artifacts, tmp_path, label, transfers=None, extra=None):
    """site.yml once, with the benchmark's counter: (recap, [(task name, module)] run on the node);
    the names of the files put on the node are appended to ``transfers``."""
    counts = tmp_path / ("counts-%s.json" % label)
    proc = run_playbook(PLAYBOOKS / "site.yml", extra_vars={
        "gpu_node_hosts": "localhost", "gpu_node_host_root": str(node.root), "gpu_node_toolkit_src": str(artifacts),
        "gpu_node_containerd_restart_mode": "none", **(extra or {})}, env={
        "ANSIBLE_CALLBACK_PLUGINS": str(REPO / "benchmarks" / "callback_plugins"),
        "ANSIBLE_CALLBACKS_ENABLED": "fleet_counter", "GPU_NODE_FLEET_COUNTS": str(counts)})
    assert proc.returncode == 0, proc.stdout[-5000:]
    runs = [json.loads(line) for line in (tmp_path / ("counts-%s.json.modules" % label)).read_text().splitlines()]
    if transfers is not None:
        transfers.extend(r["transfer"] for r in runs if "transfer" in r)
    return recap(proc.stdout)["localhost"], [(r["name"].split(" : ")[-1], r["module"].split(".")[-1])
                                             for r in runs if "transfer" not in r]


def test_a_run_that_changes_nothing_reads_the_node_once(fake_node_factory, tmp_path):
    """The look reads ahead what toolkit_install, toolkit_config, cdi_spec, containerd_runtime and
    persist_files read (the install's files with their checksums, the driver facts the CDI spec is
    built from); with nothing to change they make no round trip: one module run per host."""
    node = fake_node_factory("cos")
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    sent = []
    first, _runs = _modules_run(node, artifacts, tmp_path, "converge", sent)
    assert first["changed"] > 0 and sent == ["toolkit_install payload"]
    sent = []
    totals, runs = _modules_run(node, artifacts, tmp_path, "no-op", sent)
    assert totals["changed"] == 0
    assert [module for _task, module in runs] == ["node_info"], runs
    assert sent == []


def test_the_steps_are_skipped_only_while_the_record_matches(fake_node_factory, tmp_path):
    """A converge records the node; a run with the same inputs that finds it so skips the steps; a
    changed setting or source, or a record-less run (gpu_node_skip_unchanged false), runs them all."""
    node = fake_node_factory("cos")
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    record = node.node_path("/home/kubernetes/bin/nvidia/toolkit/.gpu-node/provisioned.json")
    _totals, runs = _modules_run(node, artifacts, tmp_path, "converge")
    assert runs[-1][1] == "node_record" and json.loads(record.read_text())["format"] == 1
    totals, runs = _modules_run(node, artifacts, tmp_path, "no-op")
    assert totals["changed"] == 0 and [module for _task, module in runs] == ["node_info"]
    # Another setting: every step runs, the default runtime changes, and the node is recorded again.
    totals, runs = _modules_run(node, artifacts, tmp_path, "setting", extra={"gpu_node_set_as_default": True})
    modules = [module for _task, module in runs]
    assert totals["changed"] >= 1 and "node_file_write" in modules and modules[-1] == "node_record", runs
    # A source whose contents changed (same path): the install runs and puts the new file in.
    binary = artifacts / "usr" / "bin" / "nvidia-ctk"
    binary.write_bytes(binary.read_bytes() + b"\n# rebuilt\n")
    totals, runs = _modules_run(node, artifacts, tmp_path, "source", extra={"gpu_node_set_as_default": True})
    assert totals["changed"] >= 1 and "toolkit_install" in [module for _task, module in runs], runs
    assert node.node_path("/home/kubernetes/bin/nvidia/toolkit/nvidia-ctk.real").read_bytes().endswith(b"# rebuilt\n")
    # Without the skip, each step finds out for itself, and nothing is recorded.
    before = record.read_bytes()
    totals, runs = _modules_run(node, artifacts, tmp_path, "full",
                                extra={"gpu_node_set_as_default": True, "gpu_node_skip_unchanged": False})
    assert totals["changed"] == 0 and [module for _task, module in runs] == ["node_info"], runs
    assert totals["skipped"] > 5 and record.read_bytes() == before


def test_a_binary_changed_behind_the_manifest_is_put_back(fake_node_factory, tmp_path):
    """The manifest still lists the right checksums, the file on the node does not match them:
    the look shows it, the node checks, and only then is the payload sent."""
    node = fake_node_factory("cos")
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    _modules_run(node, artifacts, tmp_path, "converge")
    binary = node.node_path("/home/kubernetes/bin/nvidia/toolkit/nvidia-ctk.real")
    good = binary.read_bytes()
    binary.write_bytes(b"#!/bin/sh\necho replaced\n")
    sent = []
    totals, runs = _modules_run(node, artifacts, tmp_path, "drift", sent)
    # Changed: the install only (restart_mode none: containerd is told, not restarted).
    assert totals["changed"] == 1 and binary.read_bytes() == good
    assert [module for _task, module in runs].count("toolkit_install") == 2 and sent == ["toolkit_install payload"], runs


def test_drift_after_the_look_is_still_repaired(fake_node_factory, tmp_path):
    """Reading ahead is not skipping: an edited kept copy, a removed toolkit config and containerd's
    config given back as GKE wrote it are each seen in the look's reads and put right."""
    node = fake_node_factory("cos")
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    original = node.node_path("/etc/containerd/config.toml").read_bytes()
    _modules_run(node, artifacts, tmp_path, "converge")
    kept = node.node_path("/home/kubernetes/bin/nvidia/toolkit/.gpu-node/containerd-provisioned.toml")
    toolkit_config = node.node_path("/home/kubernetes/bin/nvidia/toolkit/.config/nvidia-container-runtime/config.toml")
    containerd = node.node_path("/etc/containerd/config.toml")
    provisioned, config_bytes = containerd.read_bytes(), toolkit_config.read_bytes()
    assert kept.read_bytes() == provisioned  # written after containerd's edit, from the node, not the look
    kept.write_bytes(b"edited by hand\n")
    toolkit_config.unlink()
    containerd.write_bytes(original)
    totals, runs = _modules_run(node, artifacts, tmp_path, "drift")
    assert totals["changed"] >= 3
    assert containerd.read_bytes() == provisioned
    # The same settings; its first line records the directories this write created, none this time.
    assert toolkit_config.read_text().splitlines()[1:] == config_bytes.decode().splitlines()[1:]
    assert kept.read_bytes() == provisioned
    # The toolkit's config in the install's run (the binaries are as listed: no payload), containerd's
    # in its own task, the kept copy by persist_files; the CDI spec is in place.
    # Then the record of the node as this run left it.
    assert sorted(module for _task, module in runs) == [
        "node_file_write", "node_info", "node_record", "persist_files", "toolkit_install"], runs


def test_the_toolkit_config_is_written_in_the_install_run(fake_node_factory, tmp_path):
    """With toolkit_src the config.toml costs no module run of its own; toolkit_config_result is
    still the config write's result, and a config change alone asks containerd for no restart."""
    node = fake_node_factory("cos")
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    runs = _modules_run(node, artifacts, tmp_path, "converge")[1]
    modules = [module for _task, module in runs]
    assert modules.count("toolkit_install") == 1 and modules.count("node_file_write") == 1, runs
    config = node.node_path("/home/kubernetes/bin/nvidia/toolkit/.config/nvidia-container-runtime/config.toml")
    assert 'root = "/home/kubernetes/bin/nvidia"' in config.read_text()

    # Only the config differs: written back, reported as toolkit_config's result, no binaries changed.
    config.write_text(config.read_text().replace('root = "/home/kubernetes/bin/nvidia"', 'root = "/"'))
    report = tmp_path / "report.json"
    playbook = tmp_path / "report.yml"
    playbook.write_text(REPORT_PLAYBOOK)
    proc = run_playbook(playbook, extra_vars={
        "gpu_node_host_root": str(node.root), "gpu_node_toolkit_src": str(artifacts),
        "gpu_node_containerd_restart_mode": "none", "report": str(report)})
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert 'root = "/home/kubernetes/bin/nvidia"' in config.read_text()
    found = json.loads(report.read_text())
    assert found["config"]["changed"] and found["config"]["path"].endswith("/config.toml"), found
    assert found["config"]["changes"] == [{"path": found["config"]["path"], "action": "updated",
                                           "setting": "nvidia-container-cli.root",
                                           "reason": "'/' -> '/home/kubernetes/bin/nvidia'"}], found
    assert found["install_changed"] and found["install_changes"] == [] and not found["binaries_changed"], found
    # The install's task (for its config) and the report's copy; nothing else.
    assert recap(proc.stdout)["localhost"]["changed"] == 2, proc.stdout[-5000:]
