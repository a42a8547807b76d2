"""Fleet benchmark: playbooks/site.yml against N simulated COS nodes at once.

Each node is a fake COS node directory used as gpu_node_host_root, reached over the local
connection (so the figures measure the collection and Ansible, not SSH). containerd restarts are
counted by a restart command that appends to a file on the node. Prints a table.
Goal on a 2-core machine: 50 nodes converge <= 60 s; no-op re-run <= 30 s, changed=0, 0 restarts.

Run as root: .venv/bin/python benchmarks/fleet.py [--nodes 1 10 50] [--forks 25]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "support")]

import fakenode  # noqa: E402
import toolkit_artifacts  # noqa: E402
from ansible_runner import recap, run_playbook  # noqa: E402


def write_inventory(path, nodes, artifacts):
    lines = ["[gpu_nodes]"]
    for index, node in enumerate(nodes):
        lines.append("node%03d ansible_connection=local gpu_node_host_root=%s" % (index, node.root))
    lines += [
        "",
        "[gpu_nodes:vars]",
        "gpu_node_toolkit_src=%s" % artifacts,
        "gpu_node_containerd_restart_mode=command",
        "gpu_node_containerd_restart_command='echo restart >> {{ gpu_node_host_root }}/containerd-restarts'",
        "containerd_health_command='true %s'",
    ]
    path.write_text("\n".join(lines) + "\n")


def restarts(nodes):
    total = 0
    for node in nodes:
        log = node.root / "containerd-restarts"
        total += len(log.read_text().splitlines()) if log.exists() else 0
    return total


def run(count, forks, work):
    nodes = [fakenode.build_node(work / ("node%03d" % i), "cos") for i in range(count)]
    artifacts = toolkit_artifacts.build_tree(work / "artifacts")
    inventory = work / "inventory.ini"
    write_inventory(inventory, nodes, artifacts)
    figures = []
    for label in ("converge", "no-op"):
        before = restarts(nodes)
        start = time.perf_counter()
        proc = run_playbook(REPO / "playbooks" / "site.yml", inventory=str(inventory), extra_args=["-f", str(forks)])
        elapsed = time.perf_counter() - start
        totals = recap(proc.stdout)
        if proc.returncode != 0:
            print(proc.stdout[-3000:], proc.stderr[-3000:])
            raise SystemExit("site.yml failed on %d nodes" % count)
        figures.append((label, elapsed, sum(t["changed"] for t in totals.values()), restarts(nodes) - before))
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--forks", type=int, default=25)
    args = parser.parse_args()
    print("%6s  %-9s %9s %14s %9s" % ("nodes", "run", "wall (s)", "tasks changed", "restarts"))
    for count in args.nodes:
        work = Path(tempfile.mkdtemp(prefix="gpu-node-fleet-"))
        try:
            for label, elapsed, changed, restart_count in run(count, args.forks, work):
                print("%6d  %-9s %9.1f %14d %9d" % (count, label, elapsed, changed, restart_count))
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
