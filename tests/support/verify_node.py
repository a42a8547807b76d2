"""Prove a provisioned fake node works, with the real consumers; used by the molecule scenarios.

Each subcommand prints one JSON object for an ``assert`` task to read and exits 0 when it could
look (a check that finds a problem still exits 0: judging is the caller's job):

``cri NODE``
    start Debian's containerd on the node's ``/etc/containerd/config.toml`` (daemon paths moved
    into a temp dir) and report the CRI ``Status``: its conditions and runtime handlers.
``podman NODE --spec-dir DIR --device NAME --bind PATH``
    run a busybox container with podman given ``--device NAME``, reading the node's specs from
    ``DIR``; each ``--bind`` node path is shown at its host path. Reports the device nodes and the
    ``NVIDIA_*`` environment the container saw.
``wrappers NODE --install-dir DIR``
    run every installed toolkit command once, with the install dir at its host path and the
    ``nvidia`` module shown as loaded; reports how the stand-in binaries were called.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cdi_tools
import cri
import toolkit_artifacts


def node_path(root, path):
    return Path(root) / path.lstrip("/")


def check_cri(args):
    config = node_path(args.node, args.config)
    with tempfile.TemporaryDirectory(prefix="verify-cri-") as tmp:
        text, sock = cri.isolate(config.read_text(), tmp)
        isolated = Path(tmp) / "config.toml"
        isolated.write_text(text)
        with cri.Containerd(isolated, sock, Path(tmp) / "containerd.log"):
            status = cri.status(sock)
    runtimes = status["info"]["config"]["containerd"]["runtimes"]
    return {
        "conditions": status["conditions"],
        "default_runtime": status["info"]["config"]["containerd"].get("defaultRuntimeName"),
        "runtimes": {name: (runtime.get("options") or {}).get("BinaryName", "") for name, runtime in runtimes.items()},
    }


SHOW_DEVICES = 'for f in /dev/nvidia*; do [ -c "$f" ] && echo "device $f"; done; env | grep "^NVIDIA_" || true'


def check_podman(args):
    binds = [(None, "/home")] + [(str(node_path(args.node, p)), p) for p in args.bind]
    with tempfile.TemporaryDirectory(prefix="verify-podman-") as tmp:
        proc = cdi_tools.podman_run(node_path(args.node, args.spec_dir), args.device, SHOW_DEVICES, tmp, binds=binds)
    lines = proc.stdout.splitlines()
    return {
        "rc": proc.returncode,
        "devices": sorted(line.split()[1] for line in lines if line.startswith("device ")),
        "env": sorted(line for line in lines if line.startswith("NVIDIA_")),
        "stderr": proc.stderr[-2000:],
    }


def check_wrappers(args):
    install = args.install_dir
    commands = [n for n in toolkit_artifacts.BINARIES + ("nvidia-container-toolkit",)
                if node_path(args.node, install + "/" + n).exists()]
    with tempfile.TemporaryDirectory(prefix="verify-wrappers-") as tmp:
        record = Path(tmp) / "record"
        record.touch()
        lines = [
            "mount -t tmpfs tmpfs /home",
            "mkdir -p %s" % shlex.quote(install),
            "mount --bind %s %s" % (shlex.quote(str(node_path(args.node, install))), shlex.quote(install)),
            "mount -t tmpfs tmpfs /proc",
            "echo 'nvidia 56717312 2 nvidia_uvm, Live 0x0000000000000000 (PO)' > /proc/modules",
        ] + ["%s/%s --version" % (shlex.quote(install), name) for name in commands]
        proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-ec", "\n".join(lines)],
                              capture_output=True, text=True, check=False,
                              env={"PATH": "/usr/bin:/bin", "TOOLKIT_RECORD": str(record)})
        calls = toolkit_artifacts.read_records(record)
    return {"rc": proc.returncode, "stderr": proc.stderr[-2000:], "commands": commands, "calls": calls}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="check", required=True)
    p = sub.add_parser("cri")
    p.add_argument("node")
    p.add_argument("--config", default="/etc/containerd/config.toml")
    p.set_defaults(func=check_cri)
    p = sub.add_parser("podman")
    p.add_argument("node")
    p.add_argument("--spec-dir", required=True)
    p.add_argument("--device", action="append", required=True)
    p.add_argument("--bind", action="append", default=[])
    p.set_defaults(func=check_podman)
    p = sub.add_parser("wrappers")
    p.add_argument("node")
    p.add_argument("--install-dir", required=True)
    p.set_defaults(func=check_wrappers)
    args = parser.parse_args(argv)
    json.dump(args.func(args), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
