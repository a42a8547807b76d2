# -*- coding: utf-8 -*-
"""Pure decisions for the toolkit's config.toml: path, ldconfig, low-level runtimes, settings."""

from __future__ import annotations

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_config as tc

COS_ROOT = "/home/kubernetes/bin/nvidia"


def test_default_path():
    assert tc.default_path("/home/kubernetes/bin/nvidia/toolkit") == \
        "/home/kubernetes/bin/nvidia/toolkit/.config/nvidia-container-runtime/config.toml"
    assert tc.default_path("usr/local/nvidia/toolkit/") == \
        "/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml"


def test_ldconfig_candidates():
    assert tc.ldconfig_candidates("/") == ["/sbin/ldconfig.real", "/sbin/ldconfig"]
    assert tc.ldconfig_candidates("/run/nvidia/driver") == [
        "/sbin/ldconfig.real", "/sbin/ldconfig",
        "/run/nvidia/driver/sbin/ldconfig.real", "/run/nvidia/driver/sbin/ldconfig",
        "/run/nvidia/driver/etc/ld.so.cache",
    ]


@pytest.mark.parametrize("requested, driver_root, existing, expected", [
    # COS: only the host's /sbin/ldconfig; the driver dir has no sbin/.
    ("auto", COS_ROOT, ["/sbin/ldconfig"], ("@/sbin/ldconfig", "the host's /sbin/ldconfig")),
    # Debian/Ubuntu: ldconfig.real wins.
    ("auto", "/", ["/sbin/ldconfig.real", "/sbin/ldconfig"], ("@/sbin/ldconfig.real", "the host's /sbin/ldconfig.real")),
    # Nothing found: still the host's, never the driver root's.
    ("auto", COS_ROOT, [], ("@/sbin/ldconfig", "default (no ldconfig found on the host)")),
    # A driver root with an ldconfig but no ld.so.cache is not a full filesystem.
    ("auto", COS_ROOT, ["/sbin/ldconfig", COS_ROOT + "/sbin/ldconfig"], ("@/sbin/ldconfig", "the host's /sbin/ldconfig")),
    # A driver container: a full filesystem with its own ldconfig.
    ("auto", "/run/nvidia/driver",
     ["/sbin/ldconfig", "/run/nvidia/driver/etc/ld.so.cache", "/run/nvidia/driver/sbin/ldconfig"],
     ("@/run/nvidia/driver/sbin/ldconfig", "driver root /run/nvidia/driver is a full filesystem with /sbin/ldconfig")),
    # A full filesystem without ldconfig: the host's.
    ("auto", "/run/nvidia/driver", ["/sbin/ldconfig.real", "/run/nvidia/driver/etc/ld.so.cache"],
     ("@/sbin/ldconfig.real", "the host's /sbin/ldconfig.real")),
    ("@/usr/sbin/ldconfig", "/", [], ("@/usr/sbin/ldconfig", "ldconfig option")),
    (None, "/", ["/sbin/ldconfig"], ("@/sbin/ldconfig", "the host's /sbin/ldconfig")),
])
def test_choose_ldconfig(requested, driver_root, existing, expected):
    assert tc.choose_ldconfig(requested, driver_root, existing) == expected


@pytest.mark.parametrize("requested, runc_binary, expected", [
    (None, None, ["runc", "crun"]),
    ([], "/usr/bin/runc", ["/usr/bin/runc"]),
    (["crun"], "/usr/bin/runc", ["crun"]),
])
def test_low_level_runtimes(requested, runc_binary, expected):
    assert tc.low_level_runtimes(requested, runc_binary) == expected


def test_merge_is_recursive_and_pure():
    base = {"a": {"b": 1, "c": 2}, "d": 3}
    extra = {"a": {"c": 20, "e": {"f": 1}}, "g": 4}
    assert tc.merge(base, extra) == {"a": {"b": 1, "c": 20, "e": {"f": 1}}, "d": 3, "g": 4}
    assert base == {"a": {"b": 1, "c": 2}, "d": 3}
    assert tc.merge(base, None) == base


def test_wanted_settings_cos():
    wanted = tc.wanted_settings(COS_ROOT + "/toolkit", COS_ROOT, "@/sbin/ldconfig")
    assert wanted == {
        "nvidia-container-cli": {
            "root": COS_ROOT,
            "path": COS_ROOT + "/toolkit/nvidia-container-cli",
            "ldconfig": "@/sbin/ldconfig",
            "load-kmods": True,
        },
        "nvidia-container-runtime": {"mode": "auto", "runtimes": ["runc", "crun"]},
        "nvidia-container-runtime-hook": {
            "path": COS_ROOT + "/toolkit/nvidia-container-runtime-hook",
            "skip-mode-detection": True,
        },
        "nvidia-ctk": {"path": COS_ROOT + "/toolkit/nvidia-ctk"},
    }


def test_wanted_settings_cdi_and_settings():
    wanted = tc.wanted_settings(
        "/usr/local/nvidia/toolkit", "/", "@/sbin/ldconfig.real", mode="cdi", runtimes=["/usr/bin/runc"],
        default_kind="nvidia.com/gpu", annotation_prefixes=["cdi.k8s.io/"], spec_dirs=["/etc/cdi", "var/run/cdi"],
        settings={"nvidia-container-cli": {"load-kmods": False, "debug": "/var/log/cli.log"}, "top": 1},
    )
    runtime = wanted["nvidia-container-runtime"]
    assert runtime["mode"] == "cdi" and runtime["runtimes"] == ["/usr/bin/runc"]
    assert runtime["modes"]["cdi"] == {
        "default-kind": "nvidia.com/gpu", "annotation-prefixes": ["cdi.k8s.io/"], "spec-dirs": ["/etc/cdi", "/var/run/cdi"],
    }
    assert wanted["nvidia-container-cli"]["load-kmods"] is False
    assert wanted["nvidia-container-cli"]["debug"] == "/var/log/cli.log"
    assert wanted["top"] == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "gpu"}, "mode must be one of auto, cdi, legacy, csv"),
    ({"default_kind": "gpu"}, "default_kind must look like vendor.com/class"),
    ({"settings": ["x"]}, "settings must be a dict"),
])
def test_wanted_settings_bad(kwargs, message):
    with pytest.raises(tc.ToolkitConfigError, match=message):
        tc.wanted_settings("/t", "/", "@/sbin/ldconfig", **kwargs)


def test_flatten():
    assert tc.flatten({"a": {"b": 1, "c": {"d": [1]}}, "e": {}, "f": "x"}) == [
        (("a", "b"), 1), (("a", "c", "d"), [1]), (("e",), {}), (("f",), "x"),
    ]


def test_driver_root_probes():
    assert tc.driver_root_probes("/home/kubernetes/bin/nvidia") == []
    probes = tc.driver_root_probes("auto")
    assert probes[0] == "/run/nvidia/driver/lib64/libcuda.so.1"
    assert "/home/kubernetes/bin/nvidia/lib64/libcuda.so.1" in probes
    assert probes[-1] == "/lib/libcuda.so.1"
    assert len(probes) == len(set(probes)) == 32


@pytest.mark.parametrize("existing, expected", [
    (["/home/kubernetes/bin/nvidia/lib64/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"], COS_ROOT),
    (["/usr/lib/x86_64-linux-gnu/libcuda.so.1"], "/"),
    # A driver container's tree wins over the host's own libraries, as nvidia_driver_info decides.
    (["/usr/lib64/libcuda.so.1", "/run/nvidia/driver/usr/lib64/libcuda.so.1"], "/run/nvidia/driver"),
])
def test_choose_driver_root_auto(existing, expected):
    root, source = tc.choose_driver_root("auto", existing)
    assert root == expected
    assert source.startswith("auto: found %s" % (expected.rstrip("/") + "/"))


def test_choose_driver_root_explicit_and_none_found():
    assert tc.choose_driver_root("home/kubernetes/bin/nvidia/", []) == (COS_ROOT, "driver_root option")
    with pytest.raises(tc.ToolkitConfigError,
                       match=r"driver_root=auto found no libcuda\.so\.1 under /run/nvidia/driver, .*set driver_root"):
        tc.choose_driver_root("auto", ["/usr/lib/x86_64-linux-gnu/libcuda.so"])


def test_ldconfig_candidates_for_auto_cover_every_driver_root():
    paths = tc.ldconfig_candidates("auto")
    assert paths[:2] == ["/sbin/ldconfig.real", "/sbin/ldconfig"]
    assert "/run/nvidia/driver/etc/ld.so.cache" in paths
    assert "/var/lib/nvidia/sbin/ldconfig" in paths
    assert len(paths) == 2 + 3 * 3
