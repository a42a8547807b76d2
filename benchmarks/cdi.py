"""CDI spec generation: the pure build in-process, and one cdi_spec task through ``ansible``.

On a fake COS node with 8 GPUs and 120 driver libraries:
- spec build (facts -> spec dict) in-process, median of many runs; goal <= 5 ms (under half of
  the upstream ``nvidia-ctk cdi generate`` CLI's 11 ms for its whole process);
- build + YAML rendering, and discovery + build + rendering (what the module does), for scale;
- the wall time of one ``ansible localhost -m gpu_node.container_toolkit.cdi_spec`` task.
Run as root (fake device nodes are made with mknod): .venv/bin/python benchmarks/cdi.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / ".cache" / "collections"), str(REPO / "tests" / "support")]

import fakenode  # noqa: E402
from ansible_runner import ansible_env  # noqa: E402

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi, discovery  # noqa: E402

HOOK = "/home/kubernetes/bin/nvidia/toolkit/nvidia-cdi-hook"


def timed(func, runs, warmup=20):
    for _warmup in range(warmup):
        func()
    samples = []
    for _run in range(runs):
        start = time.perf_counter()
        func()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[len(samples) // 10], samples[len(samples) * 9 // 10]


def line(label, figures, goal=""):
    print("  %-34s median %7.3f ms   p10 %7.3f ms   p90 %7.3f ms%s" % ((label,) + figures + (goal,)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--task-runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        node = fakenode.build_node(Path(tmp) / "node", "cos", gpus=8,
                                   extra_libraries=120 - len(fakenode.DRIVER_LIBRARIES))
        root = str(node.root)
        facts = discovery.discover_node(root)
        assert len(facts["libraries"]) == 120 and len(facts["gpus"]) == 8

        def build_gpu():
            return cdi.build_spec(facts, mode="gpu", hook_path=HOOK)

        def build_management():
            return cdi.build_spec(facts, mode="management", hook_path=HOOK)

        def build_render():
            return cdi.render(build_gpu(), "yaml", facts)

        def whole():
            return cdi.render(cdi.build_spec(discovery.discover_node(root), mode="gpu", hook_path=HOOK), "yaml", facts)

        spec = build_gpu()
        print("cdi: COS node, 8 GPUs, 120 libraries, %d runs; gpu spec: %d devices, %d mounts, %d bytes of YAML" % (
            args.runs, len(spec["devices"]), len(spec["containerEdits"]["mounts"]), len(build_render())))
        line("build, mode gpu", timed(build_gpu, args.runs), "   (goal: median <= 5 ms)")
        line("build, mode management", timed(build_management, args.runs), "   (goal: median <= 5 ms)")
        line("build + render YAML, mode gpu", timed(build_render, args.runs))
        line("discover + build + render", timed(whole, max(50, args.runs // 3), warmup=5))

        cmd = ["ansible", "localhost", "-c", "local", "-i", "localhost,", "-m", "gpu_node.container_toolkit.cdi_spec",
               "-a", json.dumps({"host_root": root, "mode": "gpu", "hook_path": HOOK})]
        walls = []
        for _task in range(args.task_runs):
            start = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(), cwd=str(REPO), check=False)
            walls.append(time.perf_counter() - start)
            assert proc.returncode == 0, proc.stdout + proc.stderr
        print("  one cdi_spec task via `ansible localhost -m`: median %.2f s of %d (min %.2f s, max %.2f s)" % (
            statistics.median(walls), len(walls), min(walls), max(walls)))


if __name__ == "__main__":
    main()
