# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The look at a node (node side, standard library only).

What ``nvidia_driver_info`` reports and ``node_info`` reports with the later steps' reads: the
node's facts (os-release ID, k3s or RKE2, container engines, whether systemd runs where the module
does), the driver facts of ``discovery.discover_node``, the device nodes ``device_nodes`` would
change, and, for ``node_info``, what the later tasks of a run will read (``node_reads``), with the
driver facts the controller builds a CDI spec from.
"""

from __future__ import annotations

import os
import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import (
    dev_char,
    device_nodes,
    discovery,
    node_fs,
    node_model,
    node_reads,
    node_record,
    procfs,
)
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import kube_distro as kd
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_config as tc

READ_AHEAD_SPEC = {"type": "dict", "options": {
    "files": {"type": "list", "elements": "str", "default": []},
    "trees": {"type": "list", "elements": "str", "default": []},
    "exist": {"type": "list", "elements": "str", "default": []},
    "installs": {"type": "list", "elements": "str", "default": []},
}}


class LookError(Exception):
    """The driver facts cannot be found; ``result`` is what the module fails with besides the message."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


def look(params, wanted=None):
    """``(result, warnings)`` for the validated ``params`` (``node_argument_spec(driver=True)``);
    ``wanted``: ``READ_AHEAD_SPEC``'s value, or None to read nothing ahead. Raises LookError."""
    root = node_fs.NodeRoot(params["host_root"])
    kube = kube_on(root)
    node = {"os_release_id": read_os_release_id(root), "kubernetes_distribution": kube,
            "container_engines": node_model.container_engines(lambda path: exists(root, path)),
            # Where the module runs, not under host_root: whether systemctl can restart services here.
            "systemd_running": os.path.isdir("/run/systemd/system")}
    try:
        facts = discovery.discover_node(
            params["host_root"], params["driver_root"], params["dev_root"], params["library_search_paths"]
        )
    except discovery.DiscoveryError as exc:
        raise LookError(str(exc), dict(node, **exc.details)) from None
    warnings = facts.pop("warnings")
    facts["device_node_changes"] = device_node_changes(root, facts["dev_root"])
    if wanted is not None:
        # What the action plugins check on their own: toolkit_config, to choose nvidia-container-cli.ldconfig
        # for this driver root; containerd_runtime, to ask containerd its version for an empty config.
        exist = wanted["exist"] + tc.ldconfig_candidates(facts["driver_root"]) + list(cc.CONTAINERD_BINARIES)
        files = list(wanted["files"])
        if kube is not None:
            # What k3s_runtime reads there: the generated configs, its drop-in and templates.
            kube_files, kube_exist = kd.read_ahead_paths(kube)
            files += [p for p in kube_files if p not in files]
            exist += kube_exist
        # The driver facts go with the reads: cdi_spec builds its spec from them on the controller.
        driver = {"params": {name: params[name] for name in ("driver_root", "dev_root", "library_search_paths")},
                  "facts": {name: value for name, value in facts.items() if name != "device_node_changes"},
                  "warnings": warnings}
        facts["read_ahead"] = dict(node_reads.read_ahead(root, files, wanted["trees"], exist, wanted["installs"]),
                                   host_root=params["host_root"], driver=driver)
        # What a run compares with the record of the last full run (node_record).
        facts["look_digest"] = node_record.look_digest(dict(node, **facts))
    return dict(node, **facts), warnings


def exit_with_look(module, wanted=None):
    """End ``module`` (an ``AnsibleModule`` with ``node_argument_spec(driver=True)``) with the look's
    result, its warnings as the module's, or with its failure."""
    try:
        result, warnings = look(module.params, wanted)
    except LookError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, **result)


def device_node_changes(node, dev_root):
    """What device_nodes (nodes=control) would change, or None when that cannot be told here."""
    try:
        devices = procfs.parse_devices(node.read_text(node.resolve("/proc/devices")) or "")
        wanted, _skipped = device_nodes.wanted_nodes(devices)
        dev_dir = node_model.join_host(dev_root, "dev")
        real_dir = node.resolve(dev_dir)
        if not node.is_dir(real_dir):
            return None
        found = {n["name"]: node.observe(posixpath.join(real_dir, n["name"])) for n in wanted}
        nodes = [node_model.join_host(dev_dir, step["name"]) for step in device_nodes.plan(wanted, found)
                 if step["action"] != "ok"]
        links = dev_char.converge(node, dev_dir, real_dir, wanted, check_mode=True)
    except (node_fs.NodeFsError, procfs.ProcFormatError, device_nodes.KernelModuleNotLoaded):
        return None
    return {"nodes": nodes, "char_links": [step["path"] for step in links["steps"] if step["action"] != "ok"]}


def kube_on(node):
    """The k3s or RKE2 on the node (``kube_distro.detect``), or None."""
    existing = [p for p in kd.marks() if exists(node, p)]
    heads = {}
    for name in kd.DISTRIBUTIONS:
        config = kd.paths(name)["config"]
        if config in existing:
            try:
                heads[config] = "\n".join((node.read_text(node.resolve(config)) or "").splitlines()[:5])
            except node_fs.NodeFsError:
                heads[config] = None
    return kd.detect(existing, heads)


def exists(node, host_path):
    """Whether ``host_path`` is there on the node (links followed inside host_root)."""
    try:
        return node.observe(node.resolve(host_path)) is not None
    except node_fs.NodeFsError:
        return False


def read_os_release_id(node):
    """The node's os-release ``ID`` (links resolved inside host_root), or ``""``."""
    for candidate in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            text = node.read_text(node.resolve(candidate))
        except node_fs.NodeFsError:
            continue
        found = node_model.os_release_id(text)
        if found:
            return found
    return ""
