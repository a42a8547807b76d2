#!/usr/bin/env bash
# Print the first Python found of the versions named, newest first: scripts/python.sh 3.13 3.12
# Looks for python3.X on PATH (one that runs: pyenv's shims answer for versions not selected too),
# then for builds of pyenv (versions/3.X.*). Exits 1, naming what it looked for, when none is there.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: scripts/python.sh VERSION..." >&2; exit 2; }
pyenv_root=${PYENV_ROOT:-}
if [ -z "$pyenv_root" ] && command -v pyenv >/dev/null; then
  pyenv_root=$(pyenv root 2>/dev/null)
fi
for version in "$@"; do
  candidates=()
  found=$(command -v "python$version" 2>/dev/null) && candidates+=("$found")
  if [ -n "$pyenv_root" ]; then
    for build in "$pyenv_root/versions/$version".*/bin/python3; do
      [ -x "$build" ] && candidates+=("$build")
    done
  fi
  for candidate in "${candidates[@]}"; do
    # The interpreter itself, also when the one found on PATH is a venv's (.venv/bin comes first
    # in the scripts' PATH).
    if base=$("$candidate" -c 'import os, sys, venv; print(os.path.join(sys.base_prefix, "bin", "python%d.%d" % sys.version_info[:2]))' 2>/dev/null) &&
       [ -x "$base" ]; then
      echo "$base"
      exit 0
    fi
  done
done
echo "scripts/python.sh: no Python $* found (on PATH as python3.X, or built by pyenv)" >&2
exit 1
