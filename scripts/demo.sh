#!/usr/bin/env bash
# README command 1: build a simulated GKE-on-COS GPU node (a directory used as host_root) and run
# playbooks/site.yml against it on localhost, then report what changed (see scripts/demo.py).
# Installs only what the demo needs: the Debian packages in scripts/apt-packages-demo.txt and the
# Python packages in requirements-demo.txt (into .venv, which the tests share and add to).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
if [ "$(id -u)" -ne 0 ]; then
  echo "the demo node's /dev/nvidia* are real device nodes made with mknod: run as root (sudo make demo)" >&2
  exit 1
fi
# shellcheck source=scripts/env.sh
. scripts/env.sh
scripts/system-deps.sh scripts/apt-packages-demo.txt
scripts/venv.sh requirements-demo.txt
echo "building the simulated node and running playbooks/site.yml against it (twice)..."
python scripts/demo.py
