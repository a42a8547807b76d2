#!/usr/bin/env bash
# The whole test suite: lint, pytest (unit + integration with real containerd and podman),
# ansible-test sanity and units, molecule scenarios, the built collection installed offline and run, both ends of
# the requirements.txt ranges (compat). `scripts/test.sh pytest lint` runs only those stages.
#
# Each stage runs with HOME set to an empty directory of its own, and fails when it leaves anything
# there: the suite writes only in the checkout, .cache/ and temp dirs (scripts/env.sh points the
# tools there and keeps them reading the user's own configuration). home_known lists what a stage
# may still leave, each with its reason; it goes away with the throwaway directory.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(lint pytest ansible-test molecule build compat)

# shellcheck source=scripts/env.sh
. scripts/env.sh
scripts/system-deps.sh scripts/apt-packages-demo.txt scripts/apt-packages.txt
scripts/venv.sh requirements-test.txt

home_known=(
  # Where rustup is installed, pip runs `rustc --version` for its User-Agent, and rustup's rustc
  # proxy writes ~/.rustup/settings.toml into a home that has none.
  .rustup
)

# home_left DIR: what a stage left in its throwaway home, a few paths per entry, known ones excepted.
home_left() {
  local entry known skip
  for entry in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    skip=0
    for known in "${home_known[@]}"; do
      [ "${entry##*/}" = "$known" ] && skip=1
    done
    [ $skip -eq 1 ] || find "$entry" -maxdepth 2 | head -n 5
  done
}

# Each stage's output also goes to .cache/logs/<stage>.log. A CI log shows its first and last lines
# only, so the end of the run repeats what each failed stage said about its failure.
logs=$repo/.cache/logs
mkdir -p "$logs"
failed=()
run_stage() {
  local name=$1; shift
  local start=$SECONDS stage_home left line ok=1
  stage_home=$(mktemp -d "${TMPDIR:-/tmp}/gpu-node-home.XXXXXX")
  echo "=== $name"
  HOME=$stage_home "$@" 2>&1 | tee "$logs/$name.log" || ok=0
  left=$(home_left "$stage_home")
  if [ -n "$left" ]; then
    {
      echo "=== $name wrote into HOME (an empty $stage_home while it ran), outside the checkout and .cache/:"
      while IFS= read -r line; do echo "  left in HOME: $line"; done <<<"$left"
    } | tee -a "$logs/$name.log"
    ok=0
  fi
  rm -rf "$stage_home"
  if [ $ok -eq 1 ]; then
    echo "=== $name: ok ($((SECONDS - start)) s)"
  else
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
    failed+=("$name")
  fi
}

for stage in "${stages[@]}"; do
  case "$stage" in
    lint) run_stage lint scripts/lint.sh ;;
    pytest) run_stage pytest scripts/pytest.sh ;;
    ansible-test) run_stage ansible-test scripts/ansible-test.sh ;;
    molecule) run_stage molecule scripts/molecule.sh ;;
    build) run_stage build scripts/build-check.sh ;;
    # A compat run on exactly .venv's Python and versions would repeat what the pytest stage ran.
    compat) COMPAT_COVERED_BY_VENV=$([[ " ${stages[*]} " == *" pytest "* ]] && echo 1 || echo 0) \
              run_stage compat scripts/compat.sh ;;
    *) echo "unknown stage $stage (lint, pytest, ansible-test, build, compat, molecule)" >&2; exit 2 ;;
  esac
done

# The end of the run is what a CI log keeps (its last 40 lines or so): a failed stage's last
# lines, then the lines that say what failed, closest to the end.
failure_lines() {
  echo "--- the last 8 lines of $1:"
  tail -n 8 "$1" | cut -c1-300
  echo "--- lines of $1 that name a failure (the last 12):"
  scripts/failure-lines.sh "$1" 12
}

# What a stage ran twice (molecule) says about the first try, kept in view even when the second passed.
retry_lines() {
  awk '/^--- .*FAILED on try/ { keep = 1; print; next } keep && /^    / { print; next } { keep = 0 }' "$1" |
    cut -c1-300
}

for stage in "${failed[@]}"; do
  echo "=== what the failed stage $stage said (all of it: .cache/logs/$stage.log)"
  failure_lines "$logs/$stage.log"
done
for stage in "${stages[@]}"; do
  [ ! -f "$logs/$stage.log" ] || retry_lines "$logs/$stage.log"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "all stages passed: ${stages[*]}"
