#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv and link the collection where
# Ansible finds it: scripts/venv.sh [REQUIREMENTS] (default requirements-test.txt; `make demo`
# uses requirements-demo.txt). Idempotent: installs again only when the requirement files named,
# with those they include (-r), changed. The demo and the tests share .venv: each set has its own
# stamp, and the test set includes the demo's, so the tests install theirs on top.
# pip's whole output goes to .cache/logs/pip-<file>.log; the terminal gets the packages it
# collects and installs, and the log's tail when pip fails.
# Its Python is $PYTHON, else the newest that the newest ansible-core runs on (3.14, 3.13, 3.12, found
# by scripts/python.sh), else python3: so the suite runs on the newest ansible-core wherever the
# machine has such a Python (ansible-core 2.20 and later need 3.12; on 3.11 pip resolves 2.19).
# A .venv made with another Python is made again.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv="$repo/.venv"
req="${1:-requirements-test.txt}"
python=${PYTHON:-$("$repo/scripts/python.sh" 3.14 3.13 3.12 2>/dev/null || echo python3)}

# included FILE: FILE and the requirement files it includes, recursively (paths relative to it).
included() {
  local file=$1 inc
  echo "$file"
  while read -r inc; do
    included "$(dirname "$file")/$inc"
  done < <(sed -n -E 's/^[[:space:]]*(-r|--requirement)[[:space:]=]+([^[:space:]#]+).*/\2/p' "$file")
}

version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
if [ -x "$venv/bin/python" ] && [ "$(version_of "$venv/bin/python")" != "$(version_of "$python")" ]; then
  echo "the virtual environment $venv is Python $(version_of "$venv/bin/python"), not $(version_of "$python"): making it again"
  rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "creating the virtual environment $venv ($("$python" --version 2>&1))..."
  "$python" -m venv "$venv"
fi
mapfile -t files < <(included "$repo/$req")
stamp="$venv/.installed-$(cat "${files[@]}" | sha256sum | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  log_dir=$repo/.cache/logs
  log=$log_dir/pip-$(basename "${req%.txt}").log
  mkdir -p "$log_dir"
  : >"$log"
  start=$SECONDS
  echo "installing Python packages from $req into .venv (full output: $log)..."
  # pip_step COMMAND...: pip with its output in the log, showing what it collects and installs.
  pip_step() {
    if ! "$venv/bin/python" -m pip "$@" --disable-pip-version-check --progress-bar off 2>&1 | tee -a "$log" |
      { sed -n -u -E -e 's/^Collecting ([^ ]+).*/  collecting \1/p' -e 's/^(Successfully installed .*)/  \1/p' \
          -e 's/^(ERROR: .*)/  \1/p'; }; then
      echo "venv: pip $1 failed; the last lines of $log:" >&2
      tail -n 30 "$log" >&2
      exit 1
    fi
  }
  pip_step install --upgrade pip
  # --upgrade: the newest releases the ranges admit, as a user's fresh `pip install` gets them.
  pip_step install --upgrade -r "$repo/$req"
  touch "$stamp"
  echo "Python packages from $req installed in $((SECONDS - start)) s"
fi

link="$repo/.cache/collections/ansible_collections/gpu_node/container_toolkit"
mkdir -p "$(dirname "$link")"
[ -L "$link" ] || ln -s "$repo" "$link"
