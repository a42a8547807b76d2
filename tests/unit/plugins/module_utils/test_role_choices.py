# -*- coding: utf-8 -*-
"""The gpu_node role's choices from the look at a node: platform, engines, CDI refresh, problems."""

from __future__ import annotations

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.role_choices import (
    PLATFORMS,
    gpu_node_choices,
    truthy,
)

COS_LOOK = {"os_release_id": "cos", "systemd_running": True, "kernel_module_loaded": True, "driver_version": "550.54.15",
            "container_engines": {"containerd": {"version": "1.7.24"}}, "kubernetes_distribution": None}
SYSTEMD = {"platform": "auto", "container_engines": "auto", "state": "present", "cdi_enabled": True,
           "cdi_refresh": "auto", "driver_not_loaded": "fail", "host_root": "/nodes/n1",
           "containerd_restart_mode": "systemd", "docker_restart_mode": "systemd", "crio_restart_mode": "systemd"}


def look(**changes):
    return dict(COS_LOOK, **changes)


def settings(**changes):
    return dict(SYSTEMD, **changes)


@pytest.mark.parametrize("os_id, distribution, platform", [
    ("cos", "", "cos"), ("ubuntu", "", "ubuntu"), ("rocky", "", "rhel"), ("ol", "", "rhel"), ("flatcar", "", "flatcar"),
    ("", "Debian", "debian"), (" fedora ", "", "rhel"), ("arch", "", ""),
])
def test_the_platform_is_the_os_release_ids(os_id, distribution, platform):
    choices = gpu_node_choices(look(os_release_id=os_id), settings(), distribution=distribution)
    assert choices["platform"] == platform
    assert (choices["problems"] == []) == (platform in PLATFORMS)


def test_an_unknown_platform_names_the_id_the_node_root_and_the_setting():
    (problem,) = gpu_node_choices(look(os_release_id="arch"), settings())["problems"]
    assert problem == ("Cannot tell this node's platform (os-release ID 'arch' under /nodes/n1); set gpu_node_platform "
                       "to one of cos, debian, ubuntu, rhel, flatcar.")


def test_an_explicit_platform_wins_over_the_look():
    assert gpu_node_choices(look(), settings(platform="ubuntu"))["platform"] == "ubuntu"


@pytest.mark.parametrize("found, kube, setting, engines", [
    ({"containerd": {}}, None, "auto", ["containerd"]),
    ({"docker": {}, "crio": {}}, None, "auto", ["docker", "crio"]),
    ({}, None, "auto", ["containerd"]),
    ({"containerd": {}}, {"distribution": "k3s"}, "auto", ["containerd"]),
    ({"docker": {}}, {"distribution": "rke2"}, "auto", ["containerd", "docker"]),
    ({"docker": {}}, None, "containerd", ["containerd"]),
    ({}, None, ["docker", "crio"], ["docker", "crio"]),
])
def test_the_engines_are_those_set_or_those_found(found, kube, setting, engines):
    choices = gpu_node_choices(look(container_engines=found, kubernetes_distribution=kube),
                               settings(container_engines=setting))
    assert choices["engines"] == engines
    assert choices["problems"] == []


def test_an_unknown_engine_is_named():
    (problem,) = gpu_node_choices(look(), settings(container_engines=["containerd", "podman"]))["problems"]
    assert problem == "gpu_node_container_engines names 'podman', which is not one of containerd, docker, crio."


def test_only_the_chosen_engines_restart_settings_are_checked():
    choices = gpu_node_choices(look(systemd_running=False), settings(
        container_engines=["containerd", "crio"], containerd_restart_mode="command", containerd_restart_command=" ",
        docker_restart_mode="systemd", crio_restart_mode="systemd"), host="node7")
    containerd, crio = choices["problems"]
    assert containerd.startswith("gpu_node_containerd_restart_mode is 'command' but gpu_node_containerd_restart_command "
                                 "is empty.")
    assert crio.startswith("gpu_node_crio_restart_mode is 'systemd' (the default), but systemd is not PID 1 on node7")


@pytest.mark.parametrize("platform_id, systemd, setting, cdi_enabled, refresh", [
    ("cos", False, "auto", True, True),
    ("ubuntu", True, "auto", True, True),
    ("ubuntu", False, "auto", True, False),
    ("ubuntu", False, "yes", True, True),
    ("cos", True, False, True, False),
    ("cos", True, "auto", "false", False),
])
def test_cdi_refresh_is_on_for_cos_and_systemd_nodes_unless_set(platform_id, systemd, setting, cdi_enabled, refresh):
    choices = gpu_node_choices(look(os_release_id=platform_id, systemd_running=systemd),
                               settings(cdi_refresh=setting, cdi_enabled=cdi_enabled,
                                        containerd_restart_mode="none"))
    assert choices["cdi_refresh"] is refresh


def test_an_unloaded_driver_stops_the_run_unless_left_to_the_boot():
    unloaded = look(kernel_module_loaded=False)
    (problem,) = gpu_node_choices(unloaded, settings())["problems"]
    assert problem.startswith("The NVIDIA kernel module is not loaded on this node (driver 550.54.15 is on disk)")
    assert "gpu_node_driver_not_loaded=provision" in problem

    provision = gpu_node_choices(unloaded, settings(driver_not_loaded="provision"))
    assert provision["problems"] == [] and provision["left_to_boot"] is True

    (no_refresh,) = gpu_node_choices(unloaded, settings(driver_not_loaded="provision", cdi_refresh=False))["problems"]
    assert no_refresh == ("gpu_node_driver_not_loaded=provision leaves this node's CDI spec to the boot-time refresh, "
                          "but gpu_node_cdi_refresh is off here (False): turn it on, or load the driver and run again.")


@pytest.mark.parametrize("changes", [{"state": "absent"}, {"cdi_enabled": False}])
def test_an_unloaded_driver_does_not_matter_without_cdi_or_when_removing(changes):
    choices = gpu_node_choices(look(kernel_module_loaded=False), settings(**changes))
    assert choices["problems"] == [] and choices["left_to_boot"] is False


@pytest.mark.parametrize("value, truth", [
    ("yes", True), ("True", True), (" on ", True), ("1", True), (1, True), (True, True),
    ("no", False), ("false", False), ("", False), (0, False), (None, False), ("auto", False),
])
def test_settings_read_true_as_jinjas_bool_does(value, truth):
    assert truthy(value) is truth


@pytest.mark.parametrize("platform_id, engines, refresh_setting, kept, units", [
    ("cos", ["containerd", "docker", "crio"], "auto", ["containerd", "docker"], False),
    ("ubuntu", ["containerd", "docker"], "auto", [], True),
    ("ubuntu", ["containerd"], False, [], False),
])
def test_cos_keeps_the_engines_configs_and_other_nodes_get_refresh_units(
        platform_id, engines, refresh_setting, kept, units):
    choices = gpu_node_choices(look(os_release_id=platform_id), settings(container_engines=engines,
                                                                         cdi_refresh=refresh_setting))
    assert choices["kept_configs"] == kept
    assert choices["cdi_refresh_units"] is units


@pytest.mark.parametrize("changes, systemd, char_links_setting, char_links, in_place", [
    ({"nodes": [], "char_links": []}, True, "auto", True, True),
    ({"nodes": ["/dev/nvidiactl"], "char_links": []}, True, "auto", True, False),
    ({"nodes": [], "char_links": ["/dev/char/195:255"]}, True, "auto", True, False),
    ({"nodes": [], "char_links": ["/dev/char/195:255"]}, False, "auto", False, True),
    ({"nodes": [], "char_links": ["/dev/char/195:255"]}, False, "yes", True, False),
    (None, True, "auto", True, False),
])
def test_device_nodes_are_in_place_when_the_look_found_nothing_missing(
        changes, systemd, char_links_setting, char_links, in_place):
    choices = gpu_node_choices(look(device_node_changes=changes, systemd_running=systemd),
                               settings(dev_char_links=char_links_setting, containerd_restart_mode="none"))
    assert choices["dev_char_links"] is char_links
    assert choices["device_nodes_in_place"] is in_place
