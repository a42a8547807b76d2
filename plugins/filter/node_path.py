# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``node_path`` filter: where a host path is found under ``host_root``, as every module joins them."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import node_path


def node_path_filter(host_root, host_path):
    if not isinstance(host_root, str) or not isinstance(host_path, str):
        raise AnsibleFilterError("node_path: host_root and host_path must be strings, got %s and %s"
                                 % (type(host_root).__name__, type(host_path).__name__))
    return node_path(to_native(host_root), to_native(host_path))


class FilterModule:
    def filters(self):
        return {"node_path": node_path_filter}
