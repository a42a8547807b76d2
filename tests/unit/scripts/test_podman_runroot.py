"""molecule/debian-systemd/podman.sh: podman's run root stays short whatever the checkout's path.

podman 4.3 refuses a run root longer than 50 characters; podman.sh used to derive it from the
checkout (.cache/molecule/podman/run), which failed for any checkout path longer than about 23
characters. These tests put a copy of the scenario's podman settings at the end of a 120-character
checkout path and ask podman.sh what it would use (``--print-settings``), then run podman itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCENARIO = REPO / "molecule" / "debian-systemd"
CHECKOUT_LENGTH = 120
PODMAN_RUNROOT_LIMIT = 50


def long_checkout(base, name):
    """A copy of the scenario's podman.sh and containers.conf in a checkout whose path is 120 characters long."""
    stem = str(base / name) + "-"
    checkout = Path(stem + "x" * (CHECKOUT_LENGTH - len(stem)))
    scenario = checkout / "molecule" / "debian-systemd"
    scenario.mkdir(parents=True)
    for name in ("podman.sh", "containers.conf"):
        shutil.copy2(SCENARIO / name, scenario / name)
    assert len(str(checkout)) == CHECKOUT_LENGTH
    return checkout


def settings(checkout):
    env = {k: v for k, v in os.environ.items() if k != "GPU_NODE_PODMAN_STATE"}
    proc = subprocess.run(["bash", str(checkout / "molecule" / "debian-systemd" / "podman.sh"), "--print-settings"],
                          capture_output=True, text=True, env=env, check=False, timeout=30)
    assert proc.returncode == 0, "podman.sh --print-settings failed (%d): %s%s" % (proc.returncode, proc.stdout, proc.stderr)
    return dict(line.split("=", 1) for line in proc.stdout.splitlines())


def test_runroot_is_short_and_does_not_follow_the_checkout(tmp_path):
    checkout = long_checkout(tmp_path, "a")
    found = settings(checkout)
    assert sorted(found) == ["root", "runroot", "tmpdir"]
    assert len(found["runroot"]) < PODMAN_RUNROOT_LIMIT, found
    assert str(checkout) not in found["runroot"] and str(checkout) not in found["tmpdir"], found
    # The image storage stays in the checkout's cache, so the built image survives between runs.
    assert found["root"] == str(checkout / ".cache" / "molecule" / "podman" / "storage")


def test_each_checkout_keeps_its_own_runroot(tmp_path):
    first, second = long_checkout(tmp_path, "a"), long_checkout(tmp_path, "b")
    assert settings(first) == settings(first)
    assert settings(first)["runroot"] != settings(second)["runroot"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("podman") or not os.path.exists("/usr/sbin/runc"),
                    reason="podman (rootful, with /usr/sbin/runc) is needed to run podman.sh for real")
def test_podman_runs_from_a_long_checkout(tmp_path):
    checkout = long_checkout(tmp_path, "c")
    runroot = None
    try:
        # podman info asks the package managers for its components' versions (rpm opens ~/.rpmdb).
        home = tmp_path / "home"
        home.mkdir()
        proc = subprocess.run(["bash", str(checkout / "molecule" / "debian-systemd" / "podman.sh"), "info", "--format", "json"],
                              capture_output=True, text=True, check=False, timeout=120, env=dict(os.environ, HOME=str(home)))
        assert proc.returncode == 0, "podman info from a %d-character checkout failed: %s" % (CHECKOUT_LENGTH, proc.stderr)
        store = json.loads(proc.stdout)["store"]
        runroot = store["runRoot"]
        assert len(runroot) < PODMAN_RUNROOT_LIMIT
        found = settings(checkout)
        assert (runroot, store["graphRoot"]) == (found["runroot"], found["root"])
    finally:
        # podman.sh keeps its run root in a directory of its own outside the checkout.
        if runroot and Path(runroot).parent.name.startswith("gpn-podman-"):
            shutil.rmtree(Path(runroot).parent, ignore_errors=True)
