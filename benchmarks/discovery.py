"""Discovery on a fake COS node with 8 GPUs and 120 driver libraries, in-process.

Prints the median, p10 and p90 of many runs. Goal: median <= 3 ms.
Run as root (fake device nodes are made with mknod): .venv/bin/python benchmarks/discovery.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / ".cache" / "collections"), str(REPO / "tests" / "support")]

import fakenode  # noqa: E402

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import discovery  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        node = fakenode.build_node(Path(tmp) / "node", "cos", gpus=8,
                                   extra_libraries=120 - len(fakenode.DRIVER_LIBRARIES))
        facts = discovery.discover_node(str(node.root))
        assert len(facts["libraries"]) == 120 and len(facts["gpus"]) == 8, (len(facts["libraries"]), len(facts["gpus"]))
        for _warmup in range(20):
            discovery.discover_node(str(node.root))
        samples = []
        for _run in range(args.runs):
            start = time.perf_counter()
            discovery.discover_node(str(node.root))
            samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    print("discovery: COS node, 8 GPUs, 120 libraries, %d runs" % args.runs)
    print("  median %.2f ms   p10 %.2f ms   p90 %.2f ms   (goal: median <= 3 ms)" % (
        statistics.median(samples), samples[len(samples) // 10], samples[len(samples) * 9 // 10]))


if __name__ == "__main__":
    main()
