# -*- coding: utf-8 -*-
"""Pure decisions about containerd configs: versions, CRI tables, templates, drop-ins."""

from __future__ import annotations

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt


@pytest.mark.parametrize("version, table", [
    (1, ("plugins", "cri")),
    (2, ("plugins", "io.containerd.grpc.v1.cri")),
    (3, ("plugins", "io.containerd.cri.v1.runtime")),
    (4, ("plugins", "io.containerd.cri.v1.runtime")),
])
def test_cri_table(version, table):
    assert cc.cri_table(version) == table
    assert cc.runtimes_table(version) == table + ("containerd", "runtimes")


@pytest.mark.parametrize("bad", [0, 5, None, "2"])
def test_cri_table_unknown(bad):
    with pytest.raises(cc.ConfigError, match="not supported"):
        cc.cri_table(bad)


def test_dotted():
    assert cc.dotted(cc.containerd_table(2)) == 'plugins."io.containerd.grpc.v1.cri".containerd'
    assert cc.dotted(("plugins", "cri")) == "plugins.cri"


@pytest.mark.parametrize("value, expected", [(None, 1), (1, 1), (2, 2), (3, 3), (4, 4)])
def test_file_version(value, expected):
    assert cc.file_version(value) == expected


@pytest.mark.parametrize("value, message", [
    (5, "version 5 is not supported"),
    (True, "must be an integer"),
    ("2", "must be an integer"),
    (2.0, "must be an integer"),
])
def test_file_version_bad(value, message):
    with pytest.raises(cc.ConfigError, match=message):
        cc.file_version(value)


@pytest.mark.parametrize("output, release", [
    ("containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3\n", (1, 6)),
    ("containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da", (1, 7)),
    ("containerd github.com/containerd/containerd/v2 v2.0.11 abcdef", (2, 0)),
    ("containerd github.com/containerd/containerd/v2 v2.3.4 abcdef", (2, 3)),
    ("", None),
    (None, None),
    ("   \n", None),
    ("containerd: command not found", None),
])
def test_containerd_release(output, release):
    assert cc.containerd_release(output) == release


@pytest.mark.parametrize("release, version", [((1, 6), 2), ((1, 7), 2), ((2, 0), 3), ((2, 2), 3), ((2, 3), 4), ((3, 0), 4)])
def test_version_for_release(release, version):
    assert cc.version_for_release(release) == version


@pytest.mark.parametrize("requested, declared, empty, output, expected", [
    ("auto", 2, False, None, (2, "file")),
    ("auto", None, False, None, (1, "file (no version key means 1)")),
    ("3", 3, False, None, (3, "file")),
    ("auto", None, True, "containerd x/containerd/v2 v2.1.0 a", (3, "containerd 2.1 on the node")),
    ("auto", None, True, "containerd github.com/containerd/containerd 1.6.20~ds1 x", (2, "containerd 1.6 on the node")),
    ("auto", None, True, None, (2, "default (containerd not found on the node)")),
    ("4", None, True, "containerd x 1.6.20 y", (4, "config_version option")),
    (None, None, True, None, (2, "default (containerd not found on the node)")),
])
def test_choose_version(requested, declared, empty, output, expected):
    assert cc.choose_version(requested, declared, empty, output) == expected


def test_choose_version_mismatch_is_refused():
    with pytest.raises(cc.ConfigError, match="does not migrate"):
        cc.choose_version("3", 2, False)


def test_choose_version_unknown_requested():
    with pytest.raises(cc.ConfigError):
        cc.choose_version("7", None, True)


def test_default_runtimes():
    assert rt.default_runtimes("/home/kubernetes/bin/nvidia/toolkit") == [
        {"name": "nvidia", "binary": "/home/kubernetes/bin/nvidia/toolkit/nvidia-container-runtime"},
        {"name": "nvidia-cdi", "binary": "/home/kubernetes/bin/nvidia/toolkit/nvidia-container-runtime.cdi"},
        {"name": "nvidia-legacy", "binary": "/home/kubernetes/bin/nvidia/toolkit/nvidia-container-runtime.legacy"},
    ]


def test_normalize_runtimes():
    assert rt.normalize_runtimes(None, "/x") == rt.default_runtimes("/x")
    assert rt.normalize_runtimes([], "/x") == rt.default_runtimes("/x")
    given = [{"name": "gpu", "binary": "/opt/bin/rt", "extra": 1}]
    assert rt.normalize_runtimes(given, "/x") == [{"name": "gpu", "binary": "/opt/bin/rt"}]


@pytest.mark.parametrize("runtimes, message", [
    ([{"name": "a"}], "needs 'name' and 'binary'"),
    ([{"binary": "/b"}], "needs 'name' and 'binary'"),
    ([{"name": "a", "binary": "/b"}, {"name": "a", "binary": "/c"}], "listed twice"),
])
def test_normalize_runtimes_bad(runtimes, message):
    with pytest.raises(cc.ConfigError, match=message):
        rt.normalize_runtimes(runtimes, "/x")


MANAGED = ["nvidia", "nvidia-cdi", "nvidia-legacy"]


def _runtimes(*names, **types):
    return {name: {"runtime_type": types.get(name.replace("-", "_"), cc.DEFAULT_RUNTIME_TYPE)} for name in names}


@pytest.mark.parametrize("runtimes, default, template", [
    (_runtimes("runc"), "runc", "runc"),
    (_runtimes("runc", "gvisor", gvisor="io.containerd.runsc.v1"), "gvisor", "runc"),  # not runc's options
    (_runtimes("runc", "kata", kata="io.containerd.kata-qemu.v2"), "kata", "runc"),
    (_runtimes("kata_qemu", "runc", kata_qemu="io.containerd.kata-qemu.v2"), "kata_qemu", "runc"),
    (_runtimes("runc", "custom"), "custom", "custom"),          # someone's runc-compatible default
    (_runtimes("runc", "nvidia"), "nvidia", "runc"),            # the default is ours: fall back to runc
    (_runtimes("crun"), None, "crun"),
    (_runtimes("crun", "runc"), "missing", "runc"),
    (_runtimes("kata", kata="io.containerd.kata.v2"), "kata", None),
    ({}, "runc", None),
    (_runtimes("nvidia"), "nvidia", "nvidia"),                  # an existing nvidia default, no runc
    (_runtimes("nvidia", "other"), "nvidia", "other"),
    ({"crun": {}}, None, "crun"),                                # no runtime_type: runc/crun by name only
    ({"weird": {}}, "weird", None),
    ({"runc": "not a table"}, "runc", None),
])
def test_choose_template(runtimes, default, template):
    assert cc.choose_template(runtimes, default, MANAGED) == template


@pytest.mark.parametrize("existing, default, needed", [
    ([], None, True),
    ([], "runc", True),
    (["runc"], "runc", False),
    ([], "kata", False),        # someone else's default: not ours to invent
    (["crun"], "crun", False),
])
def test_needs_default_entry(existing, default, needed):
    assert cc.needs_default_entry(existing, default, MANAGED) is needed


def test_needs_default_entry_when_runc_is_managed():
    assert cc.needs_default_entry([], "runc", ["runc"]) is False


@pytest.mark.parametrize("imports, covered", [
    ([], False),
    (None, False),
    (["/etc/containerd/conf.d/99-nvidia.toml"], True),
    (["/etc/containerd/conf.d/*.toml"], True),
    (["/etc/containerd/other.toml"], False),
])
def test_import_covered(imports, covered):
    assert cc.import_covered(imports, "/etc/containerd/conf.d/99-nvidia.toml") is covered


def test_check_drop_in():
    cc.check_drop_in("/etc/containerd/config.toml", "/etc/containerd/conf.d/x.toml")
    with pytest.raises(cc.ConfigError, match="root config itself"):
        cc.check_drop_in("/etc/containerd/config.toml", "/etc/containerd//config.toml")


@pytest.mark.parametrize("version, carries", [(1, True), (2, True), (3, True), (4, False)])
def test_drop_in_carries_cri_table(version, carries):
    assert cc.drop_in_carries_cri_table(version) is carries


def _params(**overrides):
    result = {"state": "present", "runtimes": rt.default_runtimes("/t"), "runtime_type": cc.DEFAULT_RUNTIME_TYPE,
              "set_as_default": False, "enable_cdi": None, "cdi_spec_dirs": None, "config_version": "auto",
              "drop_in": None, "container_annotations": []}
    result.update(overrides)
    return result


def _config(version=2, default="runc", runc=True, binary_suffix="", runtime_type=cc.DEFAULT_RUNTIME_TYPE, cri_extra=None):
    runtimes = {r["name"]: {"runtime_type": runtime_type, "options": {"BinaryName": r["binary"] + binary_suffix,
                                                                      "Runtime": r["binary"]}}
                for r in rt.default_runtimes("/t")}
    if runc:
        runtimes["runc"] = {"runtime_type": cc.DEFAULT_RUNTIME_TYPE}
    containerd = {"runtimes": runtimes}
    if default:
        containerd["default_runtime_name"] = default
    cri = dict(cri_extra or {}, containerd=containerd)
    data = {"plugins": {cc.cri_table(version)[1]: cri}}
    if version != 1:
        data["version"] = version
    return data


@pytest.mark.parametrize("data, params, done", [
    (_config(), _params(), True),
    (_config(version=1), _params(), True),
    (_config(version=4), _params(), True),
    (_config(binary_suffix=".old"), _params(), False),
    (_config(runtime_type="io.containerd.runc.v1"), _params(), False),
    (_config(runc=False), _params(), True),                     # the runtimes exist: nothing replaced
    (_config(runc=False, default="kata"), _params(), True),
    (_config(), _params(set_as_default=True), False),
    (_config(default="nvidia"), _params(set_as_default=True), True),
    (_config(), _params(enable_cdi=True), False),
    (_config(cri_extra={"enable_cdi": True}), _params(enable_cdi=True), True),
    (_config(cri_extra={"enable_cdi": 1}), _params(enable_cdi=True), False),
    (_config(cri_extra={"cdi_spec_dirs": ["/etc/cdi"]}), _params(cdi_spec_dirs=["/etc/cdi"]), True),
    (_config(), _params(container_annotations=["cdi.k8s.io/*"]), False),
    ({}, _params(), False),
    ({"version": 2}, _params(), False),
])
def test_plan_present_is_empty_only_when_done(data, params, done):
    version = cc.file_version(data.get("version")) if data else 2
    ops = cc.plan_present(data, version, params)
    assert (ops == []) is done
    assert cc.plan_present(cc.apply_ops(data, ops), version, params) == []


def test_plan_present_runc_entry_only_where_the_default_would_vanish():
    ops = cc.plan_present({"version": 2}, 2, _params())
    assert ops[0][:2] == ("table", cc.runtimes_table(2) + ("runc",))
    kata = {"version": 2, "plugins": {cc.cri_table(2)[1]: {"containerd": {"default_runtime_name": "kata"}}}}
    assert all(op[1][-1] != "runc" for op in cc.plan_present(kata, 2, _params()))


def test_plan_present_legacy_default_runtime_table():
    """containerd 1.x registers a v1 [default_runtime] table as runtime "default" and uses it."""
    data = {"plugins": {"cri": {"containerd": {"default_runtime_name": "runc", "default_runtime": {
        "runtime_type": "io.containerd.runtime.v1.linux", "options": {"SystemdCgroup": True}}}}}}
    ops = cc.plan_present(data, 1, _params(set_as_default=True))
    new = cc.apply_ops(data, ops)
    containerd = new["plugins"]["cri"]["containerd"]
    assert containerd["default_runtime_name"] == "runc"        # ignored by containerd there: left alone
    assert containerd["default_runtime"]["options"]["BinaryName"] == "/t/nvidia-container-runtime"
    assert containerd["default_runtime"]["options"]["SystemdCgroup"] is True
    assert containerd["runtimes"]["nvidia"]["options"]["SystemdCgroup"] is True   # inherited from it
    assert "default" not in containerd["runtimes"]


def test_plan_present_existing_runtime_not_a_table():
    data = {"version": 2, "plugins": {cc.cri_table(2)[1]: {"containerd": {"runtimes": {"nvidia": "x"}}}}}
    with pytest.raises(cc.ConfigError, match="must be a table"):
        cc.plan_present(data, 2, _params())


def test_ignored_cri_tables():
    data = {"version": 2, "plugins": {"io.containerd.cri.v1.runtime": {"containerd": {}}, "io.containerd.grpc.v1.cri": {}}}
    assert cc.ignored_cri_tables(data, 2) == [("plugins", "io.containerd.cri.v1.runtime")]
    assert cc.ignored_cri_tables(data, 3) == []
    assert cc.ignored_cri_tables({"plugins": {"io.containerd.grpc.v1.cri": {"containerd": {}}}}, 1) == \
        [("plugins", "io.containerd.grpc.v1.cri")]
