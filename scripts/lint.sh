#!/usr/bin/env bash
# ruff, yamllint, shellcheck and ansible-lint (production profile).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
# shellcheck source=scripts/env.sh
. scripts/env.sh
rc=0
echo "--- ruff"; ruff check . || rc=1
echo "--- yamllint"; yamllint -s . || rc=1
echo "--- shellcheck"
mapfile -t shell_files < <(git ls-files -co --exclude-standard | grep -E '\.sh$|^\.ci/run$' )
shellcheck -x "${shell_files[@]}" || rc=1
echo "--- ansible-lint"; ansible-lint --profile production || rc=1
exit $rc
