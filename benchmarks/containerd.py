"""containerd_runtime: the config edit in-process on a ~300-line config, and one task's wall time.

The in-process figure is the controller's work for one task (parse, edit, render, and the
idempotent re-check); goal: median <= 20 ms. The wall time is ``ansible localhost -m
gpu_node.container_toolkit.containerd_runtime`` on a temporary node, process start included.
Run: .venv/bin/python benchmarks/containerd.py [--runs N] [--wall-runs N] [--no-wall]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / ".cache" / "collections"), str(REPO / "tests" / "support")]

from ansible_runner import ansible_env  # noqa: E402

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc  # noqa: E402
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "containerd" / "containerd-1.7.34-default.toml"


def config_300_lines():
    """containerd 1.7.34's default config with a comment block on top: about 300 lines."""
    text = FIXTURE.read_text()
    pad = 300 - len(text.splitlines())
    header = "".join("# operator note %d: kept as is by the edit\n" % i for i in range(max(pad, 0)))
    return header + text


def params(state="present"):
    return {
        "state": state,
        "runtimes": cc.default_runtimes("/home/kubernetes/bin/nvidia/toolkit"),
        "runtime_type": cc.DEFAULT_RUNTIME_TYPE,
        "set_as_default": True,
        "enable_cdi": True,
        "cdi_spec_dirs": None,
        "config_version": "auto",
        "drop_in": None,
        "path": cc.DEFAULT_PATH,
    }


def timed(func, runs):
    for _warmup in range(5):
        func()
    samples = []
    for _run in range(runs):
        start = time.perf_counter()
        func()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[len(samples) // 10], samples[len(samples) * 9 // 10]


def in_process(runs):
    text = config_300_lines()
    edited = ct.edit(text, params())["text"]
    assert ct.edit(edited, params())["changes"] == []
    assert ct.edit(edited, params("absent"))["text"] == text
    print("in-process edit, %d-line config, %d runs (goal: median <= 20 ms)" % (len(text.splitlines()), runs))
    for label, func in (
        ("present (3 runtimes added)", lambda: ct.edit(text, params())),
        ("present again (no change)", lambda: ct.edit(edited, params())),
        ("absent (original bytes back)", lambda: ct.edit(edited, params("absent"))),
    ):
        median, p10, p90 = timed(func, runs)
        print("  %-30s median %6.2f ms   p10 %6.2f ms   p90 %6.2f ms" % (label, median, p10, p90))


def wall(runs):
    node = Path(tempfile.mkdtemp(prefix="ctdbench"))
    try:
        config = node / "etc" / "containerd" / "config.toml"
        config.parent.mkdir(parents=True)
        original = config_300_lines()
        print("one task through ansible (ansible localhost -m ...), %d runs each" % runs)
        for label, state, check in (("present, changes the file", "present", False),
                                    ("present, no change", "present", False),
                                    ("present, check mode", "present", True)):
            samples = []
            for _run in range(runs):
                if label.startswith("present, changes"):
                    config.write_text(original)
                cmd = ["ansible", "localhost", "-c", "local", "-i", "localhost,", "-m",
                       "gpu_node.container_toolkit.containerd_runtime",
                       "-a", json.dumps({"host_root": str(node), "state": state, "set_as_default": True})]
                if check:
                    cmd.append("--check")
                start = time.perf_counter()
                proc = subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(), check=False)
                samples.append(time.perf_counter() - start)
                if proc.returncode != 0:
                    raise SystemExit("ansible failed:\n%s\n%s" % (proc.stdout, proc.stderr))
            print("  %-30s median %5.2f s   min %5.2f s   max %5.2f s" % (
                label, statistics.median(samples), min(samples), max(samples)))
        ping = []
        for _run in range(runs):
            start = time.perf_counter()
            subprocess.run(["ansible", "localhost", "-c", "local", "-i", "localhost,", "-m", "ansible.builtin.ping"],
                           capture_output=True, env=ansible_env(), check=True)
            ping.append(time.perf_counter() - start)
        print("  %-30s median %5.2f s   (ansible's own start-up, for scale)" % ("ansible.builtin.ping", statistics.median(ping)))
    finally:
        shutil.rmtree(node, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--wall-runs", type=int, default=3)
    parser.add_argument("--no-wall", action="store_true", help="skip the ansible wall-time part")
    args = parser.parse_args()
    in_process(args.runs)
    if not args.no_wall and shutil.which("ansible", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])):
        wall(args.wall_runs)


if __name__ == "__main__":
    main()
