#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv and link the collection
# where Ansible finds it. Idempotent: reinstalls only when a requirements file changed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv="$repo/.venv"
req="${1:-requirements-test.txt}"
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
stamp="$venv/.installed-$(cat "$repo/requirements.txt" "$repo/$req" | sha256sum | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$repo/$req"
  touch "$stamp"
fi

link="$repo/.cache/collections/ansible_collections/gpu_node/container_toolkit"
mkdir -p "$(dirname "$link")"
[ -L "$link" ] || ln -s "$repo" "$link"
