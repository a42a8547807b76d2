#!/usr/bin/env bash
# README command 1: build a simulated GKE-on-COS GPU node (a directory used as host_root) and run
# playbooks/site.yml against it on localhost, then report what changed (see scripts/demo.py).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
if [ "$(id -u)" -ne 0 ]; then
  echo "the demo node's /dev/nvidia* are real device nodes made with mknod: run as root (sudo make demo)" >&2
  exit 1
fi
scripts/system-deps.sh
scripts/venv.sh
# shellcheck source=scripts/env.sh
. scripts/env.sh
python scripts/demo.py
