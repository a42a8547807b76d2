#!/usr/bin/env bash
# Both ends of each controller dependency range in requirements.txt, each in a venv of its own
# under .cache/compat, each on a Python its ansible-core supports:
#   newest         pip install --upgrade -r requirements.txt, as a user would, on Python 3.13
#   newest-py3.12  the same on Python 3.12 (Ubuntu 24.04's)
#   oldest         the same with -c tests/constraints-oldest.txt, which pins every range's minimum
#                  (ansible-core 2.16.0), on Python 3.11
# then the test-only packages. Each runs the TOML/containerd/toolkit-config tests and the site.yml
# tests (converge, idempotence, --check, uninstall, a node Python too old) on simulated COS nodes;
# "oldest" also runs its ansible-test sanity and units (the newest end's run in the ansible-test
# stage, on .venv). The runs go side by side (COMPAT_SERIAL=1: one after the other, output as it
# comes); COMPAT_RUNS="oldest" runs only that one.
# The venvs are reused: "oldest" while requirements, constraints and test pins are unchanged,
# the newest ones also only while `pip install --dry-run` finds no newer release of anything in them.
# COMPAT_COVERED_BY_VENV=1 (set by scripts/test.sh when its pytest stage runs too): a run whose
# Python and versions are exactly .venv's is prepared and reported but its tests are not run again.
# COMPAT_NEWEST_PYTHON / COMPAT_PY312_PYTHON / COMPAT_OLDEST_PYTHON name another interpreter for a
# run (default: scripts/python.sh 3.13, 3.12, 3.11).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
# shellcheck source=scripts/env.sh
. scripts/env.sh
cache="$repo/.cache/compat"
constraints=tests/constraints-oldest.txt
tests=(tests/unit/plugins/plugin_utils tests/unit/plugins/module_utils
       tests/integration/test_containerd_runtime.py tests/integration/test_toolkit_config.py
       tests/integration/test_site.py tests/integration/test_cdi_refresh_units.py
       tests/integration/test_container_engines.py::test_engines_found_on_the_node_are_the_ones_configured)
read -r -a runs <<<"${COMPAT_RUNS:-newest newest-py3.12 oldest}"
pip_opts=(--quiet --disable-pip-version-check)
mkdir -p "$cache"

# Test-only packages, with the project's own pins (grpcio for the CRI client the containerd tests
# use, which requirements-test.txt takes from requirements-demo.txt).
mapfile -t test_pkgs < <(cat requirements-test.txt requirements-demo.txt |
  sed -n -E 's/[[:space:]]*#.*//; /^(pytest|jsonschema|grpcio|grpcio-tools)[[:space:]]*[<>=!~]/p')
[ ${#test_pkgs[@]} -eq 4 ] || { echo "compat: expected pytest, jsonschema, grpcio, grpcio-tools in requirements-test.txt and requirements-demo.txt, found: ${test_pkgs[*]}" >&2; exit 1; }

# Every range needs a lower bound, and the constraints file must pin exactly that bound.
python3 - requirements.txt "$constraints" <<'EOF' || exit 1
import re
import sys

def entries(path):
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if line:
            name, spec = re.match(r"([A-Za-z0-9._-]+)\s*(.*)", line).groups()
            yield re.sub(r"[-_.]+", "-", name).lower(), spec.replace(" ", "")

def same(pin, low):  # "==2.16.0" pins the bound ">=2.16": trailing zero components do not count
    trim = lambda v: re.sub(r"(\.0+)+$", "", v)
    return pin is not None and pin.startswith("==") and trim(pin[2:]) == trim(low)

ranges, pins = dict(entries(sys.argv[1])), dict(entries(sys.argv[2]))
problems = []
for name, spec in ranges.items():
    low = re.search(r">=([^,;]+)", spec)
    if not low:
        problems.append("%s%s has no >= lower bound" % (name, spec))
    elif not same(pins.get(name), low.group(1)):
        problems.append("%s%s: %s pins %s (want ==%s)" % (name, spec, sys.argv[2], pins.get(name), low.group(1)))
problems += ["%s pins %s, which %s does not list" % (sys.argv[2], name, sys.argv[1]) for name in pins if name not in ranges]
if problems:
    sys.exit("compat: requirements and oldest constraints disagree:\n  " + "\n  ".join(problems))
EOF

interpreter() {
  case $1 in
    newest) echo "${COMPAT_NEWEST_PYTHON:-$(scripts/python.sh 3.13)}" ;;
    newest-py3.12) echo "${COMPAT_PY312_PYTHON:-$(scripts/python.sh 3.12)}" ;;
    oldest) echo "${COMPAT_OLDEST_PYTHON:-$(scripts/python.sh 3.11)}" ;;
  esac
}

# install_into VENV_PYTHON RUN: what a user runs, then the test-only packages.
install_into() {
  local py=$1 run=$2
  local -a cons=()
  [ "$run" = oldest ] && cons=(-c "$constraints")
  "$py" -m pip install "${pip_opts[@]}" --upgrade pip &&
    "$py" -m pip install "${pip_opts[@]}" --upgrade "${cons[@]}" -r requirements.txt &&
    "$py" -m pip install "${pip_opts[@]}" "${cons[@]}" "${test_pkgs[@]}" &&
    "$py" -m pip check
}

# prepare RUN: (re)make the venv of RUN unless a matching one is cached; prints its path.
prepare() {
  local run=$1 python key venv
  python=$(interpreter "$run")
  if [ -z "$python" ]; then
    echo "compat $run: no Python for it (scripts/python.sh)" >&2
    return 1
  fi
  key=$( { "$python" -c 'import sys; print(sys.version)' && cat requirements.txt && printf '%s\n' "${test_pkgs[@]}" &&
           if [ "$run" = oldest ]; then cat "$constraints"; fi; } | sha256sum | cut -c1-12) || return 1
  venv="$cache/$run-$key"
  if [ -e "$venv/.complete" ] && [ "$run" != oldest ]; then
    # A newer release of anything in the venv (direct or transitive) makes a fresh one.
    local report
    if report=$("$venv/bin/python" -m pip install "${pip_opts[@]}" --dry-run --report - --upgrade --upgrade-strategy eager \
                  -r requirements.txt "${test_pkgs[@]}" 2>/dev/null); then
      local newer
      newer=$("$venv/bin/python" -c 'import json, sys; print(" ".join("%s %s" % (i["metadata"]["name"], i["metadata"]["version"]) for i in json.load(sys.stdin)["install"]))' <<<"$report")
      if [ -n "$newer" ]; then
        echo "compat $run: newer releases ($newer): a fresh venv" >&2
        rm -f "$venv/.complete"
      fi
    else
      echo "compat $run: could not ask the index for newer releases; reusing $venv" >&2
    fi
  fi
  if [ ! -e "$venv/.complete" ]; then
    local stale
    for stale in "$cache/$run"-????????????; do
      [ -d "$stale" ] && rm -rf "$stale"
    done
    echo "compat $run: installing into $venv ($python)" >&2
    if ! { "$python" -m venv "$venv" && install_into "$venv/bin/python" "$run" >&2; }; then
      echo "compat $run: install failed" >&2
      return 1
    fi
    touch "$venv/.complete"
  fi
  echo "$venv"
}

# resolved PYTHON: its version and those of the controller dependencies, on one line.
resolved() {
  "$1" -c 'import importlib.metadata as md, sys
print("python %s, %s" % (sys.version.split()[0], ", ".join("%s %s" % (n, md.version(n)) for n in ("ansible-core", "tomlkit", "PyYAML", "Jinja2"))))'
}

# versions VENV RUN: the versions resolved, on one line; for "oldest", fails unless they are the pins.
versions() {
  echo "compat $2: $(resolved "$1/bin/python")"
  "$1/bin/python" - "$2" "$constraints" <<'EOF'
import importlib.metadata as md
import re
import sys

run, constraints = sys.argv[1], sys.argv[2]
if run == "oldest":
    for line in open(constraints, encoding="utf-8"):
        pin = re.match(r"\s*([A-Za-z0-9._-]+)==(\S+)", line)
        if pin and md.version(pin.group(1)) != pin.group(2):
            sys.exit("compat oldest: %s is %s, not the pinned %s" % (pin.group(1), md.version(pin.group(1)), pin.group(2)))
EOF
}

# run_tests VENV RUN: the tests, with the venv's python, ansible-playbook and modules; for "oldest"
# also its ansible-test.
run_tests() {
  local venv=$1 run=$2 tmp rc
  tmp=$(mktemp -d "/tmp/compat-$run.XXXXXX")
  PATH="$venv/bin:$PATH" ANSIBLE_PYTHON_INTERPRETER="$venv/bin/python" \
    "$venv/bin/python" -m pytest -q --basetemp="$tmp/pytest" "${tests[@]}"
  rc=$?
  rm -rf "$tmp"
  if [ "$run" = oldest ]; then
    ANSIBLE_TEST_VENV="$venv" scripts/ansible-test.sh || rc=1
  fi
  return $rc
}

declare -A venv_of status_of
failed=0
for run in "${runs[@]}"; do
  case $run in newest|newest-py3.12|oldest) ;; *) echo "compat: unknown run $run (newest, newest-py3.12, oldest)" >&2; exit 2 ;; esac
  start=$SECONDS
  venv_of[$run]=$(prepare "$run") || { status_of[$run]="venv failed"; failed=1; continue; }
  echo "compat $run: venv ready ($((SECONDS - start)) s)"
  versions "${venv_of[$run]}" "$run" || { status_of[$run]="wrong versions"; failed=1; unset "venv_of[$run]"; continue; }
  if [ "${COMPAT_COVERED_BY_VENV:-0}" = 1 ] && [ "$run" != oldest ] &&
     [ "$(resolved "${venv_of[$run]}/bin/python")" = "$(resolved "$repo/.venv/bin/python")" ]; then
    status_of[$run]="not run again: the pytest stage ran these tests on .venv, which has exactly these versions"
    unset "venv_of[$run]"
  fi
done

declare -A pid_of log_of
start=$SECONDS
for run in "${runs[@]}"; do
  [ -n "${venv_of[$run]:-}" ] || continue
  if [ "${COMPAT_SERIAL:-0}" = 1 ]; then
    echo "--- compat $run: pytest"
    if run_tests "${venv_of[$run]}" "$run"; then status_of[$run]="passed"; else status_of[$run]="FAILED"; failed=1; fi
  else
    log_of[$run]="$cache/$run.log"
    run_tests "${venv_of[$run]}" "$run" >"${log_of[$run]}" 2>&1 &
    pid_of[$run]=$!
  fi
done
for run in "${runs[@]}"; do
  [ -n "${pid_of[$run]:-}" ] || continue
  if wait "${pid_of[$run]}"; then status_of[$run]="passed"; else status_of[$run]="FAILED"; failed=1; fi
  echo "--- compat $run: pytest (${log_of[$run]})"
  cat "${log_of[$run]}"
done
echo "compat: tests took $((SECONDS - start)) s"
for run in "${runs[@]}"; do
  echo "compat $run: ${status_of[$run]:-not run}"
done
exit $failed
