"""Where this machine keeps an old Python 3 (RHEL 8's platform-python is 3.6): for the node-Python check."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess


def find(minor):
    """A ``python3.<minor>`` interpreter: on PATH, or one pyenv built; None when there is none."""
    candidates = [shutil.which("python3.%d" % minor)]
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    if shutil.which("pyenv"):
        found = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False).stdout.strip()
        root = found or root
    candidates += sorted(glob.glob(os.path.join(root, "versions", "3.%d.*" % minor, "bin", "python3")))
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return candidate
    return None
