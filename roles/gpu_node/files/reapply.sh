#!/bin/sh
# Managed by gpu_node.container_toolkit (roles/gpu_node/files/reapply.sh); provisioning writes it
# again as it is, so edits here do not last.
#
# Re-applies what gpu_node.container_toolkit provisioned on this Container-Optimized OS node
# after a reboot: COS's /etc and /var/run are tmpfs, and GKE regenerates containerd's config (and
# Docker's daemon.json on images that run Docker) at boot. Run at boot (cloud-init runcmd or a
# unit) after GKE has written its config.
#
# It only restores a provisioned engine config when the regenerated one is byte-identical to the
# one that was provisioned from; anything else means GKE changed its config and the playbook must
# run again, which this script says and exits non-zero. After a driver upgrade the CDI specs are
# made again from the running driver by gpu-node-cdi, kept next to this script.
#
# The node's paths are in reapply.conf, next to this script, where provisioning keeps its copies.
# HOST_ROOT: where the node's / is seen (tests). GPU_NODE_RESTART and GPU_NODE_DOCKER_RESTART: the
# commands that restart containerd and Docker; GPU_NODE_RESTART=none skips every restart.
set -eu
host_root="${HOST_ROOT:-}"
state_dir=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
# shellcheck source=/dev/null
. "$state_dir/reapply.conf"
# Set by reapply.conf, which the role writes with every one of them.
config="${host_root}${containerd_config_path:?}"
docker_config="${host_root}${docker_config_path:?}"
docker_journal="${host_root}${docker_journal_path:?}"
dev_root="${dev_root:?}"
restart="${GPU_NODE_RESTART:-systemctl restart containerd}"
docker_restart="${GPU_NODE_DOCKER_RESTART:-systemctl restart docker}"
status=0

log() { echo "gpu-node-reapply: $*" >&2; }

restart_needed=false
if [ -f "$state_dir/containerd-base.toml" ] && [ -f "$state_dir/containerd-provisioned.toml" ]; then
  if cmp -s "$config" "$state_dir/containerd-provisioned.toml"; then
    log "containerd config already provisioned"
  elif cmp -s "$config" "$state_dir/containerd-base.toml"; then
    cp "$state_dir/containerd-provisioned.toml" "$config.gpu-node.tmp"
    mv "$config.gpu-node.tmp" "$config"
    log "restored the provisioned containerd config"
    restart_needed=true
  else
    log "containerd config differs from the one provisioning started from: run the provisioning playbook again"
    status=1
  fi
fi

# Docker: the journal goes back with daemon.json (written first, as docker_runtime does), so that
# the next playbook run, or an uninstall, still knows what to give back.
docker_restart_needed=false
if [ -f "$state_dir/docker-provisioned.json" ] &&
  { [ -f "$state_dir/docker-base.json" ] || [ -f "$state_dir/docker-base.missing" ]; }; then
  if cmp -s "$docker_config" "$state_dir/docker-provisioned.json"; then
    log "Docker's daemon.json already provisioned"
  elif { [ -f "$state_dir/docker-base.json" ] && cmp -s "$docker_config" "$state_dir/docker-base.json"; } ||
    { [ -f "$state_dir/docker-base.missing" ] && [ ! -e "$docker_config" ]; }; then
    mkdir -p "$(dirname "$docker_config")"
    if [ -f "$state_dir/docker-journal.json" ]; then
      cp "$state_dir/docker-journal.json" "$docker_journal.gpu-node.tmp"
      mv "$docker_journal.gpu-node.tmp" "$docker_journal"
    fi
    cp "$state_dir/docker-provisioned.json" "$docker_config.gpu-node.tmp"
    mv "$docker_config.gpu-node.tmp" "$docker_config"
    log "restored Docker's provisioned daemon.json"
    docker_restart_needed=true
  else
    log "Docker's daemon.json differs from the one provisioning started from: run the provisioning playbook again"
    status=1
  fi
fi

# The control device nodes first: a spec made again below lists the ones that exist.
major() { awk -v name="$1" '$2 == name { print $1; exit }' "${host_root}/proc/devices"; }
nvidia_major=$(major nvidia-frontend)
[ -n "$nvidia_major" ] || nvidia_major=$(major nvidia)
uvm_major=$(major nvidia-uvm)
make_node() {
  if [ -n "$2" ] && [ ! -e "${host_root}${dev_root}/$1" ]; then
    mknod -m 0666 "${host_root}${dev_root}/$1" c "$2" "$3"
    log "created /dev/$1 ($2:$3)"
  fi
}
make_node nvidiactl "$nvidia_major" 255
make_node nvidia-modeset "$nvidia_major" 254
make_node nvidia-uvm "$uvm_major" 0
make_node nvidia-uvm-tools "$uvm_major" 1

# The driver version the running kernel module reports, from /proc/driver/nvidia/version.
running_driver() {
  awk '/NVRM version/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+(\.[0-9]+)?$/) { print $i; exit } }' \
    "${host_root}/proc/driver/nvidia/version" 2>/dev/null || true
}

if [ -d "$state_dir/cdi" ]; then
  version=$(cat "$state_dir/driver-version" 2>/dev/null || true)
  running=$(running_driver)
  if [ -n "$version" ] && [ "$running" != "$version" ]; then
    # A driver upgrade (GKE installs the new driver at boot): the kept specs name the old files.
    # gpu-node-cdi makes them again from the running driver, as the provisioning playbook would.
    if [ -x "$state_dir/gpu-node-cdi" ] &&
      "$state_dir/gpu-node-cdi" generate --config "$state_dir/cdi-refresh.json" --host-root "${host_root:-/}" >&2; then
      # Kept for the next boot, as provisioning keeps them.
      (cd "$state_dir/cdi" && find . -type f) | while read -r relative; do
        cp "${host_root}/${relative#./}" "$state_dir/cdi/$relative.gpu-node.tmp"
        mv "$state_dir/cdi/$relative.gpu-node.tmp" "$state_dir/cdi/$relative"
      done
      printf '%s\n' "$running" > "$state_dir/driver-version.gpu-node.tmp"
      mv "$state_dir/driver-version.gpu-node.tmp" "$state_dir/driver-version"
      log "regenerated the CDI specs for driver ${running:-unknown} (they were made for $version)"
    else
      log "the CDI specs were made for driver $version, the running driver is ${running:-not loaded}, and gpu-node-cdi could not make them again: run the provisioning playbook again"
      status=1
    fi
  else
    # $state_dir/cdi mirrors the host paths of the specs (cdi/var/run/cdi/management.nvidia.com-gpu.yaml).
    (cd "$state_dir/cdi" && find . -type f) | while read -r relative; do
      target="${host_root}/${relative#./}"
      if ! cmp -s "$state_dir/cdi/$relative" "$target"; then
        mkdir -p "$(dirname "$target")"
        cp "$state_dir/cdi/$relative" "$target.gpu-node.tmp"
        mv "$target.gpu-node.tmp" "$target"
        log "restored CDI spec /${relative#./}"
      fi
    done
  fi
fi


if [ "$restart" != none ]; then
  if [ "$restart_needed" = true ]; then
    $restart
  fi
  if [ "$docker_restart_needed" = true ] && [ "$docker_restart" != none ]; then
    $docker_restart
  fi
fi
exit "$status"
