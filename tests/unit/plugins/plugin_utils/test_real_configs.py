# -*- coding: utf-8 -*-
"""containerd_runtime over containerd configs that real projects ship (tests/fixtures/containerd/real,
sources in its SOURCES.md): present, present again, absent gives back the original bytes; in place and
as a drop-in; with both TOML parsers; and Debian's containerd 1.6 loads every v1/v2 result."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toml_edit
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import load

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "containerd" / "real"
# k3s writes config.toml anew at every start and heads it "DO NOT EDIT": refused, tested below.
REGENERATED = {"k3s-v2.toml", "k3s-v2-nvidia.toml"}
NAMES = sorted(p.name for p in REAL.glob("*.toml"))
EDITABLE = [n for n in NAMES if n not in REGENERATED]
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
# containerd 1.6 (Debian 12's) reads versions 1 and 2; it takes a version 3 file for 2.
FOR_1_6 = [n for n in EDITABLE if load((REAL / n).read_text(), n).get("version", 1) <= 2]


def params(**overrides):
    result = {
        "state": "present",
        "runtimes": rt.default_runtimes("/home/kubernetes/bin/nvidia/toolkit"),
        "runtime_type": cc.DEFAULT_RUNTIME_TYPE,
        "set_as_default": False,
        "enable_cdi": True,
        "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"],
        "container_annotations": ["cdi.k8s.io/*"],
        "config_version": "auto",
        "drop_in": None,
        "path": "/etc/containerd/config.toml",
    }
    result.update(overrides)
    return result


@pytest.fixture(params=["tomllib", "tomlkit"])
def parser(request, monkeypatch):
    if request.param == "tomllib" and toml_edit.tomllib is None:
        pytest.skip("not applicable: no tomllib before Python 3.11")
    monkeypatch.setattr(toml_edit, "PARSER", request.param)
    return request.param


def effective_runtimes(text, version, drop_in_text=None):
    """The runtimes containerd ends up with, a drop-in's CRI table replacing the root's (before 2.1)."""
    data = load(text, "root")
    if drop_in_text is not None:
        drop = load(drop_in_text, "drop-in")
        data = cc.apply_ops(data, [("set", cc.runtimes_table(version), toml_edit.get_path(drop, cc.runtimes_table(version)))])
    return toml_edit.get_path(data, cc.runtimes_table(version))


def test_fixtures_are_there():
    assert len(EDITABLE) >= 12
    assert (REAL / "SOURCES.md").read_text().count(".toml`") >= len(NAMES)


@pytest.mark.parametrize("name", EDITABLE)
@pytest.mark.parametrize("set_as_default", [False, True])
@pytest.mark.parametrize("drop_in", [None, DROP_IN], ids=["in-place", "drop-in"])
def test_present_present_absent(name, set_as_default, drop_in, parser):
    text = (REAL / name).read_text()
    wanted = params(set_as_default=set_as_default, drop_in=drop_in)
    first = ct.edit(text, wanted, name=name)
    version = first["version"]
    runtimes = effective_runtimes(first["text"], version, first["drop_in_text"])
    for entry in wanted["runtimes"]:
        assert runtimes[entry["name"]]["options"]["BinaryName"] == entry["binary"]
        assert runtimes[entry["name"]]["container_annotations"] == ["cdi.k8s.io/*"]
    assert first["restart_required"] is True
    again = ct.edit(first["text"], wanted, drop_in_text=first["drop_in_text"], name=name)
    assert (again["text"], again["drop_in_text"], again["changes"]) == (first["text"], first["drop_in_text"], [])
    assert again["restart_required"] is False
    back = ct.edit(first["text"], params(state="absent", drop_in=drop_in), drop_in_text=first["drop_in_text"], name=name)
    assert back["text"] == text
    assert back["drop_in_text"] is None


@pytest.mark.parametrize("name", EDITABLE)
def test_nothing_but_added_and_marked_lines_change(name):
    text = (REAL / name).read_text()
    new = ct.edit(text, params(set_as_default=True), name=name)["text"]
    original = text.splitlines()
    kept = [line for line in new.splitlines() if toml_edit.TAG not in line]
    # every original line is still there, in order, unless it was replaced (and recorded)
    position = 0
    for line in original:
        if line in kept[position:]:
            position = kept.index(line, position) + 1
        else:
            assert any(toml_edit.WAS in n and n.split(toml_edit.WAS, 1)[1].strip('"')[:20] in line.replace('"', '\\"')
                       for n in new.splitlines()), line


@pytest.mark.parametrize("name", sorted(REGENERATED))
def test_regenerated_file_is_refused_and_its_template_is_edited(name):
    text = (REAL / name).read_text()
    with pytest.raises(cc.ConfigError, match=r"DO NOT EDIT.*k3s_runtime"):
        ct.edit(text, params(), name="/var/lib/rancher/k3s/agent/etc/containerd/config.toml")
    template = "\n".join(line for line in text.split("\n") if "DO NOT EDIT" not in line)
    result = ct.edit(template, params(), name="config.toml.tmpl")
    assert ct.edit(result["text"], params(state="absent"))["text"] == template


def test_existing_nvidia_default_is_recorded_and_given_back():
    """EKS's accelerated AMI ships nvidia as the default runtime (issue 11, class 3)."""
    text = (REAL / "eks-nodeadm-nvidia-v2.toml").read_text()
    before = effective_runtimes(text, 2)["nvidia"]
    result = ct.edit(text, params(set_as_default=True))
    after = effective_runtimes(result["text"], 2)["nvidia"]
    assert after["options"]["BinaryName"] == "/home/kubernetes/bin/nvidia/toolkit/nvidia-container-runtime"
    assert {k: v for k, v in after["options"].items() if k != "BinaryName"} == \
        {k: v for k, v in before["options"].items() if k != "BinaryName"}
    assert any(change.get("setting") == "runtime nvidia BinaryName" for change in result["changes"])
    back = ct.edit(result["text"], params(state="absent"))
    assert back["text"] == text
    assert effective_runtimes(back["text"], 2)["nvidia"] == before


def test_new_runtimes_inherit_from_an_existing_nvidia_default_without_runc():
    text = (REAL / "bottlerocket-k8s-nvidia.toml").read_text()
    runtimes = effective_runtimes(text, 2)
    result = ct.edit(text, params())
    new = effective_runtimes(result["text"], 2)
    for key, value in runtimes["nvidia"].get("options", {}).items():
        if key != "BinaryName":
            assert new["nvidia-cdi"]["options"][key] == value


def test_split_runc_table_gke():
    text = (REAL / "gke-configure-helper.toml").read_text()
    result = ct.edit(text, params())
    runtimes = effective_runtimes(result["text"], 2)
    assert runtimes["nvidia"]["options"]["SystemdCgroup"] is True
    assert {"path": "config.toml", "action": "updated", "setting": "runtime nvidia",
            "reason": "missing (added, copied from runc)"} in result["changes"]


def test_imports_glob_already_covers_the_drop_in():
    text = (REAL / "eks-al2-imports.toml").read_text()
    result = ct.edit(text, params(drop_in="/etc/containerd/config.d/99-nvidia.toml"))
    assert result["text"] == text
    assert result["drop_in_text"] is not None


def test_version_mismatch_warns_and_names_the_table_containerd_reads():
    text = (REAL / "containerd-man-multiple-runtimes.toml").read_text()
    result = ct.edit(text, params())
    assert any("containerd reads plugins.cri and ignores plugins.\"io.containerd.grpc.v1.cri\"" in w
               for w in result["warnings"])


@pytest.mark.skipif(not shutil.which("containerd"), reason="containerd is not installed")
@pytest.mark.parametrize("name", FOR_1_6)
@pytest.mark.parametrize("drop_in", [None, DROP_IN], ids=["in-place", "drop-in"])
def test_containerd_1_6_loads_the_result(name, drop_in, tmp_path):
    text = (REAL / name).read_text()
    result = ct.edit(text, params(set_as_default=True, drop_in=str(tmp_path / "conf.d" / "99-nvidia.toml") if drop_in else None),
                     name=name)
    root = tmp_path / "config.toml"
    root.write_text(result["text"])
    if result["drop_in_text"] is not None:
        (tmp_path / "conf.d").mkdir()
        (tmp_path / "conf.d" / "99-nvidia.toml").write_text(result["drop_in_text"])
    done = subprocess.run(["containerd", "--config", str(root), "config", "dump"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    dump = load(done.stdout, "dump")
    table = cc.runtimes_table(2)     # containerd 1.6 dumps every file as version 2
    binary = toml_edit.get_path(dump, table + ("nvidia", "options", "BinaryName"))
    assert binary == "/home/kubernetes/bin/nvidia/toolkit/nvidia-container-runtime"
