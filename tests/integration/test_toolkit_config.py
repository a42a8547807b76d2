# -*- coding: utf-8 -*-
"""toolkit_config through real ansible on fake GPU nodes."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit
from ansible_runner import run_module

COS_ROOT = "/home/kubernetes/bin/nvidia"
COS_TOOLKIT = COS_ROOT + "/toolkit"
COS_CONFIG = COS_TOOLKIT + "/.config/nvidia-container-runtime/config.toml"


def test_cos_node_done_when(cos_node):
    """root is the COS driver dir, ldconfig the host's /sbin/ldconfig; check, real, check, real."""
    args = {"host_root": str(cos_node.root), "install_dir": COS_TOOLKIT, "driver_root": COS_ROOT}
    results = [run_module("toolkit_config", args, check=check) for check in (True, False, True, False)]
    assert [r["_rc"] for r in results] == [0, 0, 0, 0], results
    assert [r["changed"] for r in results] == [True, True, False, False]
    assert results[1]["path"] == COS_CONFIG
    assert results[1]["ldconfig_source"] == "the host's /sbin/ldconfig"
    text = Path(cos_node.node_path(COS_CONFIG)).read_text()
    assert 'root = "/home/kubernetes/bin/nvidia"' in text
    assert 'ldconfig = "@/sbin/ldconfig"' in text
    assert str(cos_node.root) not in text
    data = tomlkit.parse(text).unwrap()
    assert data["nvidia-container-runtime"]["runtimes"] == ["runc", "crun"]
    assert data["nvidia-container-runtime-hook"]["path"] == COS_TOOLKIT + "/nvidia-container-runtime-hook"
    removed = run_module("toolkit_config", dict(args, state="absent"))
    assert removed["changed"] is True and not Path(cos_node.node_path(COS_CONFIG)).exists()
    assert run_module("toolkit_config", dict(args, state="absent"))["changed"] is False


def test_ubuntu_node_user_edits_kept(ubuntu_node):
    """ldconfig.real on Debian-like hosts; a user's comments and keys survive; --diff; runc from containerd."""
    config = Path(ubuntu_node.node_path("/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml"))
    config.parent.mkdir(parents=True)
    config.write_text('# mine\n[nvidia-container-cli]\n  debug = "/var/log/cli.log" # keep\n')
    containerd = Path(ubuntu_node.node_path("/etc/containerd/config.toml"))
    containerd.parent.mkdir(parents=True, exist_ok=True)
    containerd.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
                          '  BinaryName = "/usr/sbin/runc"\n')
    args = {"host_root": str(ubuntu_node.root), "mode": "cdi", "spec_dirs": ["/var/run/cdi"],
            "settings": {"nvidia-container-runtime": {"log-level": "debug"}}, "backup": True}
    result = run_module("toolkit_config", args, diff=True)
    assert result["changed"] is True, result
    assert result["ldconfig"] == "@/sbin/ldconfig.real"
    assert "+  ldconfig = \"@/sbin/ldconfig.real\"" in result["_diff_text"]
    assert Path(ubuntu_node.node_path(result["backup_file"])).exists()
    text = config.read_text()
    assert text.startswith('# mine\n[nvidia-container-cli]\n  debug = "/var/log/cli.log" # keep\n')
    data = tomlkit.parse(text).unwrap()
    assert data["nvidia-container-runtime"]["runtimes"] == ["/usr/sbin/runc"]
    assert data["nvidia-container-runtime"]["mode"] == "cdi"
    assert data["nvidia-container-runtime"]["log-level"] == "debug"
    assert data["nvidia-container-runtime"]["modes"]["cdi"]["spec-dirs"] == ["/var/run/cdi"]
    assert run_module("toolkit_config", args)["changed"] is False


def test_driver_container_with_its_own_ldconfig(driver_container_node):
    root = "/run/nvidia/driver"
    ldconfig = Path(driver_container_node.node_path(root + "/sbin/ldconfig"))
    ldconfig.parent.mkdir(parents=True, exist_ok=True)
    ldconfig.write_text("#!/bin/sh\n")
    result = run_module("toolkit_config", {"host_root": str(driver_container_node.root), "driver_root": root})
    assert result["ldconfig"] == "@/run/nvidia/driver/sbin/ldconfig", result


def test_broken_file_left_alone(cos_node):
    config = Path(cos_node.node_path(COS_CONFIG))
    config.parent.mkdir(parents=True)
    config.write_text("[nvidia-container-cli\n")
    result = run_module("toolkit_config", {"host_root": str(cos_node.root), "install_dir": COS_TOOLKIT})
    assert result["_rc"] != 0 and "%s is not valid TOML" % COS_CONFIG in result["msg"]
    assert config.read_text() == "[nvidia-container-cli\n"


def test_absent_removes_the_directories_the_first_write_made(cos_node):
    """The install dir exists (the toolkit is installed); .config/nvidia-container-runtime is the
    config's own: recorded when made, removed with the file, and the install dir stays."""
    install = Path(cos_node.node_path(COS_TOOLKIT))
    install.mkdir(parents=True)
    args = {"host_root": str(cos_node.root), "install_dir": COS_TOOLKIT, "driver_root": COS_ROOT}
    made = run_module("toolkit_config", args)
    assert made["changed"] is True, made
    first = Path(cos_node.node_path(COS_CONFIG)).read_text().splitlines()[0]
    assert first.startswith("# gpu_node.container_toolkit: created")
    assert first.endswith('["%s/.config", "%s/.config/nvidia-container-runtime"]' % (COS_TOOLKIT, COS_TOOLKIT))
    check = run_module("toolkit_config", dict(args, state="absent"), check=True)
    assert check["changed"] is True and Path(cos_node.node_path(COS_CONFIG)).exists()
    removed = run_module("toolkit_config", dict(args, state="absent"))
    assert removed["removed_dirs"] == [COS_TOOLKIT + "/.config/nvidia-container-runtime", COS_TOOLKIT + "/.config"]
    assert sorted(p.name for p in install.iterdir()) == []


def test_absent_keeps_directories_that_were_there_or_are_not_empty(ubuntu_node):
    toolkit = "/usr/local/nvidia/toolkit"
    config_dir = Path(ubuntu_node.node_path(toolkit + "/.config/nvidia-container-runtime"))
    config_dir.mkdir(parents=True)
    args = {"host_root": str(ubuntu_node.root), "install_dir": toolkit}
    run_module("toolkit_config", args)
    text = (config_dir / "config.toml").read_text()
    assert "gpu_node.container_toolkit: created" in text and text.splitlines()[0].endswith("[]")
    removed = run_module("toolkit_config", dict(args, state="absent"))
    assert removed["removed_dirs"] == [] and config_dir.is_dir()


def test_driver_root_auto_finds_each_nodes_driver(cos_node, ubuntu_node, driver_container_node):
    """driver_root defaults to auto, as in the node model: the COS driver dir, / on Ubuntu, the driver
    container's tree; runtime_mode is the option's name and mode its alias."""
    expected = [(cos_node, COS_ROOT), (ubuntu_node, "/"), (driver_container_node, "/run/nvidia/driver")]
    for node, root in expected:
        result = run_module("toolkit_config", {"host_root": str(node.root), "runtime_mode": "legacy"}, check=True)
        assert result["_rc"] == 0, result
        assert result["driver_root"] == root, result
        assert result["driver_root_source"].startswith("auto: found " + root.rstrip("/") + "/")
        assert result["settings"]["nvidia-container-cli"]["root"] == root
        assert result["settings"]["nvidia-container-runtime"]["mode"] == "legacy"


def test_driver_root_auto_without_a_driver_fails_naming_the_option(tmp_path):
    (tmp_path / "etc").mkdir()
    result = run_module("toolkit_config", {"host_root": str(tmp_path)})
    assert result["_rc"] != 0, result
    assert "driver_root=auto found no libcuda.so.1" in result["msg"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["etc"]


def test_wrong_arguments_are_refused_as_a_module_would(cos_node):
    result = run_module("toolkit_config", {"host_root": str(cos_node.root), "runtime_mode": "gpu", "colour": 1})
    assert result["_rc"] != 0, result
    assert "runtime_mode must be one of: auto, cdi, legacy, csv, got: gpu" in result["msg"], result["msg"]
    unknown = run_module("toolkit_config", {"host_root": str(cos_node.root), "colour": 1})
    assert unknown["_rc"] != 0 and "Unsupported parameters" in unknown["msg"] and "colour" in unknown["msg"]


def _absent_cases(node, case):
    """Provision the file as ``case`` says; returns (path, its text before absent, expected 'kept' words)."""
    config = Path(node.node_path(COS_CONFIG))
    args = {"host_root": str(node.root), "install_dir": COS_TOOLKIT}
    if case == "an administrator's own file, edited":
        config.parent.mkdir(parents=True)
        config.write_text('# ours, not the playbook\'s\n[nvidia-container-cli]\n  debug = "/var/log/cli.log"\n')
        assert run_module("toolkit_config", args)["changed"] is True
        return config, "did not create it"
    assert run_module("toolkit_config", args)["changed"] is True
    if case == "created, then a key added by hand":
        config.write_text(config.read_text() + '\n[nvidia-container-cli]\n  debug = "/var/log/cli.log"\n'
                          if "[nvidia-container-cli]" not in config.read_text() else
                          config.read_text().replace("[nvidia-container-cli]\n", '[nvidia-container-cli]\ndebug = "/x"\n', 1))
        return config, "nvidia-container-cli.debug"
    if case == "created, then a table added by hand":
        config.write_text(config.read_text() + '\n[experimental]\n  feature = true\n')
        return config, "experimental.feature"
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["an administrator's own file, edited", "created, then a key added by hand",
                                  "created, then a table added by hand"])
def test_absent_keeps_a_file_that_is_not_only_its_own(cos_node, case):
    config, kept_words = _absent_cases(cos_node, case)
    before = config.read_bytes()
    for check in (True, False):
        result = run_module("toolkit_config", {"host_root": str(cos_node.root), "install_dir": COS_TOOLKIT, "state": "absent"},
                            check=check)
        assert result["_rc"] == 0 and result["changed"] is False and kept_words in result["kept"], result
        assert config.read_bytes() == before


def test_absent_removes_its_own_untouched_file_and_only_its_own_directories(cos_node):
    config = Path(cos_node.node_path(COS_CONFIG))
    assert run_module("toolkit_config", {"host_root": str(cos_node.root), "install_dir": COS_TOOLKIT})["changed"] is True
    decoy = Path(cos_node.node_path("/etc/empty-admin-dir"))
    decoy.mkdir(parents=True)
    text = config.read_text()
    forged = text.replace('when empty: ["', 'when empty: ["/etc/empty-admin-dir", "/etc", "', 1)
    assert forged != text, text.splitlines()[0]
    config.write_text(forged)
    result = run_module("toolkit_config", {"host_root": str(cos_node.root), "install_dir": COS_TOOLKIT, "state": "absent"})
    assert result["changed"] is True and not config.exists()
    assert result["removed_dirs"] == [COS_TOOLKIT + "/.config/nvidia-container-runtime", COS_TOOLKIT + "/.config",
                                      COS_TOOLKIT]
    assert decoy.is_dir()
