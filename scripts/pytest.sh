#!/usr/bin/env bash
# pytest over tests/unit and tests/integration with coverage of plugins/, one worker per CPU
# (pytest-xdist; PYTEST_WORKERS=0 runs them in this process, one after the other).
# Exit code 5 (nothing collected) is a failure: a missing suite must never pass.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
# shellcheck source=scripts/env.sh
. scripts/env.sh
export COVERAGE_FILE="$repo/.cache/coverage"
python -m pytest tests/unit tests/integration \
  --cov=ansible_collections.gpu_node.container_toolkit.plugins \
  --cov-report=term --cov-report="xml:$repo/.cache/coverage.xml" \
  -p no:cacheprovider -n "${PYTEST_WORKERS:-auto}" --durations=20 "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
fi
exit $rc
