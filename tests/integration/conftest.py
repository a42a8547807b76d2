"""Fixtures for the integration tests that need more than one process: a real OpenSSH server."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import sshd

SSH_NODES = 3


@pytest.fixture(scope="session")
def ssh_server():
    """One ``sshd`` on 127.0.0.2 .. 127.0.0.4 for the whole run (see tests/support/sshd.py).

    Never skips: a machine that runs these tests must have OpenSSH's server (a missing one fails
    the test, naming the package).
    """
    problem = sshd.missing_prerequisite()
    if problem:
        pytest.fail("the SSH fleet cannot start: %s" % problem, pytrace=False)
    with sshd.SshServer(SSH_NODES) as server:
        yield server


@pytest.fixture
def ssh_control_dir(ssh_server):
    """A short directory for this test's ControlPersist sockets; the masters are closed at the end."""
    path = Path(tempfile.mkdtemp(prefix="cp-", dir="/tmp"))
    yield path
    ssh_server.close_masters(path)
    shutil.rmtree(path, ignore_errors=True)
