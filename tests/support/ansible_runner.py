"""Run the real ``ansible`` / ``ansible-playbook`` commands against localhost, as users do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def ansible_env(**extra):
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(REPO / ".cache" / "collections"))
    env.update(
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="False",
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        ANSIBLE_RETRY_FILES_ENABLED="False",
    )
    env.update(extra)
    return env


# No module run takes minutes: one that does hangs (a FIFO read, say), and fails its test instead.
MODULE_TIMEOUT = 300


def run_module(module, args, check=False, diff=False):
    """``ansible localhost -m <module> -a <json args>``; returns the module's result dict.

    The result also carries ``_rc`` (the command's exit code) and ``_stderr``. Raises
    subprocess.TimeoutExpired after :data:`MODULE_TIMEOUT` seconds.
    """
    cmd = [
        "ansible", "localhost", "-c", "local", "-i", "localhost,",
        "-m", module if "." in module else "gpu_node.container_toolkit." + module,
        "-a", json.dumps(args),
    ]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    env = ansible_env(ANSIBLE_STDOUT_CALLBACK="minimal")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(REPO), check=False, timeout=MODULE_TIMEOUT)
    # minimal callback: "localhost | SUCCESS => {json}"; --diff output comes before it.
    marker = proc.stdout.find("localhost | ")
    start = proc.stdout.find("{", marker) if marker >= 0 else -1
    try:
        result = json.loads(proc.stdout[start:]) if start >= 0 else None
    except ValueError:
        result = None
    if result is None:
        raise AssertionError("ansible printed no result (rc %d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
    result["_diff_text"] = proc.stdout[:marker]
    result["_rc"] = proc.returncode
    result["_stderr"] = proc.stderr
    return result


def run_playbook(playbook, extra_vars=None, check=False, diff=False, inventory="localhost,", extra_args=(), env=None):
    """``ansible-playbook``; returns the CompletedProcess. See :func:`recap` for the totals."""
    cmd = ["ansible-playbook", "-i", inventory, str(playbook)]
    if inventory == "localhost,":
        cmd += ["-c", "local"]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    cmd += list(extra_args)
    full_env = ansible_env()
    full_env.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, cwd=str(REPO), check=False)


def recap(stdout):
    """``{host: {"ok": n, "changed": n, "failed": n, ...}}`` from the PLAY RECAP lines."""
    totals = {}
    lines = stdout.splitlines()
    if "PLAY RECAP" not in stdout:
        raise AssertionError("no PLAY RECAP in output:\n" + stdout)
    for line in lines[[i for i, text in enumerate(lines) if text.startswith("PLAY RECAP")][-1] + 1:]:
        host, sep, counts = line.partition(" : ")
        if not sep:
            continue
        totals[host.strip()] = {k: int(v) for k, v in (item.split("=") for item in counts.split())}
    return totals


def verify_output(stdout):
    """``(table, details)``: the fleet table's lines (header first, a node a line) and the problem
    lines under it, from verify.yml's "Fleet table" task as the default stdout callback prints it."""
    lines = stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("TASK [Fleet table]")))
    opening = next(index for index in range(start + 1, len(lines)) if lines[index].startswith("ok: ["))
    body = ["{"]
    for line in lines[opening + 1:]:
        body.append(line)
        if line == "}":
            break
    printed = json.loads("\n".join(body))["msg"]
    blank = printed.index("") if "" in printed else len(printed)
    return printed[:blank], printed[blank + 1:]
