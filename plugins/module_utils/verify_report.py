# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``verify.yml`` makes of a node's check-mode results: a status per check, a short problem
for the table and its whole detail for the lines below it, and the fleet table itself.

verify runs the provisioning role in check mode with the role's changed flags turned off (its recap
counts no changes), so "would change" is read from each result's ``changes``, which every module
of the collection returns in one shape (``module_utils.differences``).
"""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change_line

STATUS_RANK = {"-": 0, "ok": 1, "would change": 2, "failed": 3}
# A problem's detail names this many changes, then how many more (--check --diff shows them all);
# a problems cell longer than this says how many problems there are instead.
DETAIL_CHANGES = 5
PROBLEMS_CELL = 60


def _items(result):
    if not isinstance(result, dict):
        return []
    return list(result["results"]) if isinstance(result.get("results"), list) else [result]


def _skipped(result):
    return not result or all(item.get("skipped") for item in _items(result))


def _first_line(text):
    text = str(text or "failed").strip()
    head = text.split("\n", 1)[0]
    for end in (". ", ": "):
        if end in head:
            head = head.split(end, 1)[0] + end.strip()
            break
    return head if len(head) <= 60 else head[:57] + "..."


def _cdi_change(item):
    before = (item.get("diff") or {}).get("before") if isinstance(item.get("diff"), dict) else None
    previous, running = item.get("previous_driver_version"), item.get("driver_version")
    if previous and running and previous != running:
        return "made from driver %s, running %s" % (previous, running)
    if before == "" or any(c.get("action") == "created" for c in item.get("changes") or ()):
        return "missing"
    return "differs"


def node_findings(results, answered_by_look=None, exec_result=None, stopped=None):
    """Sum up one node: ``{"checks": {check: status}, "problems": [{"check", "summary", "detail"}]}``.

    ``results``: check name -> the registered result (``{}`` where the role did not register it);
    ``answered_by_look``: checks whose skipped task means the look found them right;
    ``exec_result``: the ``nvidia-ctk --version`` run (its ``rc``), checked with ``toolkit``;
    ``stopped``: the message of the task that stopped the check, if one did.
    """
    answered_by_look = answered_by_look or {}
    checks, problems = {}, []
    if stopped:
        problems.append({"check": "check", "summary": "stopped: " + _first_line(stopped),
                         "detail": "stopped: " + str(stopped).strip()})
    for check, result in results.items():
        items = _items(result)
        failed = [item for item in items if item.get("failed")]
        would = [item for item in items if not item.get("failed") and item.get("changes")]
        no_cri = [list(item["cri_disabled_by"]) for item in items if item.get("cri_disabled_by")]
        found = []
        for item in failed:
            message = str(item.get("msg") or "failed").strip()
            # The task that stopped the check: said once, as where it stopped.
            if stopped and str(stopped).strip().endswith(": " + message):
                continue
            found.append(("failed: " + _first_line(message), "failed: " + message))
        for item in would:
            lines = [change_line(change) for change in item["changes"]]
            if check == "CDI specs":
                found.append(("would change: " + _cdi_change(item),
                              "would change %s: %s" % (item.get("path") or "", _cdi_change(item))))
                continue
            short = "would change (%d)" % len(lines) if len(lines) > 1 else "would change: " + lines[0]
            more = len(lines) - DETAIL_CHANGES
            listed = "; ".join(lines[:DETAIL_CHANGES]) + ("; and %d more" % more if more > 0 else "")
            found.append((short, "would change: " + listed))
        for disabled_by in no_cri:
            found.append(("containerd loads no CRI plugin",
                          "containerd loads no CRI plugin (disabled_plugins lists %s): the kubelet and crictl cannot"
                          " use the runtimes; set gpu_node_containerd_enable_cri=true to take it out"
                          % ", ".join(disabled_by)))
        # k3s/RKE2: the config they generated at their last start must hold the runtimes.
        not_generated = [item for item in items if item.get("generated_problems")]
        for item in not_generated:
            found.append(("%s has not generated the runtimes" % item.get("distribution", "k3s"),
                          "%s has not generated them into %s (%s): restart %s"
                          % (item.get("distribution", "k3s"), item.get("path", "its config"),
                             ", ".join(item["generated_problems"]), item.get("service", "it"))))
        runs = check != "toolkit" or not exec_result or (exec_result.get("rc") or 0) == 0
        if not runs:
            why = str(exec_result.get("stderr") or exec_result.get("msg") or "").strip()
            found.append(("nvidia-ctk does not run", "nvidia-ctk --version does not run: " + why))
        if failed or not runs or no_cri or not_generated:
            status = "failed"
        elif found:
            status = "would change"
        elif _skipped(result):
            status = "ok" if answered_by_look.get(check) else "-"
        else:
            status = "ok"
        checks[check] = status
        problems.extend({"check": check, "summary": check + ": " + short, "detail": check + ": " + detail}
                        for short, detail in found)
    return {"checks": checks, "problems": problems}


def node_row(node, platform, driver, findings, columns):
    """The table row of a node: the worst status of each column's checks, the short problems, and
    (under ``details``) the problems in full."""
    row = {"node": node, "platform": platform or "-", "driver": driver or "-"}
    for column, checks in columns.items():
        statuses = [findings["checks"].get(check, "-") for check in checks]
        row[column] = max(statuses or ["-"], key=STATUS_RANK.__getitem__)
    summaries = [problem["summary"] for problem in findings["problems"]]
    row["problems"] = "; ".join(summaries) or "none"
    if len(row["problems"]) > PROBLEMS_CELL:
        row["problems"] = "%d problems, below" % len(summaries) if len(summaries) > 1 else summaries[0][:PROBLEMS_CELL - 3] + "..."
    row["summaries"] = summaries
    row["details"] = [problem["detail"] for problem in findings["problems"]]
    return row


def fleet_table(rows, headers):
    """Aligned lines: the header, a row per node, then each node's problems in full under them."""
    table = [list(headers)] + [[str(row.get(header, "-")) for header in headers] for row in rows]
    widths = [max(len(cells[index]) for cells in table) for index in range(len(headers))]
    lines = ["  ".join(cell if index == len(cells) - 1 else cell.ljust(widths[index])
                       for index, cell in enumerate(cells)).rstrip() for cells in table]
    details = [(row["node"], detail) for row in rows for detail in row.get("details", ())]
    if details:
        lines.append("")
        lines.extend("%s: %s" % (node, detail) for node, detail in details)
    return lines
