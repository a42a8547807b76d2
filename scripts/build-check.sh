#!/usr/bin/env bash
# The collection as Galaxy users get it: build the tarball, install it offline into an empty
# path (the only one Ansible searches), and run its playbooks by name against a simulated COS
# node: gpu_node.container_toolkit.site with --check (nothing on the node may change), for real,
# again (changed=0), then gpu_node.container_toolkit.uninstall, which must give back containerd's
# config.toml byte for byte.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
# shellcheck source=scripts/env.sh
. scripts/env.sh
if [ "$(id -u)" -ne 0 ]; then
  echo "the simulated node's /dev/nvidia* are made with mknod: run as root" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "$*" >&2; exit 1; }
ansible-galaxy collection build --force --output-path "$work/dist" . >/dev/null
tarball=$(ls "$work"/dist/gpu_node-container_toolkit-*.tar.gz)
echo "built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"

# From here on Ansible sees the installed copy only: no checkout, no sys.path collections, and a
# working directory with no ansible.cfg or collections/ beside it.
export ANSIBLE_COLLECTIONS_PATH="$work/collections" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False
export ANSIBLE_RETRY_FILES_ENABLED=False
unset ANSIBLE_CONFIG ANSIBLE_ROLES_PATH
cd "$work"
ansible-galaxy collection install --offline --force -p "$work/collections" "$tarball" >/dev/null
installed="$work/collections/ansible_collections/gpu_node/container_toolkit"
listed=$(ansible-galaxy collection list gpu_node.container_toolkit --format json)
python - "$installed" "$listed" <<'EOF'
import json
import os
import sys

installed, listed = sys.argv[1], json.loads(sys.argv[2])
paths = [os.path.join(base, "gpu_node", "container_toolkit") for base, found in listed.items() if "gpu_node.container_toolkit" in found]
if paths != [installed]:
    sys.exit("Ansible finds gpu_node.container_toolkit at %s, want only %s" % (paths, installed))
EOF
for f in playbooks/site.yml playbooks/uninstall.yml roles/gpu_node/tasks/main.yml; do
  [ -f "$installed/$f" ] || { echo "the tarball lacks $f" >&2; exit 1; }
done
ansible-doc -l gpu_node.container_toolkit >"$work/doc.txt"
echo "ansible-doc lists $(wc -l <"$work/doc.txt") modules from the installed copy"

node="$work/node"
python "$repo/tests/support/fakenode.py" --layout cos --missing nvidiactl "$node" >/dev/null
python - "$repo/tests/support" "$work/artifacts" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import toolkit_artifacts
toolkit_artifacts.build_tree(sys.argv[2])
EOF
extra=$(printf '{"gpu_node_hosts": "localhost", "gpu_node_host_root": "%s", "gpu_node_toolkit_src": "%s", "gpu_node_containerd_restart_mode": "none"}' \
  "$node" "$work/artifacts")
config="$node/etc/containerd/config.toml"
cp -p "$config" "$work/config.toml.orig"

# What Galaxy and the `ansible` package check before they take a collection: Galaxy's importer (its
# ansible-lint run included) and antsibull-docs' docs linter, on the tarball and on the installed copy.
# Each must report nothing: no error and no warning.
publish_venv="$repo/.cache/publish"
publish_req="$repo/tests/requirements-publish.txt"
publish_stamp="$publish_venv/.installed-$(sha256sum <"$publish_req" | cut -c1-16)"
if [ ! -e "$publish_stamp" ]; then
  rm -rf "$publish_venv"
  "$repo/.venv/bin/python" -m venv "$publish_venv"
  "$publish_venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade -r "$publish_req" \
    >"$repo/.cache/logs/pip-publish.log" 2>&1 || { tail -n 30 "$repo/.cache/logs/pip-publish.log"; fail "installing $publish_req failed"; }
  touch "$publish_stamp"
fi
printf '[galaxy-importer]\nRUN_ANSIBLE_TEST = False\nRUN_ANSIBLE_LINT = True\n' >"$work/galaxy-importer.cfg"
# Both write into HOME (antsibull.log, ~/.ansible/tmp from the importer's ansible-doc): a throwaway one.
mkdir -p "$work/importer" "$work/publish-home"
if ! (cd "$work/importer" && HOME="$work/publish-home" PATH="$publish_venv/bin:$PATH" GALAXY_IMPORTER_CONFIG="$work/galaxy-importer.cfg" \
      "$publish_venv/bin/python" -m galaxy_importer.main "$tarball" >"$work/importer.log" 2>&1); then
  tail -n 40 "$work/importer.log"
  fail "galaxy-importer failed on $(basename "$tarball")"
fi
if grep -E '^(WARNING|ERROR)' "$work/importer.log"; then
  fail "galaxy-importer reported the errors or warnings above"
fi
echo "galaxy-importer $("$publish_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("galaxy-importer"))'): no error, no warning"
if ! docs_lint=$(cd "$installed" && HOME="$work/publish-home" PATH="$publish_venv/bin:$PATH" \
                   antsibull-docs lint-collection-docs --plugin-docs . 2>&1) ||
   [ -n "$docs_lint" ]; then
  echo "$docs_lint"
  fail "antsibull-docs lint-collection-docs --plugin-docs reported the above"
fi
echo "antsibull-docs lint-collection-docs --plugin-docs: clean"

# Every entry under the node: type, mode, owner, size, mtime, device numbers, link target, content.
snapshot() {
  (cd "$1" && find . -printf '%p %y %m %U:%G %s %T@ %l\n' | LC_ALL=C sort &&
    find . -type b -o -type c | LC_ALL=C sort | xargs -r stat -c '%n %t:%T' &&
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
}

# play NAME PLAYBOOK [ARGS...]: runs it, keeps its output in $work/NAME.log, prints its recap line.
play() {
  local name=$1 playbook=$2; shift 2
  local log="$work/$name.log"
  if ! ansible-playbook -i localhost, -c local "$playbook" -e "$extra" "$@" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "$name: ansible-playbook $playbook failed" >&2
    return 1
  fi
  recap=$(grep -E '^localhost +: ' "$log" | tail -n 1)
  echo "$name: ${recap#*: }"
}
count() { sed -nE "s/.* $1=([0-9]+).*/\1/p" <<<"$recap"; }

snapshot "$node" >"$work/before.txt"
play check gpu_node.container_toolkit.site --check --diff
[ "$(count changed)" -gt 0 ] || fail "--check predicted no changes on an unprovisioned node"
snapshot "$node" >"$work/after-check.txt"
if ! diff -u "$work/before.txt" "$work/after-check.txt" >"$work/check.diff"; then
  head -n 40 "$work/check.diff"
  fail "--check changed the node (diff above)"
fi
grep -q 'runtimes.nvidia' "$work/check.log" || fail "--check --diff did not preview the containerd edit"

play converge gpu_node.container_toolkit.site
[ "$(count changed)" -gt 0 ] || fail "the first run changed nothing"
grep -q 'BinaryName = "/home/kubernetes/bin/nvidia/toolkit/nvidia-container-runtime"' "$config" ||
  fail "containerd's config has no nvidia runtime after the first run"
[ -e "$node/var/run/cdi/management.nvidia.com-gpu.yaml" ] || fail "no CDI spec after the first run"
[ -c "$node/dev/nvidiactl" ] || fail "/dev/nvidiactl was not created"

play idempotence gpu_node.container_toolkit.site
[ "$(count changed)" -eq 0 ] || { grep -E '^changed:' "$work/idempotence.log" || true; fail "the second run was not idempotent"; }

play uninstall gpu_node.container_toolkit.uninstall
[ "$(count changed)" -gt 0 ] || fail "uninstall changed nothing"
cmp "$work/config.toml.orig" "$config" || { diff -u "$work/config.toml.orig" "$config" || true; fail "uninstall did not restore config.toml byte for byte"; }
[ ! -e "$node/var/run/cdi/management.nvidia.com-gpu.yaml" ] || fail "uninstall left the CDI spec"
leftovers=""
if [ -d "$node/home/kubernetes/bin/nvidia/toolkit" ]; then
  leftovers=$(find "$node/home/kubernetes/bin/nvidia/toolkit" -mindepth 1 | head -n 5)
fi
[ -z "$leftovers" ] || fail "uninstall left files in the toolkit directory: $leftovers"
echo "installed copy: check changed nothing, converged, idempotent, uninstall restored config.toml: ok"
