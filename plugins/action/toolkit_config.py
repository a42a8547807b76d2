# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``toolkit_config``: write the toolkit's config.toml, edited on the controller."""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toolkit_toml as tt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import NodeFiles


class ActionModule(NodeActionBase):
    argument_spec = staticmethod(argument_specs.toolkit_config)
    refusals = tt.REFUSALS

    def converge(self, args, task_vars):
        files = NodeFiles(self, task_vars, args["read_ahead"])
        return tt.converge(files, args, self.check_mode, self.diff_mode)
