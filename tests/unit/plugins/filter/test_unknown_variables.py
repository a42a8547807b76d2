# -*- coding: utf-8 -*-
"""unknown_variables: a misspelled role variable is named with the one meant."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_node.container_toolkit.plugins.filter.unknown_variables import (
    FilterModule,
    edit_distance,
    unknown_variables,
)

KNOWN = ["gpu_node_set_as_default", "gpu_node_containerd_restart_mode", "gpu_node_crio_restart_mode"]


def test_typos_are_named_with_the_closest_known_name_and_the_rest_pass():
    names = ["gpu_node_set_as_defualt", "gpu_node_set_as_default", "gpu_node_containerd_restart_mod", "gpu_node_zzz"]
    assert unknown_variables(names, KNOWN) == [
        "gpu_node_containerd_restart_mod (did you mean gpu_node_containerd_restart_mode?)",
        "gpu_node_set_as_defualt (did you mean gpu_node_set_as_default?)",
        "gpu_node_zzz",
    ]


def test_allowed_entries_match_whole_names_as_regular_expressions():
    names = ["gpu_node_rack", "gpu_node_verify_row", "gpu_node_racks"]
    assert unknown_variables(names, KNOWN, ["gpu_node_rack", "gpu_node_verify_.*"]) == ["gpu_node_racks"]


@pytest.mark.parametrize("args, words", [
    (("gpu_node_x", KNOWN), "lists of names"),
    ((["gpu_node_x"], KNOWN, ["("]), "not a regular expression"),
])
def test_wrong_arguments_are_refused(args, words):
    with pytest.raises(AnsibleFilterError, match=words):
        unknown_variables(*args)


def test_the_filter_is_registered():
    assert FilterModule().filters() == {"unknown_variables": unknown_variables}


@pytest.mark.parametrize("first, second, distance", [
    ("", "abc", 3), ("abc", "abc", 0), ("ab", "ba", 1), ("kitten", "sitting", 3),
    ("docker_restart_mdoe", "docker_restart_mode", 1), ("docker_service_state", "docker_service", 6),
])
def test_edit_distance(first, second, distance):
    swapped = {"first": second, "second": first}
    assert edit_distance(first, second) == distance == edit_distance(**swapped)


def test_typos_only_names_near_misses_and_leaves_other_roles_names_alone():
    known = ["docker_restart_mode", "docker_service", "docker_config_path", "docker_runtime_result"]
    names = ["docker_restart_mod", "docker_confg_path", "docker_servcie",
             # geerlingguy.docker's, in the same play: not ours, not typos of ours
             "docker_service_state", "docker_users", "docker_edition", "docker_runtime_result"]
    assert unknown_variables(names, known, [], True) == [
        "docker_confg_path (did you mean docker_config_path?)",
        "docker_restart_mod (did you mean docker_restart_mode?)",
        "docker_servcie (did you mean docker_service?)"]
    assert unknown_variables(names, known, ["docker_servcie"], True) == [
        "docker_confg_path (did you mean docker_config_path?)",
        "docker_restart_mod (did you mean docker_restart_mode?)"]
