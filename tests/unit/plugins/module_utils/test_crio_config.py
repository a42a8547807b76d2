# -*- coding: utf-8 -*-
"""crio_config: which settings CRI-O gives the low-level runtime, and the drop-in built from them."""

from __future__ import annotations

import re

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import crio_config as crio
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt

TOOLKIT = "/usr/local/nvidia/toolkit"
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


def test_runtimes_start_from_the_default_runtime_merged_over_every_file():
    files = [("/etc/crio/crio.conf", conf("runc", runc=dict(RUNC))),
             ("/etc/crio/crio.conf.d/10-cgroup.conf", conf(runc={"monitor_cgroup": "pod"}))]
    result = crio.plan(files, params())
    assert result["base"] == "runc" and result["default_runtime"] == "runc"
    assert result["base_sources"] == ["/etc/crio/crio.conf", "/etc/crio/crio.conf.d/10-cgroup.conf"]
    nvidia = result["data"]["crio"]["runtime"]["runtimes"]["nvidia"]
    assert nvidia["runtime_path"] == TOOLKIT + "/nvidia-container-runtime" and nvidia["runtime_type"] == "oci"
    assert nvidia["monitor_cgroup"] == "pod"  # the later file wins
    assert nvidia["runtime_root"] == "/run/runc" and nvidia["monitor_env"] == ["PATH=/usr/bin"]
    assert set(result["data"]["crio"]["runtime"]["runtimes"]) == {"nvidia", "nvidia-cdi", "nvidia-legacy"}
    assert "default_runtime" not in result["data"]["crio"]["runtime"]


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
