# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``verify_row`` and ``verify_table`` filters: verify.yml's row per node and its fleet table."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import verify_report


def verify_row(results, node, columns, platform=None, driver=None, answered_by_look=None, exec_result=None,
               stopped=None):
    if not isinstance(results, dict) or not isinstance(columns, dict):
        raise AnsibleFilterError("verify_row takes a mapping of check names to results, and one of columns to checks")
    findings = verify_report.node_findings(results, answered_by_look, exec_result, stopped)
    return verify_report.node_row(node, platform, driver, findings, columns)


def verify_table(rows, headers):
    if not isinstance(rows, list) or not isinstance(headers, list):
        raise AnsibleFilterError("verify_table takes a list of rows and a list of headers")
    return verify_report.fleet_table(rows, headers)


class FilterModule:
    def filters(self):
        return {"verify_row": verify_row, "verify_table": verify_table}
