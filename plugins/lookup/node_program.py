# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: node_program
short_description: A program for the node, built from this collection's own module_utils
version_added: 0.1.0
description:
  - Returns the text of one executable Python file that runs the C(main) function of a module in this
    collection's C(plugins/module_utils), with the source of every module_utils it imports inside it.
    The node needs Python 3's standard library only, and runs the same code the modules run.
  - The text is the same for the same collection, so writing it again changes nothing. It is built
    once per run, in the controller's temp dir, however many hosts ask for it.
  - The roles write C(gpu-node-cdi) with it (entry V(cdi_refresh)), which regenerates the CDI specs at
    boot and after a driver upgrade without a controller.
author:
  - GPU node maintainers (@gpu-node)
options:
  _terms:
    description: The module_utils name of the entry point, such as V(cdi_refresh).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Put the CDI spec generator on the node
  gpu_node.container_toolkit.node_file_write:
    path: /usr/local/nvidia/toolkit/.gpu-node/gpu-node-cdi
    content: "{{ lookup('gpu_node.container_toolkit.node_program', 'cdi_refresh') }}"
    mode: "0755"
"""

RETURN = r"""
_raw:
  description: The program's text, one per term.
  type: list
  elements: str
"""

from ansible import constants as C
from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import node_program


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        try:
            return [node_program.build_cached(term, C.DEFAULT_LOCAL_TMP) for term in terms]
        except node_program.NodeProgramError as exc:
            raise AnsibleLookupError(str(exc)) from None
