#!/usr/bin/env bash
# Install the Debian packages listed in the files given (one a line, `#` comments; default: the
# demo's and the test suite's lists) that are not installed yet:
#   scripts/system-deps.sh scripts/apt-packages-demo.txt
# apt's whole output goes to .cache/logs/apt.log; the terminal gets a line per package downloaded
# and set up, and the log's tail when apt fails.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
lists=("$@")
[ ${#lists[@]} -gt 0 ] || lists=("$repo/scripts/apt-packages-demo.txt" "$repo/scripts/apt-packages.txt")
wanted=()
for list in "${lists[@]}"; do
  [ -f "$list" ] || list=$repo/$list
  [ -f "$list" ] || { echo "system-deps: no package list $list" >&2; exit 2; }
  mapfile -t -O "${#wanted[@]}" wanted < <(sed -E 's/#.*//; s/[[:space:]]+//g; /^$/d' "$list")
done
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "missing system packages: ${missing[*]}" >&2
  echo "install them (Debian/Ubuntu: sudo apt-get install ${missing[*]}) and run again" >&2
  exit 1
fi

log_dir=$repo/.cache/logs
log=$log_dir/apt.log
mkdir -p "$log_dir"
: >"$log"
export DEBIAN_FRONTEND=noninteractive
start=$SECONDS
# apt_step WHAT COMMAND...: runs COMMAND with its output added to the log, showing the lines that
# name a package; on failure shows the log's tail.
apt_step() {
  local what=$1; shift
  if ! "$@" 2>&1 | tee -a "$log" | { sed -n -u -E \
      -e 's/^Get:[0-9]+ [^ ]+ [^ ]+ [^ ]+ ([^ ]+) [^ ]+ ([^ ]+) \[([^]]*)\]$/  downloading \1 \2 (\3)/p' \
      -e 's/^(Setting up [^ ]+).*/  \1/p' -e 's/^(Need to get .*)/  \1/p'; }; then
    echo "system-deps: $what failed; the last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
}
echo "installing system packages: ${missing[*]} (full output: $log)"
echo "  apt-get update..."
apt_step "apt-get update" apt-get update
plan=$(apt-get install -y --no-install-recommends --print-uris -qq "${missing[@]}" 2>/dev/null || true)
echo "  $(grep -c "^'" <<<"$plan" || true) packages with their dependencies to download," \
  "$(awk "/^'/ { bytes += \$3 } END { printf \"%d\", bytes / 1000000 }" <<<"$plan") MB"
apt_step "apt-get install" apt-get install -y --no-install-recommends "${missing[@]}"
echo "system packages installed in $((SECONDS - start)) s"
