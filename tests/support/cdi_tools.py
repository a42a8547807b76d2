"""CDI consumers for tests: Debian's CDI JSON schema, the CDI Go library's strict validation,
and podman 4.3 injecting devices from a spec into a real busybox container.

Each ``*_missing()`` returns the reason a tool cannot run here, or None.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CDI_SRC = Path("/usr/share/gocode/src/github.com/container-orchestrated-devices/container-device-interface")
SCHEMA_DIR = CDI_SRC / "schema"
VALIDATOR_SRC = Path(__file__).resolve().parent / "cdi_validate" / "main.go"
CACHE = REPO / ".cache" / "cdi_validate"
BUSYBOX = "/bin/busybox"


# --- JSON schema ------------------------------------------------------------------------------

def schema_missing():
    if not (SCHEMA_DIR / "schema.json").is_file():
        return "CDI schema not installed (%s): apt-get install golang-github-container-orchestrated-devices-container-device-interface-dev" % SCHEMA_DIR
    try:
        import jsonschema  # noqa: F401
        import referencing  # noqa: F401
    except ImportError as exc:
        return "jsonschema missing: %s" % exc
    return None


def schema_validator():
    """A jsonschema validator for Debian's CDI schema.json, with defs.json resolvable."""
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT7

    schema = json.loads((SCHEMA_DIR / "schema.json").read_text())
    defs = json.loads((SCHEMA_DIR / "defs.json").read_text())
    registry = Registry().with_resources([("defs.json", Resource.from_contents(defs, default_specification=DRAFT7))])
    return jsonschema.Draft7Validator(schema, registry=registry)


# --- the CDI Go library -----------------------------------------------------------------------

def go_missing():
    if shutil.which("go") is None:
        return "go not installed (apt-get install golang-go)"
    if not (CDI_SRC / "pkg" / "cdi").is_dir():
        return "CDI Go library not installed under %s" % CDI_SRC
    return None


def go_validator():
    """Path of the cdi-validate binary, built once (offline, GOPATH mode) and cached by source hash."""
    digest = hashlib.sha256(VALIDATOR_SRC.read_bytes()).hexdigest()[:16]
    binary = CACHE / ("cdi-validate-" + digest)
    if binary.exists():
        return binary
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=str(CACHE)) as gopath:
        src = Path(gopath) / "src" / "cdivalidate"
        src.mkdir(parents=True)
        shutil.copy(VALIDATOR_SRC, src / "main.go")
        env = dict(os.environ, GO111MODULE="off", GOPATH="%s:/usr/share/gocode" % gopath,
                   GOCACHE=str(CACHE / "gocache"), GOFLAGS="", CGO_ENABLED="0")
        out = Path(gopath) / "cdi-validate"
        proc = subprocess.run(["go", "build", "-o", str(out), "."], cwd=str(src), env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise AssertionError("building the CDI validator failed:\n" + proc.stderr)
        os.replace(out, binary)
    return binary


def go_validate(*paths):
    """Strict CDI library validation of spec files: ``(ok, [report dicts] or error text)``."""
    proc = subprocess.run([str(go_validator()), str(SCHEMA_DIR / "schema.json")] + [str(p) for p in paths],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return False, proc.stderr.strip()
    return True, [json.loads(line) for line in proc.stdout.splitlines()]


# --- podman -----------------------------------------------------------------------------------

def podman_missing():
    if os.geteuid() != 0:
        return "podman with fake device nodes needs root"
    for tool in ("podman", "unshare", "mount"):
        if shutil.which(tool) is None:
            return "%s not installed (apt-get install podman runc busybox-static)" % tool
    for path in ("/usr/sbin/runc", BUSYBOX):
        if not os.path.exists(path):
            return "%s missing (apt-get install podman runc busybox-static)" % path
    return None


def busybox_rootfs(path):
    """A minimal rootfs: static busybox and its applet links."""
    path = Path(path)
    for sub in ("bin", "dev", "proc", "sys", "etc", "tmp", "run"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy(BUSYBOX, path / "bin" / "busybox")
    for applet in ("sh", "ls", "stat", "cat", "readlink", "test", "echo", "find"):
        link = path / "bin" / applet
        if not link.exists():
            link.symlink_to("busybox")
    (path / "etc" / "passwd").write_text("root:x:0:0:root:/:/bin/sh\n")
    (path / "etc" / "group").write_text("root:x:0:\n")
    return path


def podman_run(spec_dir, devices, script, workdir, binds=(), overlays=()):
    """Run ``sh -c script`` in a busybox container with ``--device`` for each CDI name.

    podman 4.3 reads specs only from /etc/cdi and /var/run/cdi, so it runs inside a private mount
    namespace with a tmpfs on /run and ``spec_dir`` bind-mounted at /run/cdi. ``binds`` are
    ``(source, target)`` pairs mounted in that namespace first, in order: a directory is
    bind-mounted, None mounts a tmpfs (so the real host's tree stays untouched). Used to put a
    fake node's driver tree at its host path, so that the spec's hostPaths exist. ``overlays`` are
    ``(directory, target)`` pairs mounted after them: a read-only overlay of ``directory`` over the
    host's ``target`` (a driver installed at ``/usr`` shown beside the host's own files, which podman
    and runc need). Returns the CompletedProcess.
    """
    workdir = Path(workdir)
    rootfs = busybox_rootfs(workdir / "rootfs")
    # podman refuses a runroot longer than 50 characters: keep its storage under a short path.
    storage = Path(tempfile.mkdtemp(prefix="cdi-podman-", dir="/tmp"))
    try:
        return _podman_run(spec_dir, devices, script, workdir, rootfs, storage, binds, overlays)
    finally:
        shutil.rmtree(storage, ignore_errors=True)


def _podman_run(spec_dir, devices, script, workdir, rootfs, storage, binds, overlays):
    lines = ["set -e", "mount -t tmpfs tmpfs /run", "mkdir -p /run/cdi /run/podman",
             "mount --bind %s /run/cdi" % _q(spec_dir)]
    for source, target in binds:
        if source is None:
            lines.append("mount -t tmpfs tmpfs %s" % _q(target))
        else:
            lines.append("mkdir -p %s && mount --bind %s %s" % (_q(target), _q(source), _q(target)))
    for directory, target in overlays:
        lines.append("mount -t overlay overlay -o %s %s" % (_q("lowerdir=%s:%s" % (directory, target)), _q(target)))
    cmd = [
        "podman", "--root", str(storage / "root"), "--runroot", str(storage / "runroot"),
        "--tmpdir", str(storage / "tmp"), "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs",
        "--events-backend", "file", "--runtime", "/usr/sbin/runc",
        "run", "--rm", "--network=none", "--ulimit", "nofile=1024:4096", "--ulimit", "nproc=1024:4096",
    ]
    for device in devices:
        cmd += ["--device", device]
    cmd += ["--rootfs", str(rootfs), "/bin/sh", "-c", script]
    lines.append(" ".join(_q(part) for part in cmd))
    env = dict(os.environ, CONTAINERS_CONF=str(_containers_conf(workdir)))
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", "\n".join(lines)],
                          capture_output=True, text=True, env=env, check=False, timeout=120)


def _containers_conf(workdir):
    conf = Path(workdir) / "containers.conf"
    conf.write_text('[engine]\nevents_logger = "file"\ncgroup_manager = "cgroupfs"\n'
                    'runtime = "runc"\n[engine.runtimes]\nrunc = ["/usr/sbin/runc"]\n')
    return conf


def _q(text):
    return "'" + str(text).replace("'", "'\\''") + "'"
