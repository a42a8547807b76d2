# -*- coding: utf-8 -*-
"""verify_report: what verify.yml makes of a node's check-mode results (status, short and full
problems, the aligned table), from results shaped as the collection's modules return them."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_node.container_toolkit.plugins.filter.verify_report import (
    FilterModule,
    verify_row,
    verify_table,
)
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import verify_report

COLUMNS = {"toolkit": ["toolkit", "toolkit config"], "runtimes": ["runtimes"], "CDI specs": ["CDI specs"],
           "device nodes": ["device nodes"]}
SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"
# Registered with verify's changed flags off: "changed" is false, "changes" says what would change.
OK = {"changed": False, "changes": []}
SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
MISSING_SPEC = {"results": [{"changed": False, "path": SPEC, "driver_version": "535.104.12",
                             "previous_driver_version": None,
                             "changes": [{"path": "/var/run/cdi", "action": "created"},
                                         {"path": SPEC, "action": "created"}]}]}
CONFIG = "/etc/nvidia-container-runtime/config.toml"
CONFIG_KEYS = [{"path": CONFIG, "action": "updated", "setting": "nvidia-container-cli.root",
                "reason": "unset -> '/home/kubernetes/bin/nvidia'"},
               {"path": CONFIG, "action": "updated", "setting": "nvidia-container-runtime.mode", "reason": "unset -> 'auto'"}
               ] + [{"path": CONFIG, "action": "updated", "setting": "key%d" % n, "reason": "unset -> 1"} for n in range(7)]


def results(**overrides):
    found = {"toolkit": OK, "toolkit config": OK, "runtimes": OK, "CDI specs": {"results": [OK]},
             "device nodes": SKIPPED}
    found.update(overrides)
    return found


def test_a_clean_node_is_ok_everywhere_and_has_no_problem():
    row = verify_row(results(), "n1", COLUMNS, "cos", "535.104.12", {"device nodes": True}, {"rc": 0})
    assert row == {"node": "n1", "platform": "cos", "driver": "535.104.12", "toolkit": "ok", "runtimes": "ok",
                   "CDI specs": "ok", "device nodes": "ok", "problems": "none", "summaries": [], "details": []}


def test_a_skipped_check_not_answered_by_the_look_is_not_checked():
    row = verify_row(results(), "n1", COLUMNS)
    assert row["device nodes"] == "-" and row["platform"] == "-" and row["driver"] == "-"


def test_would_change_is_read_from_changes_and_the_cell_stays_short():
    row = verify_row(results(**{"toolkit config": {"changed": False, "changes": CONFIG_KEYS}}), "n1", COLUMNS)
    assert row["toolkit"] == "would change"
    assert row["problems"] == "toolkit config: would change (9)"
    # The detail names the first five changes and how many more.
    lines = ["updated %s: %s: %s" % (CONFIG, change["setting"], change["reason"]) for change in CONFIG_KEYS[:5]]
    assert lines[0] == "updated %s: nvidia-container-cli.root: unset -> '/home/kubernetes/bin/nvidia'" % CONFIG
    assert row["details"] == ["toolkit config: would change: " + "; ".join(lines) + "; and 4 more"]


def test_a_missing_cdi_spec_is_named_with_its_path():
    row = verify_row(results(**{"CDI specs": MISSING_SPEC}), "n1", COLUMNS)
    assert row["CDI specs"] == "would change"
    assert row["problems"] == "CDI specs: would change: missing"
    assert row["details"] == ["CDI specs: would change %s: missing" % SPEC]


def test_a_spec_made_from_another_driver_says_which():
    spec = {"results": [{"path": SPEC, "driver_version": "550.1", "previous_driver_version": "535.1",
                         "changes": [{"path": SPEC, "action": "updated"}]}]}
    findings = verify_report.node_findings(results(**{"CDI specs": spec}))
    assert findings["problems"][0]["summary"] == "CDI specs: would change: made from driver 535.1, running 550.1"
    assert findings["problems"][0]["detail"] == "CDI specs: would change %s: made from driver 535.1, running 550.1" % SPEC


def test_failed_wins_over_would_change_in_a_column_and_the_message_is_cut_at_its_first_sentence():
    failed = {"failed": True, "msg": "Cannot read /etc/containerd/config.toml. It is not a regular file, it is a link."}
    row = verify_row(results(toolkit={"changed": False, "changes": [{"path": "/x", "action": "created"}]},
                             **{"toolkit config": failed}), "n1", COLUMNS)
    assert row["toolkit"] == "failed"
    assert row["problems"] == "2 problems, below"
    assert row["details"] == ["toolkit: would change: created /x",
                              "toolkit config: failed: " + failed["msg"]]
    findings = verify_report.node_findings(results(**{"toolkit config": failed}))
    assert findings["problems"][0]["summary"] == "toolkit config: failed: Cannot read /etc/containerd/config.toml."


def test_containerd_without_cri_fails_the_runtimes_even_with_nothing_to_change():
    row = verify_row(results(runtimes={"changed": False, "changes": [], "cri_disabled_by": ["cri"]}), "n1", COLUMNS)
    assert row["runtimes"] == "failed" and row["problems"] == "runtimes: containerd loads no CRI plugin"
    assert "disabled_plugins lists cri" in row["details"][0] and "gpu_node_containerd_enable_cri=true" in row["details"][0]


def test_a_k3s_config_generated_without_the_runtimes_fails_and_names_the_service():
    k3s = {"changes": [], "distribution": "k3s", "service": "k3s-agent",
           "path": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml", "generated_problems": ["runtime nvidia missing"]}
    row = verify_row(results(runtimes=k3s), "n1", COLUMNS)
    assert row["runtimes"] == "failed" and row["problems"] == "runtimes: k3s has not generated the runtimes"
    assert row["details"] == ["runtimes: k3s has not generated them into /var/lib/rancher/k3s/agent/etc/containerd/config.toml"
                              " (runtime nvidia missing): restart k3s-agent"]


def test_a_toolkit_that_does_not_run_fails_the_toolkit():
    row = verify_row(results(), "n1", COLUMNS, exec_result={"rc": 126, "stderr": "Permission denied\n"})
    assert row["toolkit"] == "failed"
    assert row["details"] == ["toolkit: nvidia-ctk --version does not run: Permission denied"]


def test_a_check_stopped_by_a_failed_task_is_a_problem():
    row = verify_row(results(), "n1", COLUMNS, stopped="Check the variables: gpu_node_x is unknown")
    assert row["problems"] == "stopped: Check the variables:"
    assert row["details"] == ["stopped: Check the variables: gpu_node_x is unknown"]


def test_the_table_aligns_columns_and_puts_details_under_it():
    rows = [verify_row(results(), "short", COLUMNS, "cos", "535"),
            verify_row(results(runtimes={"changes": [{"path": "/etc/containerd/config.toml", "action": "updated",
                                                      "setting": "runtime nvidia", "reason": "missing"}]}),
                       "a-much-longer-node", COLUMNS,
                       "ubuntu", "535"),
            {"node": "gone", "problems": "not checked: unreachable, or failed before the check"}]
    headers = ["node", "platform", "driver"] + list(COLUMNS) + ["problems"]
    lines = verify_table(rows, headers)
    assert lines[0].startswith("node                platform  driver  toolkit  runtimes      ")
    positions = [lines[0].index(header) for header in headers]
    for line in lines[1:4]:
        assert all(line[p - 2:p] == "  " and line[p] != " " for p in positions[1:]), line
    assert lines[3].split()[:3] == ["gone", "-", "-"]
    assert lines[4:] == ["", "a-much-longer-node: runtimes: would change: updated /etc/containerd/config.toml: runtime nvidia: missing"]


def test_bad_arguments_are_named():
    with pytest.raises(AnsibleFilterError, match="verify_row takes a mapping"):
        verify_row(["not", "a", "mapping"], "n1", COLUMNS)
    with pytest.raises(AnsibleFilterError, match="verify_table takes a list"):
        verify_table({"node": "n1"}, ["node"])
    assert set(FilterModule().filters()) == {"verify_row", "verify_table"}


def test_the_failure_that_stopped_the_check_is_said_once():
    """The look fails the task that stopped the check: its registered result repeats the message."""
    looked = {"failed": True, "msg": "Unknown variables for the gpu_node role: gpu_node_x."}
    stopped = "Look at the node and check the run can finish: Unknown variables for the gpu_node role: gpu_node_x."
    row = verify_row(results(driver=looked), "n1", COLUMNS, stopped=stopped)
    assert row["details"] == ["stopped: " + stopped]
    # Another failure is still its own problem.
    row = verify_row(results(driver=looked), "n1", COLUMNS, stopped="Write the CDI specs: disk full")
    assert row["details"] == ["stopped: Write the CDI specs: disk full",
                              "driver: failed: Unknown variables for the gpu_node role: gpu_node_x."]
