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


def pause_image_tar(path, reference="registry.invalid/gpu-node/pause:test"):
    """An OCI image archive, for ``ctr images import``, whose entrypoint sleeps (busybox-static)."""
    import io  # pylint: disable=import-outside-toplevel
    import shutil  # pylint: disable=import-outside-toplevel
    import tarfile  # pylint: disable=import-outside-toplevel

    busybox = shutil.which("busybox")
    if not busybox:
        raise AssertionError("busybox-static is needed for the pause image")

    def blob(data):
        return "sha256:" + hashlib.sha256(data).hexdigest(), data

    layer_buf = io.BytesIO()
    with tarfile.open(fileobj=layer_buf, mode="w") as layer:
        layer.add(busybox, arcname="busybox")
    layer_digest, layer_data = blob(layer_buf.getvalue())
    config_digest, config_data = blob(json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": ["/busybox", "sleep", "3600"]},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }).encode())
    manifest_digest, manifest_data = blob(json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                   "size": len(config_data)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest,
                    "size": len(layer_data)}],
    }).encode())
    annotations = {
        "io.containerd.image.name": reference,
        "org.opencontainers.image.ref.name": reference.rsplit(":", 1)[1],
    }
    index = json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest,
        "size": len(manifest_data), "annotations": annotations,
    }]}).encode()
    with tarfile.open(path, "w") as archive:
        for name, data in (("oci-layout", b'{"imageLayoutVersion": "1.0.0"}'), ("index.json", index),
                           ("blobs/sha256/" + layer_digest[7:], layer_data),
                           ("blobs/sha256/" + config_digest[7:], config_data),
                           ("blobs/sha256/" + manifest_digest[7:], manifest_data)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return reference


def import_image(sock, tar_path):
    """``ctr -n k8s.io images import``, so CRI sees the image without a registry."""
    subprocess.run(["ctr", "--address", str(sock), "-n", "k8s.io", "images", "import", str(tar_path)],
                   check=True, capture_output=True, text=True)


def run_pod_sandbox(sock, handler, name="gpu-node-test", timeout=60.0):
    """CRI ``RunPodSandbox`` of a host-network pod with ``handler``; returns the sandbox id."""
    import grpc  # pylint: disable=import-outside-toplevel

    pb2, pb2_grpc = _stubs()
    config = pb2.PodSandboxConfig(
        metadata=pb2.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="default", attempt=0),
        linux=pb2.LinuxPodSandboxConfig(security_context=pb2.LinuxSandboxSecurityContext(
            namespace_options=pb2.NamespaceOption(network=pb2.NODE, pid=pb2.POD, ipc=pb2.POD))),
    )
    with grpc.insecure_channel("unix://" + str(sock)) as channel:
        stub = pb2_grpc.RuntimeServiceStub(channel)
        reply = stub.RunPodSandbox(pb2.RunPodSandboxRequest(config=config, runtime_handler=handler), timeout=timeout)
    return reply.pod_sandbox_id


def remove_pod_sandbox(sock, sandbox_id, timeout=60.0):
    """Stop and remove a sandbox, so its shim and processes exit before containerd is killed."""
    import grpc  # pylint: disable=import-outside-toplevel

    pb2, pb2_grpc = _stubs()
    with grpc.insecure_channel("unix://" + str(sock)) as channel:
        stub = pb2_grpc.RuntimeServiceStub(channel)
        stub.StopPodSandbox(pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox_id), timeout=timeout)
        stub.RemovePodSandbox(pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id), timeout=timeout)
