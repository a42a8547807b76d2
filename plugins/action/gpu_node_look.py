# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``gpu_node_look``: the start of a gpu_node run in one task. The role's
variables are checked, the node is looked at (``node_info``, the one module run), the role's
choices are taken from the look (``role_choices``) and the run's inputs digested (``node_record``).
The decisions are in module_utils; this gathers what they need from the task's variables."""

from __future__ import annotations

import re

import yaml
from ansible import constants as C
from ansible.errors import AnsibleError, AnsibleFileNotFound

from ansible_collections.gpu_node.container_toolkit.plugins.filter.unknown_variables import unknown_variables
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs, node_record, role_choices, toolkit_source
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import run_inputs
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase

LOOK = "gpu_node.container_toolkit.node_info"
NOT_SET = "(not set)"
STEP_TAGS = ("toolkit", "cdi", "containerd", "docker", "crio")
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def role_options(path):
    """The option names of the role's ``main`` entry point (each task runs in a worker of its own:
    read where it is asked for)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return list(yaml.load(handle, Loader=Loader)["argument_specs"]["main"]["options"])  # noqa: S506 (a safe loader)
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise AnsibleError("cannot read the role's options from %s: %s" % (path, exc)) from None


class ActionModule(NodeActionBase):
    argument_spec = staticmethod(argument_specs.gpu_node_look)

    def converge(self, args, task_vars):
        options = role_options(args["options_file"])
        pattern = re.compile(re.escape(args["prefix"]) + "[a-z0-9]")
        unknown = unknown_variables([name for name in task_vars if pattern.match(name)], options + args["known"],
                                    args["allowed"])
        problems = role_choices.variable_problems(unknown, args["host_root"], task_vars.get("playbook_dir", ""))
        if problems:
            return {"failed": True, "changed": False, "msg": " ".join(problems) + " Nothing was changed."}
        look_args = {name: args[name] for name in ("host_root", "driver_root", "dev_root", "library_search_paths")}
        if args["read_ahead"] is not None:
            look_args["read_ahead"] = args["read_ahead"]
        look = self.run_module(LOOK, look_args, task_vars)
        # Without a driver a node can still be given the toolkit (CDI off) or lose what provisioning added.
        if look.get("driver_version") is None and args["needs_driver"]:
            return dict(look, failed=True)
        look.pop("failed", None)
        distribution = (task_vars.get("ansible_facts") or {}).get("distribution", "") or ""
        settings = dict(args["settings"], inputs_digest=self._inputs_digest(args, options, distribution, task_vars),
                        full_run=self._full_run(task_vars))
        choices = role_choices.gpu_node_choices(look, settings, host=task_vars.get("inventory_hostname", "the node"),
                                                distribution=distribution)
        result = dict(look, changed=False, choices=choices)
        if choices["problems"]:
            result.update(failed=True, msg=" ".join(choices["problems"]) + " Nothing was changed.")
        return result

    def _full_run(self, task_vars):
        """Every step selected, and nothing only previewed: only such a run records the node."""
        run_tags = task_vars.get("ansible_run_tags") or ["all"]
        return (not self.check_mode and not task_vars.get("ansible_skip_tags")
                and ("all" in run_tags or all(tag in run_tags for tag in STEP_TAGS)))

    def _inputs_digest(self, args, options, distribution, task_vars):
        """The digest of what the run decides from besides the node, or "" where it cannot be told."""
        if not args["skip_unchanged"] or (args["remote_src"] and args["sources"]):
            return ""
        try:
            settings = {name: self._templar.template(task_vars[name]) if name in task_vars else NOT_SET
                        for name in options + args["other_inputs"]}
            sources = []
            for source in args["sources"]:
                if source.startswith(toolkit_source.URL_SCHEMES):
                    sources.append(["url", source])
                else:
                    sources.append(["path", source, run_inputs.tree_digest(self.controller_file(source))])
        except (AnsibleError, AnsibleFileNotFound, OSError):
            return ""
        return node_record.digest({"settings": settings, "host": task_vars.get("inventory_hostname"),
                                   "distribution": distribution, "sources": sources,
                                   "collection": run_inputs.collection_digest_cached(C.DEFAULT_LOCAL_TMP)})
