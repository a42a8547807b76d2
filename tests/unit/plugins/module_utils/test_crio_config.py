# -*- coding: utf-8 -*-
"""crio_config: which settings CRI-O gives the low-level runtime, and the drop-in built from them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import crio_config as crio
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toml_edit

TOOLKIT = "/usr/local/nvidia/toolkit"
# One node's /etc/crio each (tests/fixtures/crio/SOURCES.md names the sources).
NODES = Path(__file__).resolve().parents[3] / "fixtures" / "crio" / "nodes"
RUNC = {"runtime_path": "", "runtime_type": "oci", "runtime_root": "/run/runc", "monitor_path": "/usr/bin/conmon",
        "monitor_cgroup": "system.slice", "monitor_env": ["PATH=/usr/bin"], "allowed_annotations": ["io.containers.trace-syscall"]}
CRUN = {"runtime_path": "/usr/bin/crun", "runtime_type": "oci", "runtime_root": "/run/crun", "monitor_cgroup": "pod"}


def conf(default=None, **handlers):
    runtime = {"runtimes": handlers}
    if default is not None:
        runtime["default_runtime"] = default
    return {"crio": {"runtime": runtime}}


def params(state="present", set_as_default=False, runtimes=None):
    return {"state": state, "set_as_default": set_as_default,
            "runtimes": rt.normalize_runtimes(runtimes, TOOLKIT)}


def test_read_order_is_the_main_file_then_the_drop_ins_in_lexical_order():
    assert crio.read_order("/etc/crio/crio.conf", ["/etc/crio/crio.conf.d/20-b.conf", "/etc/crio/crio.conf.d/10-a.conf",
                                                   "/etc/crio/crio.conf.d/sub/05-c"]) == [
        "/etc/crio/crio.conf", "/etc/crio/crio.conf.d/10-a.conf", "/etc/crio/crio.conf.d/20-b.conf",
        "/etc/crio/crio.conf.d/sub/05-c"]


def node_files(name):
    """A node of tests/fixtures/crio/nodes as the action hands it to plan: ``[(host path, data)]``
    in CRI-O's read order, parsed by the collection's own TOML reader."""
    root = NODES / name
    texts = {"/etc/crio/" + path.relative_to(root).as_posix(): path.read_text()
             for path in root.rglob("*") if path.is_file()}
    drop_ins = [path for path in texts if path != crio.DEFAULT_CONFIG]
    return [(path, toml_edit.load(texts[path], path)) for path in crio.read_order(crio.DEFAULT_CONFIG, drop_ins)
            if path in texts]


def test_runtimes_start_from_the_default_runtime():
    result = crio.plan([("/etc/crio/crio.conf", conf("runc", runc=dict(RUNC), crun=dict(CRUN)))], params())
    assert result["base"] == "runc" and result["default_runtime"] == "runc"
    assert result["base_sources"] == ["/etc/crio/crio.conf"] and result["notes"] == []
    nvidia = result["data"]["crio"]["runtime"]["runtimes"]["nvidia"]
    assert nvidia == dict(RUNC, runtime_path=TOOLKIT + "/nvidia-container-runtime", runtime_type="oci")
    assert set(result["data"]["crio"]["runtime"]["runtimes"]) == {"nvidia", "nvidia-cdi", "nvidia-legacy"}
    assert "default_runtime" not in result["data"]["crio"]["runtime"]


def test_a_later_files_runtime_table_replaces_the_earlier_one_whole():
    """CRI-O decodes each file with BurntSushi/toml, which makes a fresh handler for each key of the
    runtimes map: the keys crio.conf set for runc and the drop-in does not are gone."""
    files = [("/etc/crio/crio.conf", conf("runc", runc=dict(RUNC))),
             ("/etc/crio/crio.conf.d/10-cgroup.conf", conf(runc={"monitor_cgroup": "pod"}))]
    default, handlers, sources = crio.merge(files)
    assert default == "runc" and handlers == {"runc": {"monitor_cgroup": "pod"}}
    assert sources == {"runc": ["/etc/crio/crio.conf.d/10-cgroup.conf"]}
    result = crio.plan(files, params())
    assert result["base"] == "runc" and result["base_sources"] == ["/etc/crio/crio.conf.d/10-cgroup.conf"]
    assert result["data"]["crio"]["runtime"]["runtimes"]["nvidia"] == {
        "runtime_path": TOOLKIT + "/nvidia-container-runtime", "runtime_type": "oci", "monitor_cgroup": "pod"}


def test_a_scalar_key_takes_the_later_files_value_and_leaves_the_tables_alone():
    files = [("/etc/crio/crio.conf", conf("crun", crun=dict(CRUN), runc=dict(RUNC))),
             ("/etc/crio/crio.conf.d/50-runc-default.conf", conf("runc"))]
    default, handlers, sources = crio.merge(files)
    assert default == "runc"
    # A file that sets no table for a handler leaves the earlier one as it was.
    assert handlers == {"crun": CRUN, "runc": RUNC}
    assert sources == {"crun": ["/etc/crio/crio.conf"], "runc": ["/etc/crio/crio.conf"]}
    # An empty value is a value too: CRI-O then falls back to its built-in choice.
    unset = files + [("/etc/crio/crio.conf.d/60-unset.conf", conf(""))]
    assert crio.merge(unset)[0] is None and crio.plan(unset, params())["base"] == "crun"


def test_a_runtime_table_defined_in_three_files_is_the_last_ones():
    files = [("/etc/crio/crio.conf", conf("runc", runc=dict(RUNC))),
             ("/etc/crio/crio.conf.d/10-root.conf", conf(runc={"runtime_root": "/run/runc-10", "monitor_cgroup": "pod"})),
             ("/etc/crio/crio.conf.d/20-path.conf", conf(runc={"runtime_path": "/usr/local/bin/runc"})),
             ("/etc/crio/crio.conf.d/30-crun.conf", conf(crun=dict(CRUN)))]
    _default, handlers, sources = crio.merge(files)
    assert handlers["runc"] == {"runtime_path": "/usr/local/bin/runc"} and handlers["crun"] == CRUN
    assert sources == {"runc": ["/etc/crio/crio.conf.d/20-path.conf"], "crun": ["/etc/crio/crio.conf.d/30-crun.conf"]}
    result = crio.plan(files, params())
    assert result["data"]["crio"]["runtime"]["runtimes"]["nvidia"] == {
        "runtime_path": TOOLKIT + "/nvidia-container-runtime", "runtime_type": "oci"}
    header = crio.header(result["base"], result["base_sources"], [])
    assert "runc (/etc/crio/crio.conf.d/20-path.conf)" in header and "10-root.conf" not in header


def test_merge_leaves_the_parsed_files_as_they_were():
    earlier, later = {"runtime_root": "/run/runc"}, {"monitor_cgroup": "pod"}
    _default, handlers, _sources = crio.merge([("/a", conf(runc=earlier)), ("/b", conf(runc=later))])
    handlers["runc"]["runtime_path"] = "/x"
    assert earlier == {"runtime_root": "/run/runc"} and later == {"monitor_cgroup": "pod"}


def test_the_runtime_type_is_checked_on_the_table_crio_uses():
    """CRI-O checks runtime_type after reading every file: a table a later file replaced is never
    checked, the one in effect is, and the refusal names the file it comes from."""
    replaced = [("/etc/crio/crio.conf", conf(runc={"runtime_type": "shim"})),
                ("/etc/crio/crio.conf.d/10-runc.conf", conf(runc={"runtime_path": "/usr/bin/runc"}))]
    assert crio.merge(replaced)[1] == {"runc": {"runtime_path": "/usr/bin/runc"}}
    in_effect = [("/etc/crio/crio.conf", conf(runc={"runtime_path": "/usr/bin/runc"})),
                 ("/etc/crio/crio.conf.d/10-runc.conf", conf(runc={"runtime_type": "shim"}))]
    with pytest.raises(crio.ConfigError, match=re.escape("/etc/crio/crio.conf.d/10-runc.conf: crio.runtime.runtimes.runc.runtime_type is 'shim'")):
        crio.merge(in_effect)
    # A key of the wrong type is refused in any file: CRI-O's decoder reads them all.
    with pytest.raises(crio.ConfigError, match=re.escape("/etc/crio/crio.conf: crio.runtime.runtimes.runc.runtime_root is 1")):
        crio.merge([("/etc/crio/crio.conf", conf(runc={"runtime_root": 1}))] + replaced[1:])


def test_a_low_level_runtime_defined_with_no_keys_says_so():
    files = [("/etc/crio/crio.conf", conf(crun=dict(CRUN))),
             ("/etc/crio/crio.conf.d/10-crun.conf", conf("crun", crun={}))]
    result = crio.plan(files, params())
    assert result["base"] == "crun" and result["base_sources"] == ["/etc/crio/crio.conf.d/10-crun.conf"]
    assert result["data"]["crio"]["runtime"]["runtimes"]["nvidia"] == {
        "runtime_path": TOOLKIT + "/nvidia-container-runtime", "runtime_type": "oci"}
    assert result["notes"] == ["crun is defined with no keys in /etc/crio/crio.conf.d/10-crun.conf: "
                               "the runtimes start from CRI-O's built-in settings"]


# What CRI-O uses on each node of tests/fixtures/crio/nodes, worked out by hand from its files.
NODE_EXPECTED = {
    # crio.conf's runc has runtime_root = "/run/runc"; 50-runc-default.conf makes runc the default
    # and defines runc again with runtime_path only, so CRI-O's runc has no runtime_root.
    "nct-complex-plus-crio-50-runc-default": {
        "default_runtime": "runc",
        "base": "runc",
        "base_sources": ["/etc/crio/crio.conf.d/50-runc-default.conf"],
        "handlers": {
            "crun": {"runtime_path": "/usr/bin/crun", "runtime_type": "oci", "runtime_root": "/run/crun",
                     "monitor_path": "/usr/libexec/crio/conmon"},
            "runc": {"runtime_path": "/usr/bin/runc"},
        },
        "nvidia": {"runtime_path": TOOLKIT + "/nvidia-container-runtime", "runtime_type": "oci"},
    },
}


def test_every_real_node_has_its_expected_result():
    assert sorted(p.name for p in NODES.iterdir()) == sorted(NODE_EXPECTED)


@pytest.mark.parametrize("name", sorted(NODE_EXPECTED))
def test_a_real_node_gives_the_runtimes_crio_would_use(name):
    expected = NODE_EXPECTED[name]
    files = node_files(name)
    default, handlers, _sources = crio.merge(files)
    assert default == expected["default_runtime"] and handlers == expected["handlers"]
    result = crio.plan(files, params())
    assert result["base"] == expected["base"] and result["base_sources"] == expected["base_sources"]
    runtimes = result["data"]["crio"]["runtime"]["runtimes"]
    assert runtimes["nvidia"] == expected["nvidia"]
    assert runtimes["nvidia-cdi"] == dict(expected["nvidia"], runtime_path=TOOLKIT + "/nvidia-container-runtime.cdi")


def test_without_a_default_crun_then_runc_and_an_undefined_one_starts_from_nothing():
    assert crio.plan([("/c", conf(runc=dict(RUNC), crun=dict(CRUN)))], params())["base"] == "crun"
    assert crio.plan([("/c", conf(runc=dict(RUNC)))], params())["base"] == "runc"
    empty = crio.plan([], params())
    assert empty["base"] == "crun" and empty["base_sources"] == []
    assert empty["data"]["crio"]["runtime"]["runtimes"]["nvidia"] == {
        "runtime_path": TOOLKIT + "/nvidia-container-runtime", "runtime_type": "oci"}
    assert "CRI-O's built-in settings" in empty["notes"][0]


def test_a_default_that_is_ours_is_passed_over():
    files = [("/etc/crio/crio.conf", conf("nvidia", crun=dict(CRUN), nvidia={"runtime_path": "/x"}))]
    result = crio.plan(files, params(set_as_default=True))
    assert result["base"] == "crun" and result["data"]["crio"]["runtime"]["default_runtime"] == "nvidia"


def test_what_is_not_inherited():
    base = dict(CRUN, inherit_default_runtime=True, runtime_config_path="/etc/x.toml")
    nvidia = crio.plan([("/c", conf("crun", crun=base))], params())["data"]["crio"]["runtime"]["runtimes"]["nvidia"]
    assert "inherit_default_runtime" not in nvidia and "runtime_config_path" not in nvidia
    assert nvidia["runtime_path"].endswith("/nvidia-container-runtime")


def test_a_vm_default_runtime_is_refused():
    files = [("/etc/crio/crio.conf", conf("kata", kata={"runtime_path": "/usr/bin/kata", "runtime_type": "vm"}))]
    with pytest.raises(crio.ConfigError, match=r"low-level runtime kata \(/etc/crio/crio.conf\) is of runtime_type 'vm'"):
        crio.plan(files, params())


@pytest.mark.parametrize("table, words", [
    ({"runtime_path": 1}, "runtime_path is 1, where CRI-O takes a string"),
    ({"privileged_without_host_devices": "no"}, "privileged_without_host_devices is 'no', where CRI-O takes a boolean"),
    ({"monitor_env": "PATH=/bin"}, "monitor_env is 'PATH=/bin', where CRI-O takes a list"),
    ({"default_annotations": ["a"]}, "default_annotations is ['a'], where CRI-O takes a table"),
    ({"runtime_type": "shim"}, "runtime_type is 'shim', not one of oci, vm, pod"),
    ({"runtime_path": True}, "runtime_path is True, where CRI-O takes a string"),
])
def test_handlers_crio_would_refuse_are_refused_naming_file_and_key(table, words):
    with pytest.raises(crio.ConfigError, match=re.escape("/etc/crio/crio.conf.d/10-x.conf: crio.runtime.runtimes.runc")) as caught:
        crio.plan([("/etc/crio/crio.conf.d/10-x.conf", conf(runc=table))], params())
    assert words in str(caught.value)


@pytest.mark.parametrize("data, words", [
    ({"crio": {"runtime": "x"}}, "crio.runtime is not a table"),
    ({"crio": {"runtime": {"default_runtime": 1}}}, "default_runtime is 1, not a string"),
    ({"crio": {"runtime": {"runtimes": []}}}, "crio.runtime.runtimes is not a table"),
    ({"crio": {"runtime": {"runtimes": {"runc": "x"}}}}, "runtimes.runc is a str, not a table"),
])
def test_malformed_sections_are_refused(data, words):
    with pytest.raises(crio.ConfigError, match=words):
        crio.merge([("/etc/crio/crio.conf", data)])


def test_unknown_keys_of_the_low_level_runtime_are_kept():
    base = dict(RUNC, some_future_key=3)
    nvidia = crio.plan([("/c", conf("runc", runc=base))], params())["data"]["crio"]["runtime"]["runtimes"]["nvidia"]
    assert nvidia["some_future_key"] == 3


def test_absent_plans_nothing():
    assert crio.plan([("/c", conf(runc=dict(RUNC)))], params("absent"))["data"] is None


def test_header_marks_the_file_and_records_created_directories():
    text = crio.header("crun", ["/etc/crio/crio.conf.d/10-crun.conf"], ["/etc/crio", "/etc/crio/crio.conf.d"])
    assert crio.is_ours(text) and crio.is_ours(text.replace("\n", "\r\n"))
    assert crio.created_dirs_of(text) == ["/etc/crio", "/etc/crio/crio.conf.d"]
    # a drop-in written by an earlier release (its own record form) is still read
    assert crio.created_dirs_of(crio.MARK + "\n# created directories: /etc/crio/crio.conf.d /etc/crio\n") == [
        "/etc/crio/crio.conf.d", "/etc/crio"]
    assert crio.created_dirs_of(crio.header("crun", [], [])) == []
    assert "CRI-O's built-in" in crio.header("crun", [], [])
    assert not crio.is_ours("[crio.runtime]\n") and not crio.is_ours(None) and not crio.is_ours("")


def test_drop_in_dir_and_custom_runtimes():
    assert crio.drop_in_dir("/etc/crio/crio.conf.d/99-nvidia.toml") == "/etc/crio/crio.conf.d"
    custom = params(runtimes=[{"name": "gpu", "binary": "/opt/bin/nvidia-container-runtime"}], set_as_default=True)
    data = crio.plan([], custom)["data"]
    assert data == {"crio": {"runtime": {"default_runtime": "gpu", "runtimes": {
        "gpu": {"runtime_path": "/opt/bin/nvidia-container-runtime", "runtime_type": "oci"}}}}}
    with pytest.raises(crio.ConfigError):
        rt.normalize_runtimes([{"name": "", "binary": "x"}], TOOLKIT)


def test_a_pod_runtime_keeps_its_type_and_monitor():
    crun = {"runtime_type": "pod", "monitor_path": "/usr/libexec/crio/conmonrs", "runtime_root": "/run/crun"}
    nvidia = crio.plan([("/c", conf("crun", crun=crun))], params())["data"]["crio"]["runtime"]["runtimes"]["nvidia"]
    assert nvidia["runtime_type"] == "pod" and nvidia["monitor_path"] == "/usr/libexec/crio/conmonrs"


def test_the_header_reads_back_the_same_whatever_order_the_directories_came_in():
    first = crio.header("crun", [], ["/etc/crio", "/etc/crio/crio.conf.d"])
    assert crio.header("crun", [], crio.created_dirs_of(first)) == first
