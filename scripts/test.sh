#!/usr/bin/env bash
# The whole test suite: lint, pytest (unit + integration with real containerd and podman),
# ansible-test sanity and units, molecule scenarios, the built collection installed offline and run, both ends of
# the requirements.txt ranges (compat). `scripts/test.sh pytest lint` runs only those stages.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(lint pytest ansible-test molecule build compat)

scripts/system-deps.sh
scripts/venv.sh
# shellcheck source=scripts/env.sh
. scripts/env.sh

failed=()
run_stage() {
  local name=$1; shift
  local start=$SECONDS
  echo "=== $name"
  if "$@"; then
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
    compat) run_stage compat scripts/compat.sh ;;
    *) echo "unknown stage $stage (lint, pytest, ansible-test, build, compat, molecule)" >&2; exit 2 ;;
  esac
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "all stages passed: ${stages[*]}"
