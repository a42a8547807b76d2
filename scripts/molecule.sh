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

# A scenario that fails is run once more, from a new instance (molecule test destroys it either
# way): a failure that comes back fails the stage; one that does not is still reported, with what
# it said, in lines scripts/test.sh repeats at the end of the run.
logs=$repo/.cache/logs/molecule
mkdir -p "$logs"
rc=0
for scenario in "${scenarios[@]}"; do
  start=$SECONDS
  for try in 1 2; do
    log=$logs/$scenario-$try.log
    # The prerequisites download (Debian's archive, PyPI): a network failure is worth a second try too.
    if { [ ! -x "molecule/$scenario/prerequisites.sh" ] || "molecule/$scenario/prerequisites.sh"; } 2>&1 | tee "$log" &&
       molecule test --scenario-name "$scenario" 2>&1 | tee -a "$log"; then
      echo "--- molecule $scenario: ok on try $try ($((SECONDS - start)) s)"
      break
    fi
    echo "--- molecule $scenario: FAILED on try $try ($((SECONDS - start)) s); what $log says of it:"
    scripts/failure-lines.sh "$log" 8 | sed 's/^/    /'
    [ "$try" -eq 2 ] && rc=1
  done
done
exit $rc
