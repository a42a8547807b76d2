# -*- coding: utf-8 -*-
"""kube_distro: a k3s/RKE2 node recognised, and provisioned on the configs they really generate.

Each case runs the decisions on one real generated config (tests/fixtures/containerd/kube), writes
what they decide into a node tree, lets the stand-in for k3s/RKE2 (tests/support/fake_k3s.py)
generate the config again, and checks it has what was expected; then undoes it and checks the
config comes back byte for byte.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import kube_distro as kd
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toml_edit
from ansible_collections.gpu_node.container_toolkit.tests.support import fake_k3s

KUBE = Path(__file__).resolve().parents[3] / "fixtures" / "containerd" / "kube"
CONFIGS = {"01-k3s-v2.toml": ("k3s", 2), "02-k3s-v2-registry-extraruntimes.toml": ("k3s", 2),
           "03-k3s-v1-old.toml": ("k3s", 1), "04-k3s-v3-extraruntimes.toml": ("k3s", 3), "05-rke2-v2.toml": ("rke2", 2)}
TOOLKIT = "/usr/local/nvidia/toolkit"


def found_on(distribution):
    where = kd.paths(distribution)
    return kd.detect([where["config"], "/etc/systemd/system/%s.service" % kd.DISTRIBUTIONS[distribution]["services"][0]], {})


def params(state="present", set_as_default=False, runtimes=None, install_dir=TOOLKIT):
    return {"state": state, "set_as_default": set_as_default, "install_dir": install_dir, "explicit": bool(runtimes),
            "runtimes": rt.normalize_runtimes(runtimes, install_dir)}


def node(tmp_path, name, binaries=(TOOLKIT + "/nvidia-container-runtime",)):
    distribution = CONFIGS[name][0]
    for binary in binaries:
        os.makedirs(str(tmp_path) + os.path.dirname(binary), exist_ok=True)
        Path(str(tmp_path) + binary).write_text("#!/bin/sh\n")
    fake_k3s.start(str(tmp_path), distribution, str(KUBE / name))
    return distribution


def read(tmp_path, path):
    full = Path(str(tmp_path) + path)
    return full.read_text() if full.exists() else None


def provision(tmp_path, distribution, args):
    """One run of the decisions on the node tree, its writes applied, then a start of k3s/RKE2."""
    found = found_on(distribution)
    config = read(tmp_path, found["config_path"])
    data = toml_edit.load(config, found["config_path"]) if config is not None else None
    owned = found["templates"] + [found["drop_in"]]
    decided = kd.plan(found, args, data, {p: read(tmp_path, p) for p in found["templates"]},
                      read(tmp_path, found["drop_in"]), {p: [] for p in owned})
    for path, text in decided["writes"].items():
        full = Path(str(tmp_path) + path)
        if text is None:
            full.unlink()
        else:
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(text)
    return decided


def restart(tmp_path, name):
    fake_k3s.start(str(tmp_path), CONFIGS[name][0], str(KUBE / name))
    config = read(tmp_path, kd.paths(CONFIGS[name][0])["config"])
    return config, toml_edit.load(config, "config.toml")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_each_real_config_is_recognised_with_its_distribution_version_and_header(name):
    distribution, version = CONFIGS[name]
    text = (KUBE / name).read_text()
    where = kd.paths(distribution)
    found = kd.detect([where["config"]], {where["config"]: "\n".join(text.splitlines()[:5])})
    assert found["distribution"] == distribution
    assert found["service"] == kd.DISTRIBUTIONS[distribution]["services"][0]
    assert found["socket"] == "/run/k3s/containerd/containerd.sock"
    # k3s's oldest template wrote no header: the path alone tells.
    assert (found["generated_header"] is None) == (name.startswith("03"))
    assert kd.config_version(toml_edit.load(text, name)) == version


def test_nothing_is_detected_on_a_plain_node_and_the_enabled_unit_is_the_service():
    assert kd.detect(["/etc/containerd/config.toml", "/usr/bin/containerd"], {}) is None
    units = ["/usr/local/lib/systemd/system/k3s.service", "/etc/systemd/system/k3s-agent.service",
             "/etc/systemd/system/multi-user.target.wants/k3s-agent.service"]
    found = kd.detect(units, {})
    assert (found["service"], found["units"], found["config_exists"]) == ("k3s-agent", ["k3s", "k3s-agent"], False)
    assert kd.detect(["/usr/lib/systemd/system/rke2-agent.service"], {})["service"] == "rke2-agent"


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_default_runtime_goes_in_a_drop_in_and_no_template_when_the_toolkit_is_where_they_look(tmp_path, name):
    original = (KUBE / name).read_text()
    distribution = node(tmp_path, name)
    before, _data = restart(tmp_path, name)
    decided = provision(tmp_path, distribution, params(set_as_default=True))
    assert list(decided["writes"]) == [kd.paths(distribution)["drop_in"]]
    drop_in = decided["writes"][kd.paths(distribution)["drop_in"]]
    assert drop_in.endswith("default-runtime: nvidia\n") and kd.is_ours(drop_in)
    assert decided["extra_runtimes"] == []
    _text, data = restart(tmp_path, name)
    problems, _notes = kd.generated_problems(decided["expected"], data)
    assert problems == []
    # A second run decides nothing.
    assert provision(tmp_path, distribution, params(set_as_default=True))["writes"] == {}
    # Undone: the drop-in goes; once the toolkit is gone too they generate the very bytes again.
    assert provision(tmp_path, distribution, params(state="absent"))["writes"] == {kd.paths(distribution)["drop_in"]: None}
    os.unlink(str(tmp_path) + TOOLKIT + "/nvidia-container-runtime")
    after, _data = restart(tmp_path, name)
    assert after == original
    assert before is not None


@pytest.mark.parametrize("name", ["01-k3s-v2.toml", "05-rke2-v2.toml"])
def test_a_toolkit_outside_their_search_path_gets_a_template_on_their_base(tmp_path, name):
    original = (KUBE / name).read_text()
    distribution = node(tmp_path, name, binaries=["/opt/nvidia/toolkit/nvidia-container-runtime"])
    decided = provision(tmp_path, distribution, params(install_dir="/opt/nvidia/toolkit"))
    template = decided["template"]
    assert template.endswith("config-v3.toml.tmpl" if name.startswith("04") else "config.toml.tmpl")
    text = decided["writes"][template]
    assert kd.is_ours(text) and kd.BASE in text and not ownership.changed_since_written(text)
    assert "SystemdCgroup = {{ .SystemdCgroup }}" in text
    config, data = restart(tmp_path, name)
    assert kd.generated_problems(decided["expected"], data) == ([], [])
    assert config.startswith(original)  # their own output first, untouched
    assert provision(tmp_path, distribution, params(install_dir="/opt/nvidia/toolkit"))["writes"] == {}
    assert provision(tmp_path, distribution, params(state="absent"))["writes"] == {template: None}
    assert restart(tmp_path, name)[0] == original


@pytest.mark.parametrize("name", ["02-k3s-v2-registry-extraruntimes.toml", "04-k3s-v3-extraruntimes.toml"])
def test_a_runtime_they_add_themselves_from_another_binary_is_not_declared_twice(tmp_path, name):
    distribution = node(tmp_path, name, binaries=["/opt/nvidia/toolkit/nvidia-container-runtime"])
    args = params(install_dir="/opt/nvidia/toolkit",
                  runtimes=[{"name": "nvidia", "binary": "/opt/nvidia/toolkit/nvidia-container-runtime"},
                            {"name": "nvidia-legacy", "binary": "/opt/nvidia/toolkit/nvidia-container-runtime.legacy"}])
    decided = provision(tmp_path, distribution, args)
    assert decided["extra_runtimes"] == ["nvidia-legacy"]
    assert any("adds runtime nvidia itself" in w for w in decided["warnings"])
    _config, data = restart(tmp_path, name)  # one nvidia table: it parses
    problems, notes = kd.generated_problems(decided["expected"], data)
    assert problems == [] and notes and notes[0].startswith("runtime nvidia runs ")
    assert provision(tmp_path, distribution, args)["writes"] == {}


def test_the_oldest_config_cannot_take_a_template_and_says_what_to_do(tmp_path):
    distribution = node(tmp_path, "03-k3s-v1-old.toml", binaries=[])
    with pytest.raises(kd.KubeError, match=r"no version key.*Install the toolkit in /usr/local/nvidia/toolkit"):
        provision(tmp_path, distribution, params(install_dir="/opt/nvidia/toolkit"))


def test_a_template_of_someone_else_is_left_alone_and_named(tmp_path):
    distribution = node(tmp_path, "01-k3s-v2.toml", binaries=[])
    template = kd.paths("k3s")["template"]
    Path(str(tmp_path) + template).write_text('{{ template "base" . }}\n# mine\n')
    # Nothing needed in it: it is not touched.
    assert provision(tmp_path, distribution, params())["writes"] == {}
    with pytest.raises(kd.KubeError, match=r"config.toml.tmpl exists and was not written by this collection"):
        provision(tmp_path, distribution, params(install_dir="/opt/nvidia/toolkit"))
    assert read(tmp_path, template) == '{{ template "base" . }}\n# mine\n'


def test_a_drop_in_of_someone_else_is_refused():
    found = found_on("k3s")
    with pytest.raises(kd.KubeError, match="was not written by this collection"):
        kd.plan(found, params(set_as_default=True), None, {}, "default-runtime: crun\n", {})


def test_runtimes_they_generate_go_nowhere_and_others_into_the_template():
    current = {"nvidia-cdi": "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi"}
    assert kd.generated_by_them("nvidia", "/usr/bin/nvidia-container-runtime", {})
    assert not kd.generated_by_them("nvidia-cdi", TOOLKIT + "/nvidia-container-runtime.cdi", {})
    assert kd.generated_by_them("nvidia-cdi", TOOLKIT + "/nvidia-container-runtime.cdi", current)
    assert not kd.generated_by_them("nvidia-legacy", TOOLKIT + "/nvidia-container-runtime.legacy", {})
    assert not kd.generated_by_them("nvidia", "/opt/x/nvidia-container-runtime", {})


def test_the_check_after_a_restart_names_what_is_missing():
    data = toml_edit.load((KUBE / "01-k3s-v2.toml").read_text(), "01")
    problems, _notes = kd.generated_problems({"runtimes": {"nvidia": TOOLKIT + "/nvidia-container-runtime"},
                                             "default": "nvidia"}, data)
    assert problems == ["runtime nvidia is missing", "default_runtime_name is None, not 'nvidia'"]
    data = toml_edit.load((KUBE / "02-k3s-v2-registry-extraruntimes.toml").read_text(), "02")
    problems, notes = kd.generated_problems({"runtimes": {"nvidia": TOOLKIT + "/nvidia-container-runtime"},
                                            "default": None}, data)
    assert problems == [] and notes == ["runtime nvidia runs /usr/bin/nvidia-container-runtime, not "
                                        "/usr/local/nvidia/toolkit/nvidia-container-runtime (found first in its search path)"]
