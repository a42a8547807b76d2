#!/usr/bin/env bash
# The collection as Galaxy users get it: build the tarball, install it offline into an empty
# path, and run a module from the installed copy against a simulated COS node.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
# shellcheck source=scripts/env.sh
. scripts/env.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ansible-galaxy collection build --force --output-path "$work/dist" . >/dev/null
tarball=$(ls "$work"/dist/gpu_node-container_toolkit-*.tar.gz)
echo "built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"
ansible-galaxy collection install --offline --force -p "$work/collections" "$tarball" >/dev/null
python tests/support/fakenode.py --layout cos "$work/node" >/dev/null
out=$(ANSIBLE_COLLECTIONS_PATH="$work/collections" ansible localhost -c local -i localhost, \
  -m gpu_node.container_toolkit.nvidia_driver_info -a "host_root=$work/node")
grep -q '"driver_root": "/home/kubernetes/bin/nvidia"' <<<"$out" || { echo "$out"; echo "installed module did not report the COS driver root" >&2; exit 1; }
ANSIBLE_COLLECTIONS_PATH="$work/collections" ansible-doc -l gpu_node.container_toolkit
echo "installed copy runs: ok"
