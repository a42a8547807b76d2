#!/usr/bin/env bash
# Run every benchmark under benchmarks/ and print its figures.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
# shellcheck source=scripts/env.sh
. scripts/env.sh
scripts/venv.sh
for bench in benchmarks/*.py; do
  echo "=== $bench"
  python "$bench"
done
