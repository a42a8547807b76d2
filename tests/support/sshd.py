"""A real OpenSSH server for simulated nodes: ``sshd`` listening on 127.0.0.2, 127.0.0.3, ...

Each simulated node (a directory used as ``gpu_node_host_root``) gets its own loopback address, so
Ansible opens one SSH connection (and one ControlPersist master) per node, as it does on a fleet.
Everything the server and the client use is made for the run in one temp dir: ``sshd_config``, an
ed25519 host key, an ed25519 client key and its ``authorized_keys``, a ``known_hosts`` naming the host
key at every address, the pid files and the logs. One sshd listens on at most 16 addresses (its
MAX_LISTEN_SOCKS), so a bigger fleet gets one sshd per 16 nodes, all on one port with one host key. Nothing under ``/etc/ssh`` or ``/root/.ssh`` is read
or written; ``/run/sshd`` (sshd's privilege separation dir) is created when missing.

Needs root (sshd logs in as root) and Debian's ``openssh-server`` (``/usr/sbin/sshd``)::

    with SshServer(nodes=3) as server:
        inventory = server.write_inventory(path, [node.root for node in nodes])
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

SSHD = "/usr/sbin/sshd"
SFTP_SERVER_CANDIDATES = ("/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server",
                          "/usr/libexec/sftp-server")
PRIVSEP_DIR = "/run/sshd"
FIRST_ADDRESS = 2  # 127.0.0.1 stays the machine's own
ADDRESSES_PER_SSHD = 16  # OpenSSH's MAX_LISTEN_SOCKS


class SshdError(RuntimeError):
    """sshd could not be set up or did not start; the message says why and what to install."""


def missing_prerequisite():
    """Why an SSH fleet cannot run here, or None."""
    if os.geteuid() != 0:
        return "sshd must run as root to log in as root"
    for tool in (SSHD, shutil.which("ssh"), shutil.which("ssh-keygen")):
        if not tool or not os.path.exists(tool):
            return "needs OpenSSH's server and client (apt-get install -y openssh-server openssh-client)"
    return None


def _free_port(addresses):
    """A TCP port free on every one of ``addresses``."""
    for _attempt in range(50):
        probe = socket.socket()
        probe.bind((addresses[0], 0))
        port = probe.getsockname()[1]
        probe.close()
        busy = False
        for address in addresses[1:]:
            other = socket.socket()
            try:
                other.bind((address, port))
            except OSError:
                busy = True
            finally:
                other.close()
        if not busy:
            return port
    raise SshdError("no TCP port free on all of %s" % ", ".join(addresses))


def _listening(address, port):
    try:
        with socket.create_connection((address, port), timeout=0.5) as conn:
            return conn.recv(4).startswith(b"SSH-")
    except OSError:
        return False


class SshServer:
    """sshd for ``nodes`` loopback addresses; a context manager that stops it at the end."""

    def __init__(self, nodes, work=None, max_startups=200):
        problem = missing_prerequisite()
        if problem:
            raise SshdError(problem)
        self.addresses = ["127.0.0.%d" % (FIRST_ADDRESS + i) for i in range(nodes)]
        if FIRST_ADDRESS + nodes - 1 > 254:
            raise SshdError("at most %d nodes on 127.0.0.0/24" % (255 - FIRST_ADDRESS))
        # Short: ssh's ControlPath sockets and sshd's paths live under it (unix sockets: ~104 bytes).
        self.work = Path(work) if work else Path(tempfile.mkdtemp(prefix="sshd-", dir="/tmp"))
        self._own_work = work is None
        self.max_startups = max_startups
        self.port = None
        self.processes = []
        self.client_key = self.work / "id_ed25519"
        self.known_hosts = self.work / "known_hosts"
        self.groups = [self.addresses[i:i + ADDRESSES_PER_SSHD] for i in range(0, nodes, ADDRESSES_PER_SSHD)]
        self.configs = [self.work / ("sshd_config-%d" % i) for i in range(len(self.groups))]
        self.logs = [self.work / ("sshd-%d.log" % i) for i in range(len(self.groups))]

    # Set-up ----------------------------------------------------------------------------------

    def _keygen(self, path, comment):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                       check=True, capture_output=True)

    def _write_files(self):
        self.work.mkdir(parents=True, exist_ok=True)
        host_key = self.work / "ssh_host_ed25519_key"
        self._keygen(host_key, "gpu-node-test-host")
        self._keygen(self.client_key, "gpu-node-test-client")
        authorized = self.work / "authorized_keys"
        authorized.write_text((self.work / "id_ed25519.pub").read_text())
        authorized.chmod(0o600)
        host_public = (self.work / "ssh_host_ed25519_key.pub").read_text().split()
        self.known_hosts.write_text("".join("[%s]:%d %s %s\n" % (address, self.port, host_public[0], host_public[1])
                                            for address in self.addresses))
        sftp = next((p for p in SFTP_SERVER_CANDIDATES if os.path.exists(p)), None)
        for index, group in enumerate(self.groups):
            lines = ["Port %d" % self.port]
            lines += ["ListenAddress %s" % address for address in group]
            lines += ["PidFile %s" % (self.work / ("sshd-%d.pid" % index))]
            lines += self._settings(host_key, authorized, sftp)
            self.configs[index].write_text("\n".join(lines) + "\n")

    def _settings(self, host_key, authorized, sftp):
        lines = [
            "HostKey %s" % host_key,
            "AuthorizedKeysFile %s" % authorized,
            "PermitRootLogin prohibit-password",
            "AllowUsers root",
            "PubkeyAuthentication yes",
            "AuthenticationMethods publickey",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "HostbasedAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PrintMotd no",
            "UseDNS no",
            "X11Forwarding no",
            "AllowTcpForwarding no",
            # A fleet of forks connects at once; ControlMaster multiplexes many sessions per connection.
            "MaxStartups %d" % self.max_startups,
            "MaxSessions %d" % self.max_startups,
            "LogLevel ERROR",
        ]
        if sftp:
            # Without pipelining Ansible copies each module over SFTP.
            lines.append("Subsystem sftp %s" % sftp)
        return lines

    def start(self, timeout=15):
        self.port = _free_port(self.addresses)
        self._write_files()
        os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        for config, log in zip(self.configs, self.logs):
            check = subprocess.run([SSHD, "-t", "-f", str(config)], capture_output=True, text=True, check=False)
            if check.returncode != 0:
                self.stop()
                raise SshdError("sshd refuses %s: %s" % (config, check.stderr.strip()))
            # -D: stay in the foreground, a child of this process; -E: log to a file, not syslog.
            self.processes.append(subprocess.Popen([SSHD, "-D", "-f", str(config), "-E", str(log)],
                                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + timeout
        waiting = list(self.addresses)
        while waiting and time.monotonic() < deadline:
            exited = next((process for process in self.processes if process.poll() is not None), None)
            if exited is not None:
                self.stop()
                raise SshdError("sshd exited with %s: %s" % (exited.returncode, self._log_tail()))
            waiting = [address for address in waiting if not _listening(address, self.port)]
            if waiting:
                time.sleep(0.05)
        if waiting:
            self.stop()
            raise SshdError("sshd does not answer on %s:%d within %d s: %s"
                            % (", ".join(waiting), self.port, timeout, self._log_tail()))
        return self

    def _log_tail(self):
        return "".join(log.read_text() for log in self.logs if log.exists())[-2000:] or "(no log)"

    # Tear-down -------------------------------------------------------------------------------

    @staticmethod
    def _children(listener):
        """The per-connection sshd processes ``listener`` forked (by their parent pid)."""
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == listener.pid:
                pids.append(int(entry))
        return pids

    def close_masters(self, control_dir):
        """Ask every ControlPersist master with a socket in ``control_dir`` to exit."""
        control_dir = Path(control_dir)
        if not control_dir.is_dir():
            return
        for sock in control_dir.iterdir():
            subprocess.run(["ssh", "-o", "ControlPath=%s" % sock, "-O", "exit", "gpu-node-test"],
                           capture_output=True, check=False, timeout=10)

    def stop(self):
        for listener in self.processes:
            if listener.poll() is not None:
                continue
            # A session's sshd outlives the listener: end those this sshd started, then the listener.
            for pid in self._children(listener):
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            listener.terminate()
            try:
                listener.wait(timeout=10)
            except subprocess.TimeoutExpired:
                listener.kill()
                listener.wait()
        self.processes = []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        if self._own_work:
            shutil.rmtree(self.work, ignore_errors=True)

    # What clients need -----------------------------------------------------------------------

    def ssh_common_args(self):
        return " ".join([
            "-F /dev/null",  # no user or system ssh_config
            "-o IdentitiesOnly=yes",
            "-o UserKnownHostsFile=%s" % self.known_hosts,
            "-o GlobalKnownHostsFile=/dev/null",
            "-o StrictHostKeyChecking=yes",
        ])

    def host_vars(self, index, host_root):
        """Inventory variables reaching node ``index`` (0-based) with ``host_root`` as its ``/``."""
        return {
            "ansible_connection": "ssh",
            "ansible_host": self.addresses[index],
            "ansible_port": self.port,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(self.client_key),
            "ansible_ssh_common_args": self.ssh_common_args(),
            # Over SSH to this machine the controller's interpreter (the venv's) is there too.
            "ansible_python_interpreter": sys.executable,
            "gpu_node_host_root": str(host_root),
        }

    def inventory(self, host_roots, group="gpu_nodes", group_vars=None, name="node%03d"):
        hosts = {name % index: self.host_vars(index, root) for index, root in enumerate(host_roots)}
        body = {"hosts": hosts}
        if group_vars:
            body["vars"] = dict(group_vars)
        return {"all": {"children": {group: body}}}

    def write_inventory(self, path, host_roots, **kwargs):
        if len(host_roots) > len(self.addresses):
            raise SshdError("%d nodes but sshd listens on %d addresses" % (len(host_roots), len(self.addresses)))
        Path(path).write_text(yaml.safe_dump(self.inventory(host_roots, **kwargs), sort_keys=False))
        return Path(path)


def ssh_env(control_dir, pipelining, persist="60s"):
    """Environment for ansible-playbook over this server: pipelining on or off, one ControlPersist
    master per node with its socket in ``control_dir`` (keep it short)."""
    return {
        "ANSIBLE_PIPELINING": "True" if pipelining else "False",
        "ANSIBLE_SSH_ARGS": "-C -o ControlMaster=auto -o ControlPersist=%s" % persist,
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(control_dir),
        "ANSIBLE_SSH_CONTROL_PATH": "%(directory)s/%%C",
        "ANSIBLE_HOST_KEY_CHECKING": "True",
    }
