"""Run Python code where writes really fail: on a full filesystem, or on a read-only one.

Both use a private mount namespace (``unshare -m``, root only), so nothing outside the test sees
the mounts: ``on_full_disk`` mounts a 64 KiB tmpfs at a directory and fills it before the code runs,
``on_read_only`` bind-mounts a directory read-only over itself. The code runs in a fresh
interpreter with this process's ``sys.path`` and gets the directory as ``ROOT``; what it prints
comes back.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import textwrap

PRELUDE = textwrap.dedent("""
    import os, sys
    sys.path[:0] = %r
    ROOT = sys.argv[1]

    def fill(directory):
        fd = os.open(os.path.join(directory, ".filler"), os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"x" * 4096)
        except OSError:
            os.close(fd)

    def unfill(directory):
        os.unlink(os.path.join(directory, ".filler"))
""")


def _run(mount, root, code, setup):
    script = PRELUDE % (sys.path,) + textwrap.dedent(setup) + textwrap.dedent(code)
    shell = "%s && exec %s -c \"$1\" %s" % (mount, shlex.quote(sys.executable), shlex.quote(str(root)))
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", shell, "sh", script],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError("constrained run failed (rc %d):\n%s\n%s" % (done.returncode, done.stdout, done.stderr))
    return done.stdout


def on_full_disk(root, code, before=""):
    """Run ``before`` on an empty 64 KiB tmpfs at ``root``, fill it up, then run ``code``."""
    mount = "mount -t tmpfs -o size=64k tmpfs %s" % shlex.quote(str(root))
    return _run(mount, root, code, before + "\nfill(ROOT)\n")


def on_read_only(root, code):
    """Run ``code`` with ``root`` (prepared by the caller) mounted read-only."""
    quoted = shlex.quote(str(root))
    mount = "mount --bind %s %s && mount -o remount,bind,ro %s" % (quoted, quoted, quoted)
    return _run(mount, root, code, "")
