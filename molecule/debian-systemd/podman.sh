#!/usr/bin/env bash
# podman as this scenario needs it on a Debian 12 CI machine (MOLECULE_PODMAN_EXECUTABLE and the
# platform's ansible_podman_executable name this script): runc, because crun fails here on rlimits
# and hybrid cgroups; cgroupfs and file events, because systemd is not PID 1 on the host; storage
# of its own under .cache/molecule, so the cached image survives and nothing else's podman state is
# touched, with the vfs driver, because overlay leaves a mount behind that keeps `rm -rf .cache`
# from working. containers.conf next to this script lowers the default ulimits below the host's limits.
#
# The run root and podman's tmpdir do not follow the checkout: podman 4.3 refuses a run root
# longer than 50 characters ("the specified runroot is longer than 50 characters"), and both
# belong on a tmpfs that a reboot empties (podman tells a reboot by them). They go to
# /run/gpn-podman-<hash> (/tmp/gpn-podman-<hash> where /run is not writable), the hash being that
# of the storage path, so each checkout has its own and keeps it from run to run.
# `podman.sh --print-settings` prints the three paths and runs nothing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state=${GPU_NODE_PODMAN_STATE:-$(cd "$here/../.." && pwd)/.cache/molecule/podman}
key=$(printf '%s' "$state" | sha256sum | cut -c1-12)
if [ -d /run ] && [ -w /run ]; then
  volatile=/run/gpn-podman-$key
else
  volatile=/tmp/gpn-podman-$key
fi
root=$state/storage runroot=$volatile/run tmpdir=$volatile/tmp

if [ "${1:-}" = --print-settings ]; then
  printf 'root=%s\nrunroot=%s\ntmpdir=%s\n' "$root" "$runroot" "$tmpdir"
  exit 0
fi
[ -d "$volatile" ] || mkdir -m 0700 "$volatile"
if [ ! -O "$volatile" ]; then
  echo "podman.sh: $volatile belongs to someone else; not using it" >&2
  exit 1
fi
export CONTAINERS_CONF="$here/containers.conf"
exec podman --runtime /usr/sbin/runc --cgroup-manager cgroupfs --events-backend file \
  --storage-driver vfs --root "$root" --runroot "$runroot" --tmpdir "$tmpdir" "$@"
