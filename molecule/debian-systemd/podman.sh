#!/usr/bin/env bash
# podman as this scenario needs it on a Debian 12 CI machine (MOLECULE_PODMAN_EXECUTABLE and the
# platform's ansible_podman_executable name this script): runc, because crun fails here on rlimits
# and hybrid cgroups; cgroupfs and file events, because systemd is not PID 1 on the host; storage
# of its own under .cache/molecule, so the cached image survives and nothing else's podman state is
# touched, with the vfs driver, because overlay leaves a mount behind that keeps `rm -rf .cache`
# from working. containers.conf next to this script lowers the default ulimits below the host's limits.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state=${GPU_NODE_PODMAN_STATE:-$(cd "$here/../.." && pwd)/.cache/molecule/podman}
export CONTAINERS_CONF="$here/containers.conf"
exec podman --runtime /usr/sbin/runc --cgroup-manager cgroupfs --events-backend file \
  --storage-driver vfs --root "$state/vfs" --runroot "$state/run" --tmpdir "$state/tmp" "$@"
