#!/usr/bin/env bash
# molecule test for every scenario under molecule/ (or those named: scripts/molecule.sh default).
# A scenario may ship molecule/<name>/prerequisites.sh: it runs first (builds images, fetches
# collections) and is expected to cache what it makes under .cache/molecule.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# shellcheck source=scripts/env.sh
. scripts/env.sh

scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  for dir in molecule/*/; do
    [ -f "$dir/molecule.yml" ] && scenarios+=("$(basename "$dir")")
  done
fi

rc=0
for scenario in "${scenarios[@]}"; do
  start=$SECONDS
  if [ -x "molecule/$scenario/prerequisites.sh" ]; then
    "molecule/$scenario/prerequisites.sh" || { echo "--- $scenario: prerequisites failed"; rc=1; continue; }
  fi
  if molecule test --scenario-name "$scenario"; then
    echo "--- molecule $scenario: ok ($((SECONDS - start)) s)"
  else
    echo "--- molecule $scenario: FAILED ($((SECONDS - start)) s)"
    rc=1
  fi
done
exit $rc
