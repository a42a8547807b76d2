# -*- coding: utf-8 -*-
"""The tomlkit edit of the toolkit's config.toml: managed keys set, user keys and comments kept."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_config as tc
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toolkit_toml as tt
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
    assert "nvidia-container-cli.root: '/' -> '/home/kubernetes/bin/nvidia'" in result["changes"]
    assert "nvidia-container-runtime.mode: 'legacy' -> 'auto'" in result["changes"]
    data = tomlkit.parse(result["text"]).unwrap()
    assert data["nvidia-container-cli"]["debug"] == "/var/log/nvidia-container-toolkit.log"
    assert data["nvidia-container-runtime"]["log-level"] == "info"


def test_type_change_is_a_change():
    text = '[nvidia-container-cli]\nload-kmods = 1\n'
    result = tt.edit(text, {"nvidia-container-cli": {"load-kmods": True}})
    assert tomlkit.parse(result["text"])["nvidia-container-cli"]["load-kmods"] is True
    assert result["changes"] == ["nvidia-container-cli.load-kmods: 1 -> True"]


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
