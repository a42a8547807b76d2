"""README command 1: provision a simulated GKE-on-COS GPU node with playbooks/site.yml and report.

Builds the node (a directory used as gpu_node_host_root) and a toolkit artifact tree of stand-in
binaries, runs site.yml twice against it on localhost, starts Debian's real containerd on the
node's resulting config.toml, asks it over CRI which runtimes it has, and lists the CDI devices
the written specs offer.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "support")]

import cri  # noqa: E402
import fakenode  # noqa: E402
import toolkit_artifacts  # noqa: E402
import yaml  # noqa: E402
from ansible_runner import recap, run_playbook  # noqa: E402


def snapshot(root):
    files = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            if path.is_symlink():
                files[path] = "-> " + os.readlink(path)
            elif path.is_file():
                files[path] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def provision(node, artifacts):
    proc = run_playbook(
        REPO / "playbooks" / "site.yml",
        extra_vars={"gpu_node_hosts": "localhost", "gpu_node_host_root": str(node.root),
                    "gpu_node_toolkit_src": str(artifacts), "gpu_node_containerd_restart_mode": "none"},
    )
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout[-6000:] + proc.stderr[-3000:])
        raise SystemExit("site.yml failed")
    return dict(recap(proc.stdout)["localhost"], steps_skipped=STEPS_SKIPPED in proc.stdout)


# The include of the steps, skipped: the node was as the last run with the same inputs left it.
STEPS_SKIPPED = "TASK [gpu_node.container_toolkit.gpu_node : Provision the node, or remove what provisioning added " \
                "(skipped when the node is as the last run left it)] ***\nskipping: [localhost]"


def main():
    work = REPO / ".cache" / "demo"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    node = fakenode.build_node(work / "cos-node", "cos", gpus=2)
    os.unlink(node.node_path("/dev/nvidiactl"))  # as after a COS reboot before the driver installer ran
    artifacts = toolkit_artifacts.build_tree(work / "toolkit-artifacts")
    print("simulated COS node: %s (driver %s, %d GPUs, /dev/nvidiactl missing)" % (node.root, node.driver_version, len(node.gpus)))

    before = snapshot(node.root)
    first = provision(node, artifacts)
    after = snapshot(node.root)
    added = sorted(p for p in after if p not in before)
    changed = sorted(p for p in after if p in before and before[p] != after[p])
    print("\nfirst run of playbooks/site.yml: ok=%d changed=%d failed=%d" % (first["ok"], first["changed"], first["failed"]))
    print("files changed on the node:")
    for path in changed:
        print("  M /%s" % path.relative_to(node.root))
    records = [p for p in added if p.name == "provisioned.json" and p.parent.name == ".gpu-node"]
    shown = [p for p in added if ".gpu-node" not in str(p)]
    for path in shown:
        print("  A /%s" % path.relative_to(node.root))
    print("  A (+%d copies kept for reboots under .../toolkit/.gpu-node)" % (len(added) - len(shown) - len(records)))
    for path in records:
        print("  A /%s (the run's record: a run with the same inputs that finds the node so skips the steps)"
              % path.relative_to(node.root))

    second = provision(node, artifacts)
    print("\nsecond run of playbooks/site.yml: ok=%d changed=%d failed=%d%s" % (
        second["ok"], second["changed"], second["failed"],
        " (the node is as the first run left it: the steps were skipped)" if second["steps_skipped"] else ""))

    config = node.node_path("/etc/containerd/config.toml")
    with tempfile.TemporaryDirectory(prefix="demo-containerd-") as tmp:
        text, sock = cri.isolate(config.read_text(), tmp)
        isolated = Path(tmp) / "config.toml"
        isolated.write_text(text)
        with cri.Containerd(isolated, sock, Path(tmp) / "containerd.log"):
            runtimes = cri.status(sock)["info"]["config"]["containerd"]["runtimes"]
    print("\nreal containerd (%s) started on the node's config.toml lists these runtimes over CRI:" % shutil.which("containerd"))
    for name, runtime in sorted(runtimes.items()):
        binary = (runtime.get("options") or {}).get("BinaryName", "(runc from PATH)")
        cgroup = (runtime.get("options") or {}).get("SystemdCgroup")
        print("  %-14s %s%s" % (name, binary, "  SystemdCgroup=%s" % cgroup if cgroup is not None else ""))

    print("\nCDI devices offered by the specs written on the node:")
    for spec_dir in ("/etc/cdi", "/var/run/cdi"):
        for spec_path in sorted(node.node_path(spec_dir).glob("*.yaml")) if node.node_path(spec_dir).is_dir() else []:
            spec = yaml.safe_load(spec_path.read_text())
            nodes = [d["path"] for d in spec["devices"][0]["containerEdits"].get("deviceNodes", [])]
            for device in spec["devices"]:
                print("  %s=%s  (%s/%s; %d mounts, %d device nodes e.g. %s)" % (
                    spec["kind"], device["name"], spec_dir, spec_path.name, len(spec["containerEdits"]["mounts"]),
                    len(nodes), ", ".join(nodes[:3])))
    ctl = os.stat(node.node_path("/dev/nvidiactl"))
    print("\n/dev/nvidiactl recreated as %d:%d" % (os.major(ctl.st_rdev), os.minor(ctl.st_rdev)))


if __name__ == "__main__":
    main()
