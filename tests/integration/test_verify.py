"""playbooks/verify.yml over a two-node fleet: the fleet table, the exit code, report-only mode.

Both nodes are provisioned by site.yml with ``gpu_node_set_as_default: true`` (verify must give
the modules exactly the arguments provisioning gave them, issue 12); then verify runs on the
clean fleet, once more after one node lost its runtimes and its CDI spec, and once more on that
fleet in report-only mode. Every run is made once (module-scoped fixture) and the tests read its
output. The node names differ in length, so that the columns have something to align.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
import toolkit_artifacts
from ansible_runner import REPO, recap, run_playbook, verify_output
from node_tree import differences, listing

PLAYBOOKS = REPO / "playbooks"
CONFIG = "/etc/containerd/config.toml"
SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"
CLEAN, BROKEN = "gpu-cos-a", "gpu-ubuntu-node-with-a-long-name"
COLUMNS = ["node", "platform", "driver", "toolkit", "runtimes", "CDI specs", "device nodes", "kept for boot",
           "problems"]


def table_lines(stdout):
    """The lines of the fleet table: the header and a node a line."""
    return verify_output(stdout)[0]


def cells(lines):
    """``{node: {column: cell}}``, cut at the header's column positions, after checking that
    every line has its cells exactly there: aligned, two spaces at least between columns."""
    header = lines[0]
    positions = [header.index(name) for name in COLUMNS]
    assert header.startswith("node") and positions == sorted(positions)
    rows = {}
    for line in lines[1:]:
        row = {}
        for index, name in enumerate(COLUMNS):
            start = positions[index]
            end = positions[index + 1] if index + 1 < len(COLUMNS) else len(line)
            cell = line[start:end]
            assert cell[:1] not in ("", " "), "column %r does not start at %d in %r" % (name, start, line)
            assert index == 0 or line[start - 2:start] == "  ", "column %r not separated in %r" % (name, line)
            if index + 1 < len(COLUMNS):
                assert cell.endswith("  ") or len(cell) == 0, (name, line)
            row[name] = cell.strip()
        rows[row["node"]] = row
    return rows


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("fake nodes need root: device nodes are made with mknod")
    from fakenode import build_node

    tmp_path = tmp_path_factory.mktemp("verify")
    nodes = {CLEAN: build_node(tmp_path / "clean", "cos"), BROKEN: build_node(tmp_path / "broken", "ubuntu")}
    hosts = {name: {"gpu_node_host_root": str(node.root)} for name, node in nodes.items()}
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"gpu_nodes": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
        "gpu_node_containerd_restart_mode": "none",
        "gpu_node_set_as_default": True}}}))

    def verify(*extra_args):
        return run_playbook(PLAYBOOKS / "verify.yml", inventory=str(inventory), extra_args=extra_args)

    broken = nodes[BROKEN]
    before_site = broken.node_path(CONFIG).read_bytes() if broken.node_path(CONFIG).exists() else None
    site = run_playbook(PLAYBOOKS / "site.yml", inventory=str(inventory))
    assert site.returncode == 0, site.stdout[-5000:]
    assert 'default_runtime_name = "nvidia"' in broken.node_path(CONFIG).read_text()
    runs = {"clean": verify()}

    # The broken node loses its runtimes (config.toml as it was before site.yml) and its CDI spec.
    if before_site is None:
        broken.node_path(CONFIG).write_text('version = 2\n')
    else:
        broken.node_path(CONFIG).write_bytes(before_site)
    broken.node_path(SPEC).unlink()
    trees = {name: listing(node.root) for name, node in nodes.items()}
    # A restart command that would leave a mark: check mode must run no handler's command.
    marker = tmp_path / "containerd-was-restarted"
    restart = ("-e", json.dumps({"gpu_node_containerd_restart_mode": "command",
                                 "gpu_node_containerd_restart_command": "touch %s" % marker}))
    runs["broken"] = verify(*restart)
    runs["report_only"] = verify("-e", "gpu_node_verify_report_only=true", *restart)
    return {"runs": runs, "trees": trees, "after": {name: listing(node.root) for name, node in nodes.items()},
            "marker": marker}


def test_a_node_provisioned_with_set_as_default_verifies_clean(fleet):
    proc = fleet["runs"]["clean"]
    assert proc.returncode == 0, proc.stdout[-5000:]
    rows = cells(table_lines(proc.stdout))
    assert sorted(rows) == sorted([CLEAN, BROKEN])
    for name in (CLEAN, BROKEN):
        assert {k: rows[name][k] for k in ("toolkit", "runtimes", "CDI specs", "device nodes", "problems")} == {
            "toolkit": "ok", "runtimes": "ok", "CDI specs": "ok", "device nodes": "ok", "problems": "none"}, rows[name]
        assert rows[name]["driver"] == "535.104.12"
    assert rows[CLEAN]["platform"] == "cos" and rows[BROKEN]["platform"] == "ubuntu"
    assert recap(proc.stdout)[CLEAN]["failed"] == 0


def test_a_node_with_problems_fails_the_run_and_the_table_names_them(fleet):
    proc = fleet["runs"]["broken"]
    assert proc.returncode == 2, proc.stdout[-5000:]
    totals = recap(proc.stdout)
    assert totals[BROKEN]["failed"] == 1 and totals[CLEAN]["failed"] == 0
    # Nothing changed, so the recap says so: what would change is in the table.
    assert totals[BROKEN]["changed"] == 0 and totals[CLEAN]["changed"] == 0
    table, details = verify_output(proc.stdout)
    rows = cells(table)
    assert rows[CLEAN]["problems"] == "none"
    row = rows[BROKEN]
    assert (row["runtimes"], row["CDI specs"], row["toolkit"], row["device nodes"]) == (
        "would change", "would change", "ok", "ok")
    # The cell stays short; each problem is in full under the table, a line each.
    assert row["problems"] == "CDI specs: would change: missing; runtimes: would change (7)", row
    assert len(details) == 2 and all(line.startswith(BROKEN + ": ") for line in details), details
    runtimes = next(line for line in details if line.startswith(BROKEN + ": runtimes: would change: "))
    assert "runtime nvidia: missing" in runtimes and "default_runtime_name" in runtimes
    assert "%s: CDI specs: would change %s: missing" % (BROKEN, SPEC) in details
    # The failure message names the node and what has a problem.
    assert ("%s: CDI specs: would change: missing; runtimes: would change (7) (each in full under the fleet table)"
            % BROKEN) in proc.stdout


def test_report_only_exits_0_with_the_same_table(fleet):
    proc = fleet["runs"]["report_only"]
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert recap(proc.stdout)[BROKEN]["failed"] == 0
    lines = table_lines(proc.stdout)
    assert lines == table_lines(fleet["runs"]["broken"].stdout)
    assert len(lines) == 3 and cells(lines)[BROKEN]["problems"] == "CDI specs: would change: missing; runtimes: would change (7)"
    assert verify_output(proc.stdout)[1] == verify_output(fleet["runs"]["broken"].stdout)[1]


def test_the_table_prints_one_aligned_line_per_node(fleet):
    lines = table_lines(fleet["runs"]["broken"].stdout)
    assert len(lines) == 3  # the header and one line per node
    header = lines[0]
    positions = [header.index(name) for name in COLUMNS]
    # The first column is as wide as the longest node name, then two spaces.
    assert positions[1] == len(BROKEN) + 2
    for line in lines[1:]:
        for position in positions[1:]:
            assert line[position - 2:position] == "  " and line[position] != " ", (position, line)
    # Not a Python list of lines, not one string with escaped newlines: each line starts with its node.
    assert [line.split()[0] for line in lines] == ["node", CLEAN, BROKEN]  # in inventory order
    assert not any("\\n" in line for line in lines)


def test_verify_changes_nothing_and_restarts_nothing(fleet):
    stdout = fleet["runs"]["broken"].stdout
    # The role's tasks report nothing as changed under verify, so no restart handler is notified.
    assert "RUNNING HANDLER" not in stdout
    assert not fleet["marker"].exists()
    for name, before in fleet["trees"].items():
        assert differences(before, fleet["after"][name]) == ([], [], []), name


def test_a_node_whose_containerd_has_no_cri_is_not_ready_until_enable_cri(fake_node_factory, tmp_path):
    """Docker's containerd.io turns CRI off: the runtimes site.yml registers are inert, so verify
    fails the node, naming the way out; with gpu_node_containerd_enable_cri the node verifies clean."""
    node = fake_node_factory("ubuntu")
    config = node.node_path(CONFIG)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text((REPO / "tests" / "fixtures" / "containerd" / "containerd-io-package.toml").read_text())
    base = {"gpu_node_hosts": "localhost", "gpu_node_host_root": str(node.root), "gpu_node_containerd_restart_mode": "none",
            "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts"))}

    def play(playbook, **extra):
        return run_playbook(PLAYBOOKS / playbook, extra_vars=dict(base, **extra))

    site = play("site.yml")
    assert site.returncode == 0, site.stdout[-5000:]
    assert "soContainerdloadsnoCRIplugin".lower() in "".join(site.stderr.split()).lower(), site.stderr[-3000:]
    inert = play("verify.yml")
    assert inert.returncode == 2, inert.stdout[-5000:]
    row = cells(table_lines(inert.stdout))["localhost"]
    assert row["runtimes"] == "failed" and row["toolkit"] == "ok", row
    assert row["problems"] == "runtimes: containerd loads no CRI plugin", row
    assert verify_output(inert.stdout)[1][0].startswith(
        "localhost: runtimes: containerd loads no CRI plugin (disabled_plugins lists cri): ")
    assert "gpu_node_containerd_enable_cri=true" in inert.stdout

    site = play("site.yml", gpu_node_containerd_enable_cri=True)
    assert site.returncode == 0, site.stdout[-5000:]
    assert "disabled_plugins = []" in config.read_text()
    ready = play("verify.yml", gpu_node_containerd_enable_cri=True)
    assert ready.returncode == 0, ready.stdout[-5000:]
    assert cells(table_lines(ready.stdout))["localhost"]["problems"] == "none"


def test_a_node_whose_check_stops_before_the_look_is_still_in_the_table(fake_node_factory, tmp_path):
    """A misspelled setting stops the role before it looks at the node: the node still gets its
    row, saying where the check stopped, and fails the run."""
    node = fake_node_factory("cos")
    stopped = run_playbook(PLAYBOOKS / "verify.yml", extra_vars={
        "gpu_node_hosts": "localhost", "gpu_node_host_root": str(node.root), "gpu_node_containerd_restart_mode": "none",
        "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")), "gpu_node_toolkti_src": "x"})
    assert stopped.returncode == 2, stopped.stdout[-5000:]
    row = cells(table_lines(stopped.stdout))["localhost"]
    assert row["platform"] == "-" and row["toolkit"] == "-", row
    assert row["problems"].startswith("stopped: Look at the node (driver, device nodes"), row
    (problem,) = verify_output(stopped.stdout)[1]
    assert problem.startswith("localhost: stopped: Look at the node (driver, device nodes, os-release, systemd) and check the "
                              "run can finish: Unknown variables for the gpu_node role: gpu_node_toolkti_src"), problem
    assert problem.endswith("add it to gpu_node_variables_allowed. Nothing was changed."), problem
