# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark callback (benchmarks/fleet.py): per host, task results and module executions on the node.

Not part of the collection. Enabled with ``ANSIBLE_CALLBACK_PLUGINS=<this dir>`` and
``ANSIBLE_CALLBACKS_ENABLED=fleet_counter``; it writes its counts, as JSON, to the file named by
``GPU_NODE_FLEET_COUNTS`` when the playbook ends.

- Task results: ``v2_runner_on_ok`` / ``_failed`` / ``_skipped`` / ``_unreachable``, one per task
  (handlers included) and host, as in the PLAY RECAP.
- Module executions (under Mitogen's strategies, its action mixin's ``_execute_module``, which
  replaces ActionBase's, is wrapped too): a callback only sees a task's final result, not the modules an action plugin
  runs on the node along the way (``slurp`` + ``copy`` + ``stat`` ...). Every one of those goes
  through ``ActionBase._execute_module``, which ships the module to the node and runs it there (one
  AnsiballZ python process on the node, over whatever connection). This callback wraps that method
  when it is loaded, in the controller's main process, before the workers are forked, so every
  worker inherits the wrapper. Each call appends one JSON line (host, task, loop item, module) to
  ``GPU_NODE_FLEET_COUNTS + ".modules"`` (``O_APPEND``: whole lines from concurrent workers); the
  callback adds them up at the end. Actions that run on the controller only (``debug``,
  ``set_fact``, ``assert``, ``include_*``) count no module execution; a loop counts each item as one
  task run. ``_execute_module`` is ansible-core's internal API, stable across 2.16 to 2.19; if it is
  missing the counts say ``null`` rather than a wrong number.
- File transfers: ``ActionBase._transfer_file`` (a file put on the node) is wrapped the same way and
  logged with ``"transfer"`` set; it is not a module execution. A module's own file
  (``AnsiballZ_*``, put there when pipelining is off) is not logged. toolkit_install's files travel
  in its module's ``_wire`` argument (``payload``): a module run with one is logged as the transfer
  ``toolkit_install payload`` as well.
- Task wall time: from one task's (or handler's) start to the next one's, or to the end of the
  play: the time the whole fleet spent on it, forks included.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time

from ansible.plugins.action import ActionBase
from ansible.plugins.callback import CallbackBase

COUNTS_ENV = "GPU_NODE_FLEET_COUNTS"
_ORIGINAL = getattr(ActionBase, "_execute_module", None)
_ORIGINAL_TRANSFER = getattr(ActionBase, "_transfer_file", None)


def _module_log():
    counts = os.environ.get(COUNTS_ENV)
    return counts + ".modules" if counts else None


def _record(action, module_name, task_vars, transfer=None):
    log = _module_log()
    if not log:
        return
    worker = multiprocessing.current_process()
    host = (task_vars or {}).get("inventory_hostname") or getattr(getattr(worker, "_host", None), "name", "?")
    task = getattr(worker, "_task", None) or action._task
    loop_var = (task_vars or {}).get("ansible_loop_var")
    item = repr((task_vars or {}).get(loop_var))[:200] if loop_var else None
    entry = {"host": host, "task": task._uuid, "name": task.get_name(), "item": item,
             "module": module_name or action._task.action}
    if transfer is not None:
        entry["transfer"] = transfer
    line = json.dumps(entry) + "\n"
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _counting(original):
    def counting_execute_module(self, module_name=None, module_args=None, tmp=None, task_vars=None, *args, **kwargs):
        _record(self, module_name, task_vars)
        if "payload" in json.loads((module_args or {}).get("_wire") or "{}"):
            _record(self, module_name, task_vars, transfer="%s payload" % module_name.rsplit(".", 1)[-1])
        return original(self, module_name, module_args, tmp, task_vars, *args, **kwargs)
    counting_execute_module.counting = True
    return counting_execute_module


def _mitogen_mixin():
    """Mitogen's action mixin, whose _execute_module replaces ActionBase's under its strategies."""
    if not os.environ.get("ANSIBLE_STRATEGY", "").startswith("mitogen"):
        return None
    try:
        from ansible_mitogen.mixins import ActionModuleMixin  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return ActionModuleMixin


def _counting_transfer_file(self, local_path, remote_path):
    name = os.path.basename(remote_path)
    if not name.startswith("AnsiballZ_"):  # a module, put there without pipelining: counted as one
        _record(self, None, None, transfer=name)
    return _ORIGINAL_TRANSFER(self, local_path, remote_path)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fleet_counter"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._hosts = {}
        self._counting = _ORIGINAL is not None
        for owner in (ActionBase, _mitogen_mixin()):
            method = getattr(owner, "_execute_module", None) if owner is not None else None
            if method is not None and not getattr(method, "counting", False):
                owner._execute_module = _counting(method)
        if _ORIGINAL_TRANSFER is not None and ActionBase._transfer_file is _ORIGINAL_TRANSFER:
            ActionBase._transfer_file = _counting_transfer_file
        log = _module_log()
        if log and os.path.exists(log):
            os.unlink(log)
        self._walls = []
        self._running = None

    def _start(self, name):
        now = time.perf_counter()
        if self._running is not None:
            self._walls.append({"name": self._running[0], "wall": now - self._running[1]})
        self._running = (name, now) if name is not None else None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._start(task.get_name())

    def v2_playbook_on_handler_task_start(self, task):
        self._start(task.get_name())

    def v2_playbook_on_play_start(self, play):
        self._start(None)

    def _host(self, result, outcome):
        counts = self._hosts.setdefault(result._host.get_name(), {"tasks": 0, "ok": 0, "changed": 0, "failed": 0,
                                                                  "skipped": 0, "unreachable": 0})
        counts["tasks"] += 1
        counts[outcome] += 1
        if outcome == "ok" and result._result.get("changed"):
            counts["changed"] += 1

    def v2_runner_on_ok(self, result):
        self._host(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._host(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._host(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._host(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        self._start(None)
        out = os.environ.get(COUNTS_ENV)
        if not out:
            return
        modules = {}
        per_run = {}
        log = _module_log()
        if self._counting and log and os.path.exists(log):
            with open(log, encoding="utf-8") as handle:
                for line in handle:
                    entry = json.loads(line)
                    if "transfer" in entry:
                        continue
                    modules[entry["host"]] = modules.get(entry["host"], 0) + 1
                    key = (entry["host"], entry["task"], entry["item"])
                    run = per_run.setdefault(key, {"name": entry["name"], "modules": []})
                    run["modules"].append(entry["module"])
        worst = max(per_run.values(), key=lambda run: len(run["modules"]), default=None)
        for host, counts in self._hosts.items():
            counts["modules"] = modules.get(host, 0) if self._counting else None
        summary = {
            "hosts": self._hosts,
            "max_modules_per_task": len(worst["modules"]) if worst else (0 if self._counting else None),
            "worst_task": worst,
            "task_walls": self._walls,
        }
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(summary, handle, indent=1)
