#!/usr/bin/env bash
# What the debian-systemd scenario needs before `molecule test -s debian-systemd`; run by
# scripts/molecule.sh. Idempotent, and quick once its results are cached under .cache/:
#   - the containers.podman collection (the podman driver's modules and connection), taken from the
#     PyPI package `ansible`, because Galaxy cannot be reached;
#   - the node image: a `debootstrap --variant=minbase` Debian 12 tree with systemd, python3,
#     python3-apt (what ansible.builtin.apt needs: the debian-package scenario installs with it) and
#     Debian's containerd, runc and docker.io (dockerd 20.10), imported into this scenario's podman storage (see podman.sh)
#     and never pulled from a registry. Its tag is a hash of the recipe below; changing the recipe
#     builds a new image, and older images and trees are removed. molecule.yml names the image by
#     its second tag, `current`. debootstrap's progress (some 600 `I:` lines) goes to
#     .cache/molecule/debian-systemd/debootstrap.log, whose tail is printed when it fails.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/env.sh
. "$repo/scripts/env.sh"
podman=$here/podman.sh
cache=$repo/.cache/molecule/debian-systemd

# While a step's output goes to $step_log, a failure prints that log's tail.
step_log=""
scratch=()
on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "$step_log" ] && [ -f "$step_log" ]; then
    echo "--- debian-systemd: failed; the last lines of $step_log:" >&2
    tail -n 40 "$step_log" >&2
  fi
  [ ${#scratch[@]} -eq 0 ] || rm -rf "${scratch[@]}"
}
trap on_exit EXIT

# --- containers.podman -------------------------------------------------------------------------
ansible_pkg=ansible==12.3.0
collection=$ANSIBLE_COLLECTIONS_PATH/ansible_collections/containers/podman
if [ ! -f "$collection/MANIFEST.json" ]; then
  echo "--- debian-systemd: containers.podman from $ansible_pkg (pip download of a wheel of about 50 MB)"
  wheels=$(mktemp -d)
  scratch+=("$wheels")
  python -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --dest "$wheels" "$ansible_pkg"
  rm -rf "$collection.tmp"
  python - "$wheels" "$collection.tmp" <<'PY'
import sys
import zipfile
from pathlib import Path

wheels, dest = Path(sys.argv[1]), Path(sys.argv[2])
prefix = "ansible_collections/containers/podman/"
(wheel,) = wheels.glob("ansible-*.whl")
with zipfile.ZipFile(wheel) as archive:
    members = [m for m in archive.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
    for member in members:
        target = dest / member.filename[len(prefix):]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(archive.read(member))
if not (dest / "MANIFEST.json").is_file():
    sys.exit(f"{wheel.name} has no {prefix}MANIFEST.json")
PY
  rm -rf "$collection"
  mv "$collection.tmp" "$collection"
fi

# --- the node image ----------------------------------------------------------------------------
suite=bookworm
mirror=http://deb.debian.org/debian
packages=systemd,python3,python3-apt,containerd,runc,docker.io

# Everything that decides the image's content; its hash is the image's tag.
build_tree() {
  local tree=$1
  mkdir -p "$cache/debs"
  debootstrap --variant=minbase --include="$packages" --cache-dir="$cache/debs" \
    "$suite" "$tree" "$mirror"
  # A container has no consoles, no kernel modules to load and no network to wait for.
  local unit
  for unit in getty.target console-getty.service systemd-modules-load.service \
    systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer; do
    ln -sf /dev/null "$tree/etc/systemd/system/$unit"
  done
  # dockerd in a container with no network, a read-only /proc/sys (a fresh network namespace has
  # ip_forward 0, which dockerd would set to 1 and fails to) and no overlay mounts: the node's own
  # daemon.json (indented with four spaces), which uninstall must give back byte for byte.
  printf '{\n    "bridge": "none",\n    "ip-forward": false,\n    "iptables": false,\n    "storage-driver": "vfs"\n}\n' \
    >"$tree/etc/docker/daemon.json"
  [ -e "$tree/etc/systemd/system/multi-user.target.wants/containerd.service" ]
  [ -e "$tree/etc/systemd/system/multi-user.target.wants/docker.service" ]
  [ -f "$tree/etc/containerd/config.toml" ]
  rm -rf "$tree"/var/cache/apt/archives/*.deb "$tree"/var/lib/apt/lists/*
  printf '' >"$tree/etc/machine-id"
}
import_change='CMD ["/lib/systemd/systemd"]'
recipe_hash=$( {
  printf '%s\n' "$suite" "$mirror" "$packages" "$import_change"
  declare -f build_tree
} | sha256sum | cut -c1-12)
image=localhost/gpu-node-debian-systemd:$recipe_hash
tarball=$cache/rootfs-$recipe_hash.tar

# podman.sh used to keep vfs/, run/ and tmp/ under .cache/molecule/podman; it now keeps storage/
# there and its run root outside the checkout. The old storage's database names the old run
# root, which podman refuses: remove it (the image is imported again from the cached tarball).
state=$("$podman" --print-settings | sed -n 's|^root=\(.*\)/storage$|\1|p')
[ -n "$state" ] || { echo "--- debian-systemd: podman.sh --print-settings names no storage" >&2; exit 1; }
for old in vfs run tmp; do
  if [ -d "$state/$old" ]; then rm -rf "${state:?}/$old"; fi
done

if ! "$podman" image exists "$image"; then
  mkdir -p "$cache"
  if [ ! -f "$tarball" ]; then
    if ! command -v debootstrap >/dev/null; then
      step_log=$cache/apt.log
      echo "--- debian-systemd: installing debootstrap (log: $step_log)"
      { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap; } >"$step_log" 2>&1
    fi
    step_log=$cache/debootstrap.log
    echo "--- debian-systemd: debootstrap $suite with $packages from $mirror (about a minute; log: $step_log)"
    start=$SECONDS
    tree=$cache/rootfs-$recipe_hash.tmp
    rm -rf "$tree"
    build_tree "$tree" >"$step_log" 2>&1
    step_log=""
    tar --numeric-owner --xattrs -C "$tree" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$tree"
    echo "--- debian-systemd: root filesystem built in $((SECONDS - start)) s ($(du -m "$tarball" | cut -f1) MB)"
  fi
  echo "--- debian-systemd: podman import $image"
  "$podman" import --quiet --change "$import_change" "$tarball" "$image" >/dev/null
fi
"$podman" tag "$image" "${image%:*}:current"

# Only the current recipe's image and tree are kept.
for old in "$cache"/rootfs-*.tar; do
  [ "$old" = "$tarball" ] || [ ! -e "$old" ] || rm -f "$old"
done
"$podman" images --format '{{.Repository}}:{{.Tag}}' localhost/gpu-node-debian-systemd |
  while read -r old; do
    case $old in "$image" | "${image%:*}:current") ;; *) "$podman" rmi "$old" >/dev/null || true ;; esac
  done
echo "--- debian-systemd: $image ready"
