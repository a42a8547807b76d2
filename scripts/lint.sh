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
# --offline: ansible-lint would otherwise install a copy of this collection (into ANSIBLE_HOME, or
# ~/.ansible without it) and fetch its schemas; it finds the collection through
# ANSIBLE_COLLECTIONS_PATH (.cache/collections links to the checkout).
echo "--- ansible-lint"; ansible-lint --offline --profile production || rc=1
exit $rc
