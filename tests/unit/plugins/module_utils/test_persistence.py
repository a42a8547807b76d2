# -*- coding: utf-8 -*-
"""What the directory kept across reboots holds, and the steps to get it there (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config as dc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal as ej
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import persistence as ps
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "containerd"
DOCKER_FIXTURES = FIXTURES.parent / "docker"
DOCKER_CONFIG = "/etc/docker/daemon.json"
DOCKER_JOURNAL = "/etc/docker/.daemon.json.gpu_node.container_toolkit.json"


def provisioned(text):
    params = {
        "state": "present", "runtimes": rt.default_runtimes("/home/kubernetes/bin/nvidia/toolkit"),
        "runtime_type": cc.DEFAULT_RUNTIME_TYPE, "set_as_default": True, "enable_cdi": True, "cdi_spec_dirs": None,
        "config_version": "auto", "drop_in": None, "path": "/etc/containerd/config.toml",
    }
    return ct.edit(text, params)["text"]


def docker_provisioned(original):
    """``(daemon.json, journal)`` as docker_runtime writes them over ``original`` (None: no file)."""
    params = {"state": "present", "runtimes": rt.normalize_runtimes(None, "/home/kubernetes/bin/nvidia/toolkit", dc.RESERVED_RUNTIME_NAMES),
              "set_as_default": False, "enable_cdi": True, "created_dirs": ["/etc/docker"] if original is None else [],
              "path": DOCKER_CONFIG}
    plan = dc.plan(original, params, None, name=DOCKER_CONFIG)
    assert plan["text"] != original and plan["journal_text"]
    return plan["text"], plan["journal_text"]


@pytest.mark.parametrize("host_path, expected", [
    ("/var/run/cdi/management.nvidia.com-gpu.yaml", "cdi/var/run/cdi/management.nvidia.com-gpu.yaml"),
    ("/etc/cdi/nvidia.json", "cdi/etc/cdi/nvidia.json"),
    ("//etc//cdi/./x/../nvidia.json", "cdi/etc/cdi/nvidia.json"),
    ("/x.yaml", "cdi/x.yaml"),
])
def test_spec_copy_name(host_path, expected):
    assert ps.spec_copy_name(host_path) == expected


def test_nothing_wanted_without_sources():
    assert ps.wanted_files(None, "/etc/containerd/config.toml", {}, {}, []) == {}


def test_a_config_without_journal_is_kept_without_a_base():
    text = (FIXTURES / "gke-cos.toml").read_text()
    assert ps.wanted_files(text, "/etc/containerd/config.toml", {}, {}, []) == {
        ps.PROVISIONED_CONFIG: (text.encode("utf-8"), 0o644)}


@pytest.mark.parametrize("original", [
    (FIXTURES / "gke-cos.toml").read_text(),
    (FIXTURES / "containerd-2.3.4-default.toml").read_text().replace("\n", "\r\n"),
    (FIXTURES / "containerd-1.7.34-default.toml").read_text().rstrip("\n"),
], ids=["gke-cos", "crlf", "no-final-newline"])
def test_a_journaled_config_is_kept_with_the_config_it_started_from(original):
    text = provisioned(original)
    assert text != original and ej.has_journal(text)
    wanted = ps.wanted_files(text, "/etc/containerd/config.toml", {}, {}, [])
    assert wanted == {
        ps.PROVISIONED_CONFIG: (text.encode("utf-8"), ps.FILE_MODE),
        ps.BASE_CONFIG: (original.encode("utf-8"), ps.FILE_MODE),
    }


def test_specs_and_files_with_their_modes():
    spec = b"cdiVersion: 0.5.0\nkind: management.nvidia.com/gpu\n"
    wanted = ps.wanted_files(None, "", {"/var/run/cdi/m.yaml": spec},
                             {"reapply.sh": "#!/bin/sh\n", "driver-version": "535.104.12\n", "é": "☃"}, ["reapply.sh"])
    assert wanted == {
        "cdi/var/run/cdi/m.yaml": (spec, 0o644),
        "reapply.sh": (b"#!/bin/sh\n", 0o755),
        "driver-version": (b"535.104.12\n", 0o644),
        "é": ("☃".encode(), 0o644),
    }


def test_a_damaged_journal_is_an_error_naming_the_config():
    text = "version = 2\n%s\n[plugins]\n" % ej.BEGIN
    with pytest.raises(ej.JournalError, match=r"^/etc/containerd/config.toml, line 2: .*no end marker"):
        ps.wanted_files(text, "/etc/containerd/config.toml", {}, {}, [])


def test_docker_journal_path_is_the_one_docker_runtime_uses():
    assert dc.journal_path(DOCKER_CONFIG) == DOCKER_JOURNAL


@pytest.mark.parametrize("original", [
    (DOCKER_FIXTURES / "docker-docs-logging.json").read_text(),
    (DOCKER_FIXTURES / "one-line.json").read_text().replace("\n", "\r\n"),
    "",  # an empty file: dockerd refuses it, yet it is what the boot writes and what goes back
], ids=["docs-logging", "crlf", "empty"])
def test_a_journaled_daemon_json_is_kept_with_its_journal_and_the_original(original):
    text, journal = docker_provisioned(original)
    wanted = ps.wanted_files(None, "", {}, {}, [], text.encode("utf-8"), journal, DOCKER_JOURNAL)
    assert wanted == {
        ps.DOCKER_PROVISIONED: (text.encode("utf-8"), ps.FILE_MODE),
        ps.DOCKER_JOURNAL: (journal.encode("utf-8"), 0o600),
        ps.DOCKER_BASE: (original.encode("utf-8"), ps.FILE_MODE),
    }


def test_a_daemon_json_the_module_created_is_kept_with_the_marker_that_there_was_none():
    text, journal = docker_provisioned(None)
    wanted = ps.wanted_files(None, "", {}, {}, [], text.encode("utf-8"), journal, DOCKER_JOURNAL)
    assert wanted == {
        ps.DOCKER_PROVISIONED: (text.encode("utf-8"), ps.FILE_MODE),
        ps.DOCKER_JOURNAL: (journal.encode("utf-8"), 0o600),
        ps.DOCKER_BASE_MISSING: (ps.DOCKER_BASE_MISSING_TEXT.encode("utf-8"), ps.FILE_MODE),
    }


@pytest.mark.parametrize("journal", [None, "", " \n"], ids=["missing", "empty", "blank"])
def test_a_daemon_json_without_journal_is_kept_without_a_base(journal):
    data = b'{\n  "log-level": "warn"\n}\n'
    assert ps.wanted_files(None, "", {}, {}, [], data, journal, DOCKER_JOURNAL) == {
        ps.DOCKER_PROVISIONED: (data, ps.FILE_MODE)}


def test_no_daemon_json_keeps_nothing_of_docker_even_with_a_journal():
    _text, journal = docker_provisioned("{}\n")
    assert ps.wanted_files(None, "", {}, {}, [], None, journal, DOCKER_JOURNAL) == {}


def test_both_engines_are_kept_side_by_side():
    containerd = provisioned((FIXTURES / "gke-cos.toml").read_text())
    docker, journal = docker_provisioned("{}\n")
    wanted = ps.wanted_files(containerd, "/etc/containerd/config.toml", {}, {}, [], docker.encode(), journal, DOCKER_JOURNAL)
    assert sorted(wanted) == sorted([ps.PROVISIONED_CONFIG, ps.BASE_CONFIG, ps.DOCKER_PROVISIONED, ps.DOCKER_JOURNAL,
                                     ps.DOCKER_BASE])


@pytest.mark.parametrize("journal", ["{not json", '{"format": 1}', '{"format": 1, "edits": [], "original": 3}', "[]"])
def test_a_damaged_docker_journal_is_an_error_naming_it(journal):
    with pytest.raises(dc.ConfigError, match=r"^%s is not a journal this module wrote" % DOCKER_JOURNAL):
        ps.wanted_files(None, "", {}, {}, [], b"{}\n", journal, DOCKER_JOURNAL)


def test_plan_every_action_sorted_by_name():
    wanted = {"b-new": (b"1", 0o644), "a-same": (b"x", 0o644), "c-update": (b"new", 0o644), "d-chmod": (b"s", 0o755),
              "f-both": (b"new", 0o755)}
    current = {"a-same": (b"x", 0o644), "c-update": (b"old", 0o644), "d-chmod": (b"s", 0o644), "e-stale": (b"z", 0o644),
               "f-both": (b"old", 0o600)}
    assert ps.plan(wanted, current) == [
        ("b-new", "create"), ("c-update", "update"), ("d-chmod", "chmod"), ("e-stale", "remove"), ("f-both", "update"),
    ]


def test_plan_of_what_is_there_is_empty():
    files = {"x": (b"1", 0o644), "cdi/y": (b"", 0o644)}
    assert ps.plan(files, dict(files)) == []
    assert ps.plan({}, {}) == []
