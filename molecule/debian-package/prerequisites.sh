#!/usr/bin/env bash
# The debian-package scenario runs on the debian-systemd scenario's node image (Debian 12 with
# systemd, python3-apt, containerd and docker.io, built offline by that scenario): build it the same way.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../debian-systemd/prerequisites.sh"
