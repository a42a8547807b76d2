# -*- coding: utf-8 -*-
"""Make the collection importable as ``ansible_collections.gpu_node.container_toolkit``.

ansible-test runs from inside ``ansible_collections/gpu_node/container_toolkit``; a plain
``pytest`` from a git checkout gets the same layout through a symlink under ``.cache/``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def collections_root():
    if REPO.parent.name == "gpu_node" and REPO.parent.parent.name == "ansible_collections":
        return REPO.parent.parent.parent
    root = REPO / ".cache" / "collections"
    link = root / "ansible_collections" / "gpu_node" / "container_toolkit"
    if not link.is_symlink():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(REPO)
    return root


_ROOT = str(collections_root())
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", _ROOT)
sys.path.insert(0, str(REPO / "tests" / "support"))

pytest_plugins = ["fakenode_fixtures"]


# With CI set, a skipped test fails the run: every skip in this suite is for want of something on the
# machine (root, mknod, containerd, podman, unshare, go, rpmbuild, ...), and CI machines are meant to
# have it all (scripts/system-deps.sh). A skip that has nothing to do with the machine says so, with
# a reason starting "not applicable:" or the ``skip_allowed`` marker; those stay skips.
ALLOWED_SKIP_PREFIX = "not applicable:"
_CI_SKIPS = []


def _in_ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _skip_reason(report):
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "skip_allowed(why): this test's skips are not for a missing prerequisite and do not fail a CI run")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (_in_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    if reason.startswith(ALLOWED_SKIP_PREFIX) or item.get_closest_marker("skip_allowed"):
        return
    _CI_SKIPS.append((report.nodeid, reason))


def pytest_collectreport(report):
    if _in_ci() and report.skipped:
        reason = _skip_reason(report)
        if not reason.startswith(ALLOWED_SKIP_PREFIX):
            _CI_SKIPS.append((report.nodeid or "<collection>", reason))


def pytest_sessionfinish(session, exitstatus):
    if _CI_SKIPS and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _CI_SKIPS:
        return
    terminalreporter.section("skipped for a missing prerequisite, which fails a CI run (CI=%s)" % os.environ.get("CI"), red=True)
    for nodeid, reason in _CI_SKIPS:
        terminalreporter.line("SKIP NOT ALLOWED IN CI: %s: %s" % (nodeid, reason), red=True)
    terminalreporter.line('(install what is missing; a skip unrelated to the machine starts its reason with "%s" '
                          "or carries @pytest.mark.skip_allowed)" % ALLOWED_SKIP_PREFIX)
