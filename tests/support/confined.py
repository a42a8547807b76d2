"""Run a module file as Ansible runs it (``python MODULE ARGS_FILE``) in a private mount namespace,
after shell lines that mount something there: a tiny tmpfs filled up (a real ENOSPC) or a
read-only bind mount. What the module left is looked at inside the same namespace, before the
mounts go away with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

needs_unshare = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                                   reason="needs root and unshare for mounts in a private namespace")

DRIVER = textwrap.dedent("""
    import json, os, subprocess, sys
    spec = json.load(open(sys.argv[1]))
    subprocess.run(["sh", "-ec", spec["setup"]], check=True)
    proc = subprocess.run([sys.executable, spec["module"], spec["args_file"]], capture_output=True, text=True,
                          env=spec["env"], check=False)
    subprocess.run(["sh", "-ec", spec["after"]], check=True)
    seen = {}
    for path in spec["look"]:
        if os.path.isdir(path) and not os.path.islink(path):
            seen[path] = sorted(os.listdir(path))
        elif os.path.lexists(path):
            with open(path, "rb") as handle:
                seen[path] = handle.read().decode("utf-8", "replace")
        else:
            seen[path] = None
    print(json.dumps({"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr, "seen": seen}))
""")


def full_disk(mount_dir, size_k=64):
    """Shell lines: a ``size_k`` KiB tmpfs on ``mount_dir`` (a directory on this machine), keeping
    what was in it, then filled up with ``.filler`` (removed again by :data:`FREE`)."""
    return textwrap.dedent("""
        d=%(dir)s
        keep=$(mktemp -d)
        cp -a "$d/." "$keep/"
        mount -t tmpfs -o size=%(size)dk tmpfs "$d"
        cp -a "$keep/." "$d/"
        rm -rf "$keep"
        dd if=/dev/zero of="$d/.filler" bs=4096 2>/dev/null || true
    """) % {"dir": _q(mount_dir), "size": size_k}


def no_free_inodes(mount_dir):
    """Shell lines: a tmpfs on ``mount_dir`` keeping what was in it, whose inodes are then used up
    (a real ENOSPC for mknod, which needs no data block), by files in ``.filler/``."""
    return textwrap.dedent("""
        d=%(dir)s
        keep=$(mktemp -d)
        cp -a "$d/." "$keep/"
        mount -t tmpfs -o size=1m,nr_inodes=64 tmpfs "$d"
        cp -a "$keep/." "$d/"
        rm -rf "$keep"
        mkdir "$d/.filler"
        i=0
        while touch "$d/.filler/$i" 2>/dev/null; do i=$((i + 1)); done
    """) % {"dir": _q(mount_dir)}


def free(mount_dir):
    """Shell lines that undo :func:`full_disk` or :func:`no_free_inodes`."""
    return 'rm -rf %(d)s/.filler' % {"d": _q(mount_dir)}


def read_only(directory):
    """Shell lines: ``directory`` (on this machine) becomes a read-only bind mount of itself."""
    return 'mount --bind %(d)s %(d)s && mount -o remount,bind,ro %(d)s' % {"d": _q(str(directory))}


def run_confined(module, args, setup, look=(), after="true"):
    """Run ``plugins/modules/<module>.py`` with ``args`` after ``setup``; returns ``(result, seen)``.

    ``result`` is the module's JSON result (with ``_rc``); ``seen`` maps each of ``look`` (paths on
    this machine) to a file's text, a directory's sorted listing, or None, as found after ``after``.
    """
    with tempfile.TemporaryDirectory() as work:
        args_file = os.path.join(work, "args.json")
        with open(args_file, "w", encoding="utf-8") as handle:
            json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
        env = dict(os.environ, PYTHONPATH=os.environ.get("ANSIBLE_COLLECTIONS_PATH", str(REPO / ".cache/collections")))
        spec = {"setup": setup, "after": after, "module": str(REPO / "plugins" / "modules" / (module + ".py")),
                "args_file": args_file, "env": env, "look": [str(p) for p in look]}
        spec_file = os.path.join(work, "spec.json")
        with open(spec_file, "w", encoding="utf-8") as handle:
            json.dump(spec, handle)
        proc = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, "-c", DRIVER, spec_file],
                              capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    try:
        result = json.loads(report["stdout"])
    except ValueError:
        raise AssertionError("the module printed no result (rc %d):\n%s\n%s" % (
            report["rc"], report["stdout"], report["stderr"])) from None
    result["_rc"] = report["rc"]
    return result, report["seen"]


HOLD_LOCK = textwrap.dedent("""
    import sys, time
    sys.path[:0] = %r
    from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeRoot
    with NodeRoot(sys.argv[1]).locked():
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
    print("released", flush=True)
""")


@contextlib.contextmanager
def node_lock_held(host_root, seconds=1.5):
    """Another process holds the node's lock on ``host_root`` for ``seconds`` (from when this
    enters); on leaving, it has released it, having held it the whole time."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK % (sys.path,), str(host_root), str(seconds)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
        assert holder.wait(seconds + 10) == 0 and holder.stdout.read().strip() == "released"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.stdout.close()


def _q(text):
    return "'" + str(text).replace("'", "'\"'\"'") + "'"
