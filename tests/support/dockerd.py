# -*- coding: utf-8 -*-
"""A real dockerd (Debian's ``docker.io``, 20.10) started by a test, everything under a temp dir.

As TESTBED.md says: ``dockerd --config-file F --data-root D/data --exec-root D/exec --pidfile D/pid
-H unix://D/docker.sock --iptables=false --ip6tables=false --bridge=none --storage-driver vfs``. dockerd
starts its own containerd under the exec root. Two things land outside ``D`` and dockerd 20.10 has no
flag to move them: its trust key ``/etc/docker/key.json`` and the plugin socket directory
``/run/docker/plugins``. :class:`Dockerd` removes each again when it was not there before the test.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

TRUST_KEY = Path("/etc/docker/key.json")
PLUGIN_DIRS = (Path("/run/docker/plugins"), Path("/run/docker"))


def dockerd_binary():
    return shutil.which("dockerd")


def docker_cli():
    """The ``docker`` client of the same package as dockerd (another ``docker`` may come first on PATH)."""
    binary = dockerd_binary()
    if binary:
        sibling = Path(binary).with_name("docker")
        if sibling.is_file():
            return str(sibling)
    return shutil.which("docker")


def missing_prerequisite():
    """None when a dockerd can be started here, else what is missing, in words."""
    if os.geteuid() != 0:
        return "dockerd needs root"
    if not dockerd_binary() or not docker_cli():
        return "dockerd and docker are missing (apt-get install -y docker.io)"
    return None


class DockerdFailed(AssertionError):
    """dockerd exited instead of answering; ``log`` holds its output."""

    def __init__(self, message, log):
        super().__init__(message)
        self.log = log


class Dockerd:
    """``Dockerd(config_file)``: ``start()`` runs dockerd on ``config_file`` and waits until it answers;
    ``stop()`` ends it (SIGTERM, then SIGKILL) and everything it left goes with the temp dir."""

    def __init__(self, config_file, workdir=None):
        self.config_file = Path(config_file)
        # unix socket paths are limited to 108 bytes: a short dir under /tmp.
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="dkd-", dir="/tmp"))
        self.sock = self.workdir / "docker.sock"
        self.log = self.workdir / "dockerd.log"
        self.proc = None
        self._had_key = TRUST_KEY.exists()
        self._had_dirs = [d for d in PLUGIN_DIRS if d.exists()]

    def argv(self, extra=()):
        d = self.workdir
        return [
            dockerd_binary(),
            "--config-file", str(self.config_file),
            "--data-root", str(d / "data"),
            "--exec-root", str(d / "exec"),
            "--pidfile", str(d / "pid"),
            "-H", "unix://%s" % self.sock,
            "--iptables=false", "--ip6tables=false", "--bridge=none",
            "--storage-driver", "vfs",
        ] + list(extra)  # fmt: skip

    def start(self, extra=(), timeout=30.0):
        """Start dockerd; raise :class:`DockerdFailed` (with its log) when it exits instead of answering."""
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv(extra), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                text = self.log.read_text(errors="replace")
                raise DockerdFailed("dockerd exited with %s:\n%s" % (self.proc.returncode, text[-3000:]), text)
            if self.sock.exists() and self.docker("version", "--format", "{{.Server.Version}}").returncode == 0:
                return self
            time.sleep(0.1)
        self.stop()
        raise AssertionError("dockerd did not answer on %s within %s s:\n%s" % (self.sock, timeout, self.log.read_text()))

    def docker(self, *args):
        return subprocess.run([docker_cli(), "-H", "unix://%s" % self.sock] + list(args), capture_output=True, text=True, check=False)

    def info(self):
        proc = self.docker("info", "--format", "{{json .}}")
        if proc.returncode != 0:
            raise AssertionError("docker info failed: %s" % proc.stderr)
        return json.loads(proc.stdout)

    def runtimes(self):
        """``docker info --format '{{json .Runtimes}}'``: name -> {"path": ..., "runtimeArgs": [...]}."""
        proc = self.docker("info", "--format", "{{json .Runtimes}}")
        if proc.returncode != 0:
            raise AssertionError("docker info failed: %s" % proc.stderr)
        return json.loads(proc.stdout)

    def reload(self):
        """SIGHUP: dockerd reloads the reloadable part of its config file."""
        self.proc.send_signal(signal.SIGHUP)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None

    def cleanup(self):
        self.stop()
        if not self._had_key and TRUST_KEY.exists():
            TRUST_KEY.unlink()
        for directory in PLUGIN_DIRS:
            if directory not in self._had_dirs:
                try:
                    directory.rmdir()
                except OSError:
                    pass
        if self._own_workdir:
            # vfs layers and containerd state under the data root: all of it goes.
            subprocess.run(["rm", "-rf", "--one-file-system", str(self.workdir)], check=False)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()
