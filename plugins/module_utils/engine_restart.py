# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``engine_restart`` runs on the node and what it says, as pure functions (no I/O).

The restart is one shell script, which the engine roles' handlers send with ``ansible.builtin.raw``
(one round trip, no Python on the node): restart the engine, then ask it on its socket every 2 s
until it answers or the timeout has passed. Its exit status says whether the engine came back; its
output ends with the restart's or the last health check's error. When it did not come back, the
rollback and its message are decided here too; the ``engine_restart`` action plugin runs them.
"""

from __future__ import annotations

import shlex

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import node_path

RESTART_MODES = ("systemd", "command")
POLL_SECONDS = 2


def script_problem(mode, service, command, health_command, timeout):
    """Why these settings cannot make a restart script (the setting to change), or None."""
    if mode not in RESTART_MODES:
        return "the restart mode must be one of %s, got %r" % (", ".join(RESTART_MODES), mode)
    if mode == "systemd" and not service:
        return "the engine's systemd unit is empty: set its service"
    if mode == "command" and not (command or "").strip():
        return "the restart command is empty with the command restart mode: set the shell command that restarts the engine"
    if "%s" not in (health_command or ""):
        return "the health command must hold %%s (the socket's path), got %r" % health_command
    if timeout < 0:
        return "the restart timeout must be 0 or more seconds, got %d" % timeout
    return None


def restart_script(mode, service, command, host_root, socket, health_command, timeout):
    """The ``sh`` script that restarts the engine and waits for it (see the module's docstring):
    ``mode`` V(systemd) restarts the unit ``service``, V(command) runs ``command``; ``socket`` is a
    host path, put under ``host_root`` for ``health_command``'s ``%s``."""
    if mode == "systemd":
        restart = "systemctl restart %s" % shlex.quote(service)
    else:
        restart = command
    socket_path = node_path(host_root, socket)
    # Split before the socket's path goes in: a path with a space stays one argument.
    health = " ".join(shlex.quote(word.replace("%s", socket_path)) for word in health_command.split())
    return "\n".join([
        "exec 2>&1",
        "set -u",
        # In a subshell of its own: a command that exits or changes directory ends only itself.
        "(",
        restart,
        ') || { echo "the restart exited with $?"; exit 1; }',
        "deadline=$(( $(date +%%s) + %d ))" % timeout,
        "until error=$( %s 2>&1 >/dev/null ); do" % health,
        '  if [ "$(date +%s)" -ge "$deadline" ]; then',
        "    printf '%s\\n' \"$error\"",
        "    exit 1",
        "  fi",
        "  sleep %d" % POLL_SECONDS,
        "done",
    ]) + "\n"


def output_line(stdout):
    """What a restart printed, as one line: its non-empty lines, trimmed, joined by ``; ``."""
    return "; ".join(line.strip() for line in (stdout or "").splitlines() if line.strip())


def rollback_steps(backup_files):
    """``(restore, remove)``: ``[(file, its backup)]`` to put back, in the order given, and the
    files the run created (backup None), to remove."""
    restore = [(path, copy) for path, copy in backup_files.items() if copy is not None]
    remove = [path for path, copy in backup_files.items() if copy is None]
    return restore, remove


def rollback_message(engine, error, timeout, backup_files, answers_again, output, problems=()):
    """Why the host fails: what went wrong, what was rolled back, and whether the engine answers now.

    ``error``: what the failed restart printed (one line; empty when it printed nothing);
    ``output``: what the restart after the rollback printed; ``problems``: files that could not be
    put back, each a sentence naming the file."""
    done = ["restored %s from %s" % (path, copy) if copy is not None else "removed %s, which this run created" % path
            for path, copy in backup_files.items()]
    rolled_back = "; ".join(done) if done else "nothing to roll back, no backup was made"
    message = ("%s did not come back after its configuration changed (%s). Rolled back to the previous "
               "configuration: %s; then restarted %s, which %s."
               % (engine, error or "no answer within %d s" % timeout, rolled_back, engine,
                  "answers again" if answers_again else "does not answer either: %s" % output))
    if problems:
        message += " Not rolled back: %s." % "; ".join(problems)
    return message
