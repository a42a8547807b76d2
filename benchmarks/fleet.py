"""Fleet benchmark: playbooks/site.yml against N simulated COS nodes, next to the floor Ansible itself sets.

In one run and on one inventory, for each node count and strategy: plays of 1, 7 and 10
``ansible.builtin.ping`` tasks (the floor), then ``site.yml`` converge and ``site.yml`` no-op re-run,
each as wall seconds, the ratio to the 1-ping play, controller CPU seconds per host (user + system
of ansible-playbook and its children, ``resource.getrusage``), tasks and module executions per host
(counted by benchmarks/callback_plugins/fleet_counter.py, which says how), tasks changed and
containerd restarts (a restart command that appends to a file on the node). ``--strategy`` takes
Ansible's ``linear`` and Mitogen for Ansible's ``mitogen_linear`` / ``mitogen_free`` (the
``mitogen`` package; its strategy plugins are found from it).

Nodes are fake COS node directories (tests/support/fakenode.py) used as gpu_node_host_root, reached
over the local connection, or with ``--connection ssh`` over OpenSSH: one sshd on 127.0.0.2,
127.0.0.3, ... (tests/support/sshd.py; needs Debian's openssh-server), one address per node, with
ControlPersist (sockets in a short temp dir) and pipelining on unless ``--pipelining off``.

Goals (issue 32), printed next to the figures: no-op at most 2x and converge at most 3.5x the 1-ping
play of the same run, the no-op with changed=0 and no restart; under a Mitogen strategy, converge
and no-op each at most half their ``linear`` time (when ``linear`` is measured in the same run).

Run as root: .venv/bin/python benchmarks/fleet.py [--nodes 10 50 200] [--forks 25]
[--connection local|ssh] [--pipelining on|off] [--strategy linear mitogen_linear] [--breakdown N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "support")]

import fakenode  # noqa: E402
import sshd  # noqa: E402
import toolkit_artifacts  # noqa: E402
from ansible_runner import recap, run_playbook  # noqa: E402

CALLBACKS = REPO / "benchmarks" / "callback_plugins"
PINGS = (1, 7, 10)
STRATEGIES = ("linear", "mitogen_linear", "mitogen_free")


def group_vars(artifacts, work):
    return {
        "gpu_node_toolkit_src": str(artifacts),
        "gpu_node_containerd_restart_mode": "command",
        "gpu_node_containerd_restart_command": "echo restart >> %s/restarts-{{ inventory_hostname }}" % work,
        "containerd_health_command": "true %s",
    }


def write_inventory(path, nodes, variables, server=None):
    roots = [node.root for node in nodes]
    if server is not None:
        return server.write_inventory(path, roots, group_vars=variables)
    hosts = {"node%03d" % index: {"ansible_connection": "local", "gpu_node_host_root": str(root)}
             for index, root in enumerate(roots)}
    path.write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": hosts, "vars": variables}}}},
                                   sort_keys=False))
    return path


def ping_playbook(path, count):
    path.write_text(yaml.safe_dump([{
        "name": "Floor: %d ping tasks" % count, "hosts": "gpu_nodes", "gather_facts": False,
        "tasks": [{"name": "Ping %d" % (i + 1), "ansible.builtin.ping": {}} for i in range(count)],
    }], sort_keys=False))
    return path


def restarts(work, hosts):
    total = 0
    for host in hosts:
        log = work / ("restarts-" + host)
        total += len(log.read_text().splitlines()) if log.exists() else 0
    return total


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def play(label, playbook, inventory, forks, env, work, hosts):
    counts_file = work / ("counts-%s.json" % label.replace(" ", "-"))
    run_env = dict(env, ANSIBLE_CALLBACK_PLUGINS=str(CALLBACKS), ANSIBLE_CALLBACKS_ENABLED="fleet_counter",
                   GPU_NODE_FLEET_COUNTS=str(counts_file))
    before = restarts(work, hosts)
    cpu = children_cpu()
    start = time.perf_counter()
    proc = run_playbook(playbook, inventory=str(inventory), extra_args=["-f", str(forks)], env=run_env)
    elapsed = time.perf_counter() - start
    cpu = children_cpu() - cpu
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-3000:])
        raise SystemExit("%s failed on %d nodes" % (label, len(hosts)))
    totals = recap(proc.stdout)
    counts = json.loads(counts_file.read_text())
    # The nodes only: site.yml's first play (a check on the controller) runs on localhost.
    per_host = [counts["hosts"][host] for host in hosts if host in counts["hosts"]]
    modules = [c["modules"] for c in per_host]
    return {
        "run": label, "wall": elapsed, "cpu": cpu / len(hosts), "changed": sum(t["changed"] for t in totals.values()),
        "restarts": restarts(work, hosts) - before,
        "tasks": sum(c["tasks"] for c in per_host) / len(hosts),
        "modules": None if None in modules else sum(modules) / len(hosts),
        "max_modules": counts["max_modules_per_task"],
        "worst": counts["worst_task"],
        "task_walls": counts["task_walls"],
    }


def measure(count, forks, connection, pipelining, strategy, work, pings=PINGS):
    nodes = [fakenode.build_node(work / ("node%03d" % i), "cos") for i in range(count)]
    hosts = ["node%03d" % i for i in range(count)]
    artifacts = toolkit_artifacts.build_tree(work / "artifacts")
    variables = group_vars(artifacts, work)
    server = None
    env = {}
    try:
        if connection == "ssh":
            server = sshd.SshServer(count, work=work / "sshd").start()
            control = Path(tempfile.mkdtemp(prefix="cp-", dir="/tmp"))
            env = sshd.ssh_env(control, pipelining)
        env.update(strategy_env(strategy))
        inventory = write_inventory(work / "inventory.yml", nodes, variables, server)
        figures = []
        for tasks in sorted(set(pings) | {1}):
            book = ping_playbook(work / ("ping-%d.yml" % tasks), tasks)
            figures.append(play("%d-ping" % tasks, book, inventory, forks, env, work, hosts))
        site = REPO / "playbooks" / "site.yml"
        figures.append(play("converge", site, inventory, forks, env, work, hosts))
        figures.append(play("no-op", site, inventory, forks, env, work, hosts))
        return figures
    finally:
        if server is not None:
            server.close_masters(control)
            server.stop()
            shutil.rmtree(control, ignore_errors=True)


def strategy_env(strategy):
    if strategy == "linear":
        return {}
    import ansible_mitogen  # only for the Mitogen runs  # pylint: disable=import-outside-toplevel
    return {"ANSIBLE_STRATEGY_PLUGINS": str(Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"),
            "ANSIBLE_STRATEGY": strategy}


def goals(figures):
    """Issue 32's goals for one strategy's figures, each as (text, met)."""
    by_run = {f["run"]: f for f in figures}
    noop, converge, floor = by_run["no-op"], by_run["converge"], by_run["1-ping"]["wall"]
    return {
        "converge": ("<= 3.5x 1-ping", converge["wall"] <= 3.5 * floor),
        "no-op": ("<= 2x 1-ping, changed=0, restarts=0", noop["wall"] <= 2 * floor and noop["changed"] == 0
                  and noop["restarts"] == 0),
    }


def mitogen_goals(linear, mitogen):
    """Mitogen's goal: converge and no-op each at most half their linear wall time."""
    plain = {f["run"]: f["wall"] for f in linear}
    return {f["run"]: ("<= 0.5x linear (%.1f s)" % plain[f["run"]], f["wall"] <= 0.5 * plain[f["run"]])
            for f in mitogen if f["run"] in ("converge", "no-op")}


ROW = "%6s  %-15s %-9s %8s %8s %10s %8s %13s %8s %9s  %s"


def print_figures(count, strategy, figures, met):
    floor = next(f["wall"] for f in figures if f["run"] == "1-ping")
    for f in figures:
        goal = met.get(f["run"])
        print(ROW % (count, strategy, f["run"], "%.1f" % f["wall"], "%.2f" % (f["wall"] / floor), "%.2f" % f["cpu"],
                     "%.1f" % f["tasks"], "-" if f["modules"] is None else "%.1f" % f["modules"],
                     f["changed"], f["restarts"], "" if goal is None else "%s: %s" % (goal[0], "met" if goal[1] else "NOT met")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--forks", type=int, default=25)
    parser.add_argument("--connection", choices=["local", "ssh"], default="local")
    parser.add_argument("--pipelining", choices=["on", "off"], default="on", help="with --connection ssh")
    parser.add_argument("--strategy", nargs="+", choices=STRATEGIES, default=["linear"],
                        help="Ansible's linear, or Mitogen for Ansible's (the mitogen package)")
    parser.add_argument("--pings", type=int, nargs="+", default=list(PINGS), metavar="N",
                        help="the floor: plays of N ping tasks (1 is always run)")
    parser.add_argument("--keep", action="store_true", help="keep the nodes and inventories (path printed)")
    parser.add_argument("--breakdown", type=int, default=0, metavar="N",
                        help="also print the N slowest tasks of converge and no-op, with their wall seconds")
    args = parser.parse_args()
    if args.connection == "ssh":
        problem = sshd.missing_prerequisite()
        if problem:
            parser.error(problem)
    how = args.connection + (" (pipelining %s, ControlPersist)" % args.pipelining if args.connection == "ssh" else "")
    print("fleet benchmark: connection %s, forks %d, %d CPUs" % (how, args.forks, os.cpu_count()))
    print(ROW % ("nodes", "strategy", "run", "wall (s)", "x 1-ping", "CPU s/host", "tasks/h", "modules/host",
                 "changed", "restarts", "goal"))
    for count in args.nodes:
        by_strategy = {}
        for strategy in args.strategy:
            work = Path(tempfile.mkdtemp(prefix="fleet-", dir="/tmp"))
            try:
                figures = by_strategy[strategy] = measure(count, args.forks, args.connection,
                                                          args.pipelining == "on", strategy, work, args.pings)
                met = goals(figures)
                if strategy != "linear" and "linear" in by_strategy:
                    met = {run: (met[run][0] + "; " + goal[0], met[run][1] and goal[1])
                           for run, goal in mitogen_goals(by_strategy["linear"], figures).items()}
                print_figures(count, strategy, figures, met)
                for f in figures:
                    if args.breakdown and f["run"] in ("converge", "no-op"):
                        slowest = sorted(f["task_walls"], key=lambda task: -task["wall"])[:args.breakdown]
                        print("%6s  %s, slowest tasks: %s" % (count, f["run"], "; ".join(
                            "%s %.1f s" % (task["name"], task["wall"]) for task in slowest)))
            finally:
                if args.keep:
                    print("kept %s" % work)
                else:
                    shutil.rmtree(work, ignore_errors=True)
    print("CPU s/host: user+system seconds of ansible-playbook and every process it started, per node; over the "
          "local connection that includes the modules (they run on this machine), over SSH it does not")


if __name__ == "__main__":
    main()
