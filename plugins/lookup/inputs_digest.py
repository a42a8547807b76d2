# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: inputs_digest
short_description: The digest of what a run of the gpu_node role decides from, besides the node
version_added: 0.3.0
description:
  - One SHA-256 over the settings given, the contents of the toolkit's sources on the controller
    (every file's bytes, mode and name under a directory) and this collection's own code and roles.
  - The gpu_node role records it on the node at the end of a full run
    (M(gpu_node.container_toolkit.node_record)); a later run with the same digest, which finds the node
    as that run left it, skips its steps.
  - Returns an empty string when a source cannot be found on the controller, or is read on the node
    (O(remote_src)); no record then matches, and the steps run.
author:
  - GPU node maintainers (@gpu-node)
options:
  _terms:
    description: The settings, one JSON value (a dict of every variable the run takes).
    type: raw
    required: true
  sources:
    description:
      - The toolkit's sources (C(gpu_node_toolkit_src)). A path is found as the toolkit role finds
        it (its C(files/) folders, then as given); a URL counts as given, with its checksum among the settings.
    type: list
    elements: str
    default: []
  remote_src:
    description: The sources are on the node; their contents cannot be digested here.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: The digest of this run's inputs
  ansible.builtin.debug:
    msg: "{{ lookup('gpu_node.container_toolkit.inputs_digest', {'cdi_enabled': true}, sources=['/srv/toolkit']) }}"
"""

RETURN = r"""
_raw:
  description: The hex digest, or an empty string (see the description).
  type: list
  elements: str
"""

from ansible import constants as C
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_record
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import run_inputs

URL_SCHEMES = ("http://", "https://", "ftp://")


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        sources = self.get_option("sources") or []
        if isinstance(sources, str):
            sources = [sources]
        if self.get_option("remote_src") and sources:
            return [""]
        digests = []
        for source in sources:
            if source.startswith(URL_SCHEMES):
                digests.append(["url", source])
                continue
            found = self.find_file_in_search_path(variables or {}, "files", source, ignore_missing=True)
            if not found:
                return [""]
            try:
                digests.append(["path", source, run_inputs.tree_digest(found)])
            except OSError:
                return [""]
        return [node_record.digest({"settings": list(terms), "sources": digests,
                                    "collection": run_inputs.collection_digest_cached(C.DEFAULT_LOCAL_TMP)})]
