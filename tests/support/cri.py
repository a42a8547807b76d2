"""Talk CRI to a real containerd without crictl: stubs for runtime.v1 ``Status`` built at test time.

The proto in ``cri/runtime_status.proto`` is compiled with ``python -m grpc_tools.protoc`` into
``.cache/cri`` (once per proto content) and imported from there.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROTO = Path(__file__).resolve().parent / "cri" / "runtime_status.proto"


def _stubs():
    digest = hashlib.sha256(PROTO.read_bytes()).hexdigest()[:12]
    out = REPO / ".cache" / "cri" / digest
    if not (out / "runtime_status_pb2_grpc.py").exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", "-I", str(PROTO.parent),
             "--python_out", str(out), "--grpc_python_out", str(out), PROTO.name],
            check=True, capture_output=True, text=True,
        )
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    return importlib.import_module("runtime_status_pb2"), importlib.import_module("runtime_status_pb2_grpc")


def status(address, timeout=10.0):
    """CRI ``Status(verbose=True)`` against the unix socket ``address``.

    Returns ``{"conditions": {type: bool}, "info": {key: parsed JSON}}``; ``info["config"]``
    holds the CRI plugin's config, with ``containerd.runtimes``.
    """
    import grpc  # pylint: disable=import-outside-toplevel

    pb2, pb2_grpc = _stubs()
    with grpc.insecure_channel("unix://" + str(address)) as channel:
        grpc.channel_ready_future(channel).result(timeout=timeout)
        reply = pb2_grpc.RuntimeServiceStub(channel).Status(pb2.StatusRequest(verbose=True), timeout=timeout)
    info = {}
    for key, value in reply.info.items():
        try:
            info[key] = json.loads(value)
        except ValueError:
            info[key] = value
    return {"conditions": {c.type: c.status for c in reply.status.conditions}, "info": info}


def isolate(text, workdir, version=2):
    """Point a containerd config's daemon paths into ``workdir`` so a test can start it for real.

    Sets ``root``, ``state``, the gRPC/ttrpc/debug sockets, the opt plugin's path, CRI's
    ``restrict_oom_score_adj`` (needed in a container) and every runc-like runtime's
    ``options.Root``; drops the metrics listener. Returns (text, grpc socket path).
    """
    import tomlkit  # pylint: disable=import-outside-toplevel

    workdir = Path(workdir)
    doc = tomlkit.parse(text)
    if version >= 2 and "version" not in doc:
        doc["version"] = version
    doc["root"] = str(workdir / "root")
    doc["state"] = str(workdir / "state")
    sock = workdir / "c.sock"
    for table, values in (
        ("grpc", {"address": str(sock)}),
        ("ttrpc", {"address": str(sock) + ".ttrpc"}),
        ("debug", {"address": str(workdir / "d.sock")}),
        ("metrics", {"address": ""}),
    ):
        if table not in doc:
            doc[table] = tomlkit.table()
        for key, value in values.items():
            doc[table][key] = value
    plugins = doc.setdefault("plugins", tomlkit.table(is_super_table=True))
    opt = plugins.setdefault("io.containerd.internal.v1.opt", tomlkit.table())
    opt["path"] = str(workdir / "opt")
    cri_name = "cri" if version == 1 else "io.containerd.grpc.v1.cri"
    cri = plugins.setdefault(cri_name, tomlkit.table())
    cri["restrict_oom_score_adj"] = True
    runtimes = cri.get("containerd", {}).get("runtimes", {})
    for runtime in runtimes.values():
        options = runtime.setdefault("options", tomlkit.table())
        options["Root"] = str(workdir / "runc")
    return doc.as_string(), sock


class Containerd:
    """A real containerd started on ``config`` in the background; ``stop()`` kills it."""

    def __init__(self, config, sock, log):
        self.config = Path(config)
        self.sock = Path(sock)
        self.log = Path(log)
        self.proc = None

    def start(self, timeout=20.0):
        import time  # pylint: disable=import-outside-toplevel

        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
                ["containerd", "--config", str(self.config)], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("containerd exited with %s:\n%s" % (self.proc.returncode, self.log.read_text()))
            if self.sock.exists():
                return self
            time.sleep(0.02)
        raise AssertionError("containerd did not open %s:\n%s" % (self.sock, self.log.read_text()))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def config_dump(config):
    """``containerd --config X config dump``, parsed."""
    import tomlkit  # pylint: disable=import-outside-toplevel

    proc = subprocess.run(["containerd", "--config", str(config), "config", "dump"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError("config dump failed (%d): %s" % (proc.returncode, proc.stderr))
    return tomlkit.parse(proc.stdout).unwrap()
