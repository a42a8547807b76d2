# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``cdi_spec``: with ``read_ahead`` holding the look's driver facts and the spec
directories, build the spec here and, when the file on the node already holds exactly it, answer
without a module run. Anything else (a change, state=absent, something not read ahead, a link
where the module would follow it) goes to the module, which decides on the node as before."""

from __future__ import annotations

import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi, cdi_files
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import ReadAhead

MODULE = "gpu_node.container_toolkit.cdi_spec"


def _same_discovery(args, driver):
    """Whether the look's facts are the ones the module would find with ``args``: the same options,
    or the roots the look found given explicitly."""
    looked, facts = driver["params"], driver["facts"]
    for name in ("driver_root", "dev_root"):
        if args[name] != looked[name] and normalize_host_path(args[name]) != facts[name]:
            return False
    return list(args["library_search_paths"]) == list(looked["library_search_paths"])


def spec_in_place(args, ahead):
    """The module's result for a spec the node already holds byte for byte, decided from ``ahead``
    (a :class:`ReadAhead`); None when the module must decide."""
    host_root = args["host_root"]
    driver = ahead.driver(host_root)
    if args["state"] != "present" or driver is None or not _same_discovery(args, driver):
        return None
    try:
        path = args["path"] or cdi.default_path(args["spec_mode"], args["vendor"], args["device_class"])
    except cdi.CdiError:
        return None
    path = normalize_host_path(path)
    directory, name = posixpath.split(path)
    own_dir = ahead.tree_entry(host_root, directory) if cdi.in_spec_dir(path) else None
    own_files = ahead.tree(host_root, directory) if own_dir is not None else None
    if own_files is None or name not in own_files or own_files[name][1] != cdi_files.FILE_MODE:
        return None
    target = posixpath.join(own_dir["resolved"], name)
    others, siblings, seen = {}, [], set()
    for spec_dir in cdi.SPEC_DIRS:
        listed = ahead.tree_entry(host_root, spec_dir)
        if listed is None or any(link.endswith(cdi.SPEC_SUFFIXES) for link in listed["links"]):
            return None  # the module would follow those links
        if not listed["exists"] or listed["resolved"] in seen:
            continue
        seen.add(listed["resolved"])
        files = ahead.tree(host_root, spec_dir)
        if files is None:
            return None  # a file too large to be sent whole: the module reads it
        for other, (data, _mode) in files.items():
            if "/" in other or not other.endswith(cdi.SPEC_SUFFIXES) or posixpath.join(listed["resolved"], other) == target:
                continue
            others[posixpath.join(spec_dir, other)] = cdi_files.decoded(data)
            if listed["resolved"] == own_dir["resolved"]:
                siblings.append(cdi.recorded_created_dirs(cdi_files.decoded(data[:cdi_files.HEAD_SIZE])))
    before_text = cdi_files.decoded(own_files[name][0])
    facts = driver["facts"]
    try:
        spec, fmt, warnings, fields = cdi_files.planned_spec(args, path, facts, others)
    except cdi.CdiError:
        return None
    text = cdi_files.spec_text(spec, fmt, facts, target, [], before_text, siblings, False)
    if text != before_text:
        return None
    result = dict(fields, changed=False, path=path, changes=[],
                  previous_driver_version=cdi.recorded_driver_version(before_text))
    warnings = list(driver["warnings"]) + warnings
    if warnings:
        result["warnings"] = warnings
    return result


class ActionModule(NodeActionBase):
    argument_spec = staticmethod(cdi_files.argument_spec)

    def converge(self, args, task_vars):
        ahead = args.pop("read_ahead")
        answered = spec_in_place(args, ReadAhead(ahead)) if ahead else None
        if answered is not None:
            return answered
        # Options left out stay left out (None is not among format's choices on the node).
        return self.run_module(MODULE, {name: value for name, value in args.items() if value is not None}, task_vars)
