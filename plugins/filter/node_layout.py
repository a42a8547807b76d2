# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the roles need to know of the modules' files and rules, from the modules' own code.

The roles decide which modules run; where those modules keep their files (the toolkit manifest,
Docker's journal), which binaries the runtimes run, and whether an engine can be restarted as
configured are the modules' knowledge, so the roles ask these filters instead of spelling it again;
so is the script that restarts an engine and waits for it.
"""

from __future__ import annotations

import posixpath

from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi, docker_config, engine_restart, runtimes, toolkit_config
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.role_choices import gpu_node_choices, restart_problem
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.toolkit_layout import MANIFEST_NAME

CDI_HOOK = "nvidia-cdi-hook"
# Under the install dir: what persist_files keeps between playbook runs.
PERSIST_DIR = ".gpu-node"


def _path(value, what):
    if not isinstance(value, str) or not value:
        raise AnsibleFilterError("%s must be a non-empty path, got %r" % (what, value))
    return normalize_host_path(value)


def docker_journal_path(config_path):
    return docker_config.journal_path(_path(config_path, "docker_journal_path's input"))


def toolkit_binaries(install_dir, cdi=False):
    install_dir = _path(install_dir, "toolkit_binaries' input")
    names = [runtime["binary"] for runtime in runtimes.default_runtimes(install_dir)]
    return names + ([posixpath.join(install_dir, CDI_HOOK)] if cdi else [])


def read_ahead_paths(install_dirs, containerd_configs=(), docker_config=None):
    if isinstance(install_dirs, str):
        install_dirs = [install_dirs]
    dirs = [_path(d, "read_ahead_paths' input") for d in install_dirs]
    files = [posixpath.join(d, MANIFEST_NAME) for d in dirs]
    files += [posixpath.join(d, toolkit_config.CONFIG_RELATIVE_PATH) for d in dirs]
    files += [_path(p, "containerd_configs") for p in containerd_configs or ()]
    if docker_config:
        files += [_path(docker_config, "docker_config"), docker_journal_path(docker_config)]
    unique = []
    for path in files:
        if path not in unique:
            unique.append(path)
    return {"files": unique, "trees": [posixpath.join(d, PERSIST_DIR) for d in dirs] + list(cdi.SPEC_DIRS),
            "installs": dirs}


def engine_restart_script(service, mode, socket, health_command, command="", timeout=30, host_root="/"):
    try:
        timeout = int(timeout)
    except (TypeError, ValueError):
        raise AnsibleFilterError("engine_restart_script: timeout must be a number of seconds, got %r" % (timeout,)) from None
    problem = engine_restart.script_problem(mode, service, command, health_command, timeout)
    if problem:
        raise AnsibleFilterError("engine_restart_script: %s" % problem)
    socket = _path(socket, "engine_restart_script: the engine's socket")
    return engine_restart.restart_script(mode, service, command, host_root or "/", socket, health_command, timeout)


class FilterModule:
    def filters(self):
        return {
            "docker_journal_path": docker_journal_path,
            "toolkit_binaries": toolkit_binaries,
            "read_ahead_paths": read_ahead_paths,
            "restart_problem": restart_problem,
            "gpu_node_choices": gpu_node_choices,
            "engine_restart_script": engine_restart_script,
        }
