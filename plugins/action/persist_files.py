# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``persist_files``: with ``read_ahead`` holding everything the module reads,
decide here whether the kept directory already holds what it must; the module runs on the node
only when it does not (or when anything it reads was not read ahead)."""

from __future__ import annotations

import hashlib
import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import (
    argument_specs,
    docker_config,
    edit_journal,
    persistence,
)
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import ReadAhead

MODULE = "gpu_node.container_toolkit.persist_files"


class _NotReadAhead(Exception):
    """Something the module reads is not in read_ahead: the module decides."""


def _source(ahead, host_root, host_path):
    """The bytes of a file the module keeps a copy of, None when it does not exist."""
    known, data = ahead.data(host_root, normalize_host_path(host_path))
    if not known:
        raise _NotReadAhead(host_path)
    return data


def _spec(ahead, host_root, host_path):
    """A CDI spec's bytes from the listing of its directory; it must be a regular file there."""
    tree = ahead.tree(host_root, posixpath.dirname(host_path))
    found = (tree or {}).get(posixpath.basename(host_path))
    if found is None:
        raise _NotReadAhead(host_path)
    return found[0]


def kept_as_wanted(args, ahead):
    """Whether the kept directory holds exactly what the module would write, from ``ahead`` alone.
    Raises _NotReadAhead when ``ahead`` does not hold everything that takes."""
    host_root = args["host_root"] or "/"
    current = ahead.tree_digests(host_root, normalize_host_path(args["dir"]))
    if current is None or not all(persistence.is_plain_name(name) for name in args["files"]):
        raise _NotReadAhead(args["dir"])
    config_path = normalize_host_path(args["containerd_config"]) if args["containerd_config"] else ""
    config = _source(ahead, host_root, config_path) if config_path else None
    docker_data = docker_journal = None
    journal_path = ""
    if args["docker_config"]:
        docker_path = normalize_host_path(args["docker_config"])
        journal_path = docker_config.journal_path(docker_path)
        docker_data = _source(ahead, host_root, docker_path)
        docker_journal = _source(ahead, host_root, journal_path)
    specs = {normalize_host_path(p): _spec(ahead, host_root, normalize_host_path(p)) for p in args["cdi_specs"] or ()}
    try:
        wanted = persistence.wanted_files(
            None if config is None else config.decode("utf-8", "replace"), config_path, specs, args["files"],
            args["executables"], docker_data,
            None if docker_journal is None else docker_journal.decode("utf-8", "replace"), journal_path)
    except (edit_journal.JournalError, docker_config.ConfigError):
        raise _NotReadAhead("journal") from None  # the module fails, naming it
    # Compared by digest: the look sends large kept files (gpu-node-cdi) as one.
    wanted = {name: (hashlib.sha256(data).hexdigest(), mode) for name, (data, mode) in wanted.items()}
    if args["cdi_specs"] is None:
        wanted.update((name, found) for name, found in current.items() if name.startswith(persistence.SPEC_DIR + "/"))
    return not persistence.plan(wanted, current)


class ActionModule(NodeActionBase):
    argument_spec = staticmethod(argument_specs.persist_files)

    def converge(self, args, task_vars):
        ahead = args.pop("read_ahead")
        if ahead and args["state"] == "present":
            try:
                if kept_as_wanted(args, ReadAhead(ahead)):
                    return {"changed": False, "dir": normalize_host_path(args["dir"]), "changes": [], "diff": []}
            except _NotReadAhead:
                pass
        return self.run_module(MODULE, args, task_vars)
