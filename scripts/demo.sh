#!/usr/bin/env bash
# README command 1: build a simulated GKE-on-COS GPU node (a directory used as host_root) and run
# the collection's playbooks against it on localhost, then report what was found and changed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
if [ "$(id -u)" -ne 0 ]; then
  echo "the demo node's /dev/nvidia* are real device nodes made with mknod: run as root (sudo make demo)" >&2
  exit 1
fi
scripts/system-deps.sh
scripts/venv.sh requirements.txt
# shellcheck source=scripts/env.sh
. scripts/env.sh

node="${DEMO_NODE:-$repo/.cache/demo/cos-node}"
echo "=== building a simulated COS GPU node at $node"
python tests/support/fakenode.py --fresh --layout cos --gpus 2 "$node" >/dev/null
echo "=== ansible-playbook playbooks/discover.yml (host_root=$node)"
ansible-playbook -i localhost, -c local playbooks/discover.yml \
  -e gpu_node_hosts=localhost -e "gpu_node_host_root=$node"
