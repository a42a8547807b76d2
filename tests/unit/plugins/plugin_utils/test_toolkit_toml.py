# -*- coding: utf-8 -*-
"""The tomlkit edit of the toolkit's config.toml: managed keys set, user keys and comments kept."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_fs, node_reads, node_write
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_config as tc
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toolkit_toml as tt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import NodeFiles, parent_dirs
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlEditError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "containerd"
COS_ROOT = "/home/kubernetes/bin/nvidia"
WANTED = tc.wanted_settings(COS_ROOT + "/toolkit", COS_ROOT, "@/sbin/ldconfig")

USER_FILE = '''# Written by hand; keep this comment.
disable-require = false # user key
supported-driver-capabilities = "compat32,compute,display,graphics,ngx,utility,video"

[nvidia-container-cli]
  # where the driver is
  root = "/" # was the default
  debug = "/var/log/nvidia-container-toolkit.log"
  environment = []

[nvidia-container-runtime]
  log-level = "info"
  mode = "legacy"
'''


@pytest.mark.parametrize("text", [None, "", USER_FILE])
def test_edit_sets_managed_keys(text):
    result = tt.edit(text, WANTED)
    data = tomlkit.parse(result["text"]).unwrap()
    assert data["nvidia-container-cli"]["root"] == COS_ROOT
    assert data["nvidia-container-cli"]["ldconfig"] == "@/sbin/ldconfig"
    assert data["nvidia-container-runtime"]["mode"] == "auto"
    assert data["nvidia-ctk"]["path"] == COS_ROOT + "/toolkit/nvidia-ctk"
    assert result["settings"] == data
    again = tt.edit(result["text"], WANTED)
    assert again["text"] == result["text"] and again["changes"] == []


def test_edit_keeps_user_keys_and_comments():
    result = tt.edit(USER_FILE, WANTED)
    for line in USER_FILE.splitlines():
        if "root =" in line or "mode =" in line:
            continue
        assert line in result["text"].splitlines()
    assert '  root = "/home/kubernetes/bin/nvidia" # was the default' in result["text"]
    assert {"path": "config.toml", "action": "updated", "setting": "nvidia-container-cli.root",
            "reason": "'/' -> '/home/kubernetes/bin/nvidia'"} in result["changes"]
    assert {"path": "config.toml", "action": "updated", "setting": "nvidia-container-runtime.mode",
            "reason": "'legacy' -> 'auto'"} in result["changes"]
    data = tomlkit.parse(result["text"]).unwrap()
    assert data["nvidia-container-cli"]["debug"] == "/var/log/nvidia-container-toolkit.log"
    assert data["nvidia-container-runtime"]["log-level"] == "info"


def test_type_change_is_a_change():
    text = '[nvidia-container-cli]\nload-kmods = 1\n'
    result = tt.edit(text, {"nvidia-container-cli": {"load-kmods": True}})
    assert tomlkit.parse(result["text"])["nvidia-container-cli"]["load-kmods"] is True
    assert result["changes"] == [{"path": "config.toml", "action": "updated", "setting": "nvidia-container-cli.load-kmods",
                                  "reason": "1 -> True"}]


def test_empty_table_setting():
    result = tt.edit("", {"extra": {}})
    assert "[extra]" in result["text"]


@pytest.mark.parametrize("text, wanted, message", [
    ("[nvidia-container-cli\n", WANTED, "is not valid TOML"),
    ('nvidia-container-cli = "x"\n', WANTED, "nvidia-container-cli must be a table"),
    ('[nvidia-container-cli.root]\n', WANTED, "nvidia-container-cli.root is a table"),
])
def test_bad_input(text, wanted, message):
    with pytest.raises(TomlEditError, match=message):
        tt.edit(text, wanted, name="config.toml")


@pytest.mark.parametrize("text, expected", [
    ((FIXTURES / "gke-cos.toml").read_text(), None),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\nBinaryName = "/usr/bin/runc"\n',
     "/usr/bin/runc"),
    ("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\nBinaryName = '/opt/runc'\n",
     "/opt/runc"),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\nBinaryName = ""\n', None),
    ("version = 9\n", None),
    ("[broken\n", None),
    (None, None),
])
def test_runtime_binary(text, expected):
    assert tt.runtime_binary(text) == expected


# --- converge: the toolkit_config task, answered from the look's read-ahead ----------------

CONFIG_PATH = COS_ROOT + "/toolkit/.config/nvidia-container-runtime/config.toml"


class _NoRoundTrips:
    """An action whose node is never called: every read is in the read-ahead, every write deferred."""

    def run_module(self, name, args, task_vars):
        raise AssertionError("a round trip to the node: %s %r" % (name, args))


def _converge(root, check_mode=False, diff_mode=False, **extra):
    node = node_fs.NodeRoot(str(root))
    exist = tc.driver_root_probes(COS_ROOT) + tc.ldconfig_candidates(COS_ROOT) + parent_dirs(CONFIG_PATH)
    ahead = dict(node_reads.read_ahead(node, [CONFIG_PATH, "/etc/containerd/config.toml"], (), exist),
                 host_root=str(root))
    files = NodeFiles(_NoRoundTrips(), {}, ahead, defer_writes=True)
    args = dict({"host_root": str(root), "path": None, "install_dir": COS_ROOT + "/toolkit", "driver_root": COS_ROOT,
                 "ldconfig": "auto", "runtime_mode": "auto", "runtimes": None,
                 "containerd_config": "/etc/containerd/config.toml", "default_kind": None,
                 "annotation_prefixes": None, "spec_dirs": None, "settings": {}, "state": "present",
                 "backup": False}, **extra)
    return tt.converge(files, args, check_mode, diff_mode), files.deferred


def _apply(root, request):
    written = node_write.new_result(request["path"])
    request = dict({name: spec.get("default") for name, spec in node_write.argument_spec().items()}, **request)
    node_write.write(node_fs.NodeRoot(str(root)), request, written, False, None)
    return written


def test_converge_from_the_read_ahead_defers_its_one_write(tmp_path):
    root = tmp_path / "node"
    (root / "etc" / "containerd").mkdir(parents=True)
    (root / "etc" / "containerd" / "config.toml").write_text(
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\nBinaryName = "/usr/bin/runc"\n')
    (root / COS_ROOT.lstrip("/") / "lib64").mkdir(parents=True)
    (root / COS_ROOT.lstrip("/") / "lib64" / "libcuda.so.1").write_bytes(b"\x7fELF")

    out, deferred = _converge(root, check_mode=True, diff_mode=True)
    assert out["changed"] and deferred == [] and out["diff"][0]["before"] == ""
    assert not (root / CONFIG_PATH.lstrip("/")).exists()

    out, deferred = _converge(root, diff_mode=True, settings={"nvidia-container-cli": {"debug": "/var/log/ctk.log"}})
    assert out["changed"] and out["driver_root"] == COS_ROOT and out["settings"]["nvidia-container-runtime"]["runtimes"] == [
        "/usr/bin/runc"]
    (request,) = deferred
    assert request["path"] == CONFIG_PATH and request["expect_absent"] and request["mode"] == "0644"
    # The file's first line records the directories its write creates, for state=absent.
    assert request["content"].startswith("# gpu_node.container_toolkit: created")
    assert _apply(root, request)["dirs_created"] == [COS_ROOT + "/toolkit", COS_ROOT + "/toolkit/.config",
                                                     COS_ROOT + "/toolkit/.config/nvidia-container-runtime"]

    again, deferred = _converge(root, settings={"nvidia-container-cli": {"debug": "/var/log/ctk.log"}})
    assert not again["changed"] and again["changes"] == [] and deferred == []

    edited, deferred = _converge(root, runtime_mode="cdi", backup=True)
    (request,) = deferred
    assert edited["changes"][0] == {"path": CONFIG_PATH, "action": "updated", "setting": "nvidia-container-runtime.mode",
                                    "reason": "'auto' -> 'cdi'"} and request["backup"]
    assert request["expect_sha256"] and "debug" in request["content"]  # a key set before is kept


def test_converge_refuses_a_file_it_cannot_edit(tmp_path):
    root = tmp_path / "node"
    config = root / CONFIG_PATH.lstrip("/")
    config.parent.mkdir(parents=True)
    config.write_text("[nvidia-container-cli\n")
    with pytest.raises(tt.REFUSALS) as refused:
        _converge(root)
    assert CONFIG_PATH in str(refused.value)
    assert config.read_text() == "[nvidia-container-cli\n"
