# -*- coding: utf-8 -*-
"""Valid TOML layouts that tomlkit hands back as proxies or inline tables.

A table whose parts are not contiguous (``[a.b]``, then ``[c]``, then ``[a.d]``), or one spelled
with dotted keys, comes from tomlkit as an out-of-order proxy without ``item()``; both edits used
to crash on it with an AttributeError. Inline tables cannot take ``[table]`` children and used to
raise a raw ValueError. These tests pin a clean edit, or a clear ConfigError, for each.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
import tomlkit

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toolkit_toml as tt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlEditError

CRI = '[plugins."io.containerd.grpc.v1.cri"'

LAYOUTS = {
    # The CRI table split by another table, then continued.
    "cri split by [metrics]": (
        "version = 2\n"
        + CRI + ']\n  sandbox_image = "registry.k8s.io/pause:3.8"\n'
        "[metrics]\n  address = \"127.0.0.1:1338\"\n"
        + CRI + '.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
        + CRI + '.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n'
    ),
    # runtimes first, another plugin, then the containerd table with the default runtime.
    "containerd table after another plugin": (
        "version = 2\n"
        + CRI + '.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
        '[plugins."io.containerd.monitor.v1.cgroups"]\n  no_prometheus = false\n'
        + CRI + '.containerd]\n  default_runtime_name = "runc"\n'
    ),
    # Dotted keys at the top level.
    "dotted keys": 'version = 2\nplugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name = "runc"\n',
    # A whole runtime in dotted keys under the CRI table (the shape the issue reported crashing).
    "dotted runtime": (
        "version = 2\n"
        + CRI + ']\n'
        '  containerd.default_runtime_name = "runc"\n'
        '  containerd.runtimes.runc.runtime_type = "io.containerd.runc.v2"\n'
        '  containerd.runtimes.runc.options.SystemdCgroup = true\n'
        "[metrics]\n  address = \"127.0.0.1:1338\"\n"
    ),
    # No final newline, a runc table in two parts around another plugin's table.
    "runc split, no final newline": (
        "version = 2\n"
        + CRI + '.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
        '[plugins."io.containerd.monitor.v1.cgroups"]\n  no_prometheus = false\n'
        + CRI + '.containerd.runtimes.runc.options]\n  SystemdCgroup = true'
    ),
}


def params(**overrides):
    result = {
        "state": "present",
        "runtimes": rt.default_runtimes("/usr/local/nvidia/toolkit"),
        "runtime_type": cc.DEFAULT_RUNTIME_TYPE,
        "set_as_default": False,
        "enable_cdi": None,
        "cdi_spec_dirs": None,
        "config_version": "auto",
        "drop_in": None,
        "path": "/etc/containerd/config.toml",
    }
    result.update(overrides)
    return result


def containerd_table(text):
    data = tomlkit.parse(text).unwrap()
    for key in cc.containerd_table(2):
        data = data[key]
    return data


@pytest.mark.parametrize("extra", [{}, {"set_as_default": True, "enable_cdi": True}], ids=["plain", "default+cdi"])
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_out_of_order_tables_edit_and_undo(name, extra):
    original = LAYOUTS[name]
    result = ct.edit(original, params(**extra))
    table = containerd_table(result["text"])
    assert sorted(table["runtimes"]) == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
    assert table["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/local/nvidia/toolkit/nvidia-container-runtime"
    assert table["runtimes"]["nvidia"]["runtime_type"] == cc.DEFAULT_RUNTIME_TYPE
    if extra:
        assert table["default_runtime_name"] == "nvidia"
        assert tomlkit.parse(result["text"]).unwrap()["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"] is True
    assert result["restart_required"]

    again = ct.edit(result["text"], params(**extra))
    assert again["text"] == result["text"]
    assert again["changes"] == []

    undone = ct.edit(result["text"], params(state="absent", **extra))
    assert undone["text"] == original


def test_inherits_options_from_a_split_runc():
    result = ct.edit(LAYOUTS["cri split by [metrics]"], params())
    assert containerd_table(result["text"])["runtimes"]["nvidia"]["options"]["SystemdCgroup"] is True


@pytest.mark.parametrize("text, message", [
    (
        'version = 2\n' + CRI + '.containerd]\n  runtimes = { runc = { runtime_type = "io.containerd.runc.v2" } }\n',
        'containerd.runtimes is an inline table',
    ),
    (
        'version = 2\n[plugins]\n  "io.containerd.grpc.v1.cri" = { sandbox_image = "x" }\n',
        '"io.containerd.grpc.v1.cri" is an inline table',
    ),
], ids=["inline runtimes", "inline cri table"])
def test_inline_tables_are_a_clear_error(text, message):
    with pytest.raises(TomlEditError, match=message):
        ct.edit(text, params())


@pytest.mark.skipif(not shutil.which("containerd"), reason="containerd is not installed")
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_real_containerd_reads_the_edited_layout(name, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(ct.edit(LAYOUTS[name], params(set_as_default=True))["text"])
    dump = subprocess.run(["containerd", "--config", str(path), "config", "dump"],
                          capture_output=True, text=True, check=True).stdout
    table = containerd_table(dump)
    assert table["default_runtime_name"] == "nvidia"
    assert table["runtimes"]["nvidia-cdi"]["options"]["BinaryName"] == \
        "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi"


def test_toolkit_config_with_a_split_table_keeps_the_users_comment():
    text = (
        '[nvidia-container-cli]\n  root = "/"  # the driver\n'
        '[nvidia-ctk]\n  path = "/usr/bin/nvidia-ctk"\n'
        '[nvidia-container-cli.extra]\n  a = 1\n'
    )
    wanted = {"nvidia-container-cli": {"root": "/home/kubernetes/bin/nvidia", "ldconfig": "@/sbin/ldconfig"}}
    result = tt.edit(text, wanted)
    doc = tomlkit.parse(result["text"])
    assert doc.unwrap()["nvidia-container-cli"]["root"] == "/home/kubernetes/bin/nvidia"
    assert doc.unwrap()["nvidia-container-cli"]["ldconfig"] == "@/sbin/ldconfig"
    assert doc.unwrap()["nvidia-container-cli"]["extra"] == {"a": 1}
    assert "# the driver" in result["text"]
    assert tt.edit(result["text"], wanted)["changes"] == []
