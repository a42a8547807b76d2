#!/usr/bin/env bash
# ansible-test sanity and units, from a symlinked ansible_collections/gpu_node/container_toolkit tree.
# ansible-test's pip bootstrap script, which it would fetch from a host CI cannot reach, is replaced
# by a stand-in that runs pip from a wheel fetched from the package index (the only network CI has).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/env.sh
. "$repo/scripts/env.sh"
# ANSIBLE_TEST_VENV: another venv's ansible-test and Python (scripts/compat.sh runs the oldest
# ansible-core's this way); default .venv.
if [ -n "${ANSIBLE_TEST_VENV:-}" ]; then
  export PATH="$ANSIBLE_TEST_VENV/bin:$PATH"
fi
echo "--- ansible-test of ansible-core $(python -c 'import ansible.release; print(ansible.release.__version__)') on Python $(python -c 'import platform; print(platform.python_version())')"

# ansible-test keeps its sanity venvs and its pip bootstrap under ~/.ansible/test, whatever
# ANSIBLE_HOME says, and runs pip with only HOME and PATH from the environment: it gets a home of
# its own under .cache/, where pip's configuration is a link to the user's (index, proxy).
export HOME="$repo/.cache/ansible-test-home"
mkdir -p "$HOME/.config" "$HOME/.pip"
if [ -d "$XDG_CONFIG_HOME/pip" ] && [ ! -e "$HOME/.config/pip" ]; then
  ln -s "$XDG_CONFIG_HOME/pip" "$HOME/.config/pip"
fi
if [ -f "${PIP_CONFIG_FILE:-}" ] && [ ! -e "$HOME/.pip/pip.conf" ]; then
  ln -s "$PIP_CONFIG_FILE" "$HOME/.pip/pip.conf"
fi

pip_version=$(python -c '
from ansible_test._internal.python_requirements import get_venv_packages
class Python:
    version = "%d.%d" % __import__("sys").version_info[:2]
print(get_venv_packages(Python())["pip"])' 2>/dev/null || true)
pip_version=${pip_version:-24.2}
cache="$HOME/.ansible/test/cache"
standin="$cache/get_pip_${pip_version//./_}.py"
if ! ls "$cache/pip-wheels/pip-$pip_version-"*.whl >/dev/null 2>&1; then
  mkdir -p "$cache/pip-wheels"
  python -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$cache/pip-wheels" "pip==$pip_version"
fi
# Written every run: the packages besides pip that a release asks for (2.16: setuptools and wheel
# at fixed versions) come from the package index.
cat > "$standin" <<'PY'
"""Stand-in for ansible-test's get-pip bootstrap (its host is not reachable here): run pip from a
wheel fetched from the package index, and install what ansible-test asks for from there."""
import glob
import os
import runpy
import sys

wheel_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pip-wheels")
wheel = sorted(glob.glob(os.path.join(wheel_dir, "pip-*.whl")))[-1]
sys.path.insert(0, wheel)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.argv = ["pip", "install", "--find-links", wheel_dir] + args
runpy.run_module("pip", run_name="__main__", alter_sys=True)
PY

# ansible-test 2.22 pins one of pylint's requirements (dill) to an archive on github.com, which CI
# cannot reach: such a direct reference is turned into the same package from the package index
# (the only network CI has), in the requirement files of the ansible-test that runs here.
requirements_dir=$(python -c 'import ansible_test, os; print(os.path.join(os.path.dirname(ansible_test.__file__), "_data", "requirements"))')
for file in "$requirements_dir"/sanity.*.txt; do
  if grep -Eq '^[A-Za-z0-9_.-]+ @ https?://' "$file"; then
    echo "--- $(basename "$file"): $(grep -Eo '^[A-Za-z0-9_.-]+ @ https?://[^/]+' "$file" | tr '\n' ' ')-> from the package index"
    sed -E -i 's/^([A-Za-z0-9_.-]+) @ https?:\/\/[^ ]*$/\1/' "$file"
  fi
done

# ansible-test wants a real ansible_collections/<ns>/<name> directory as its working directory:
# copy the checkout's files there as git sees them (no .cache/.venv; symlinks are not followed;
# files deleted but not yet committed are left out).
# It must sit outside this git checkout, or ansible-test lists files through git and sees none.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpu_node-ansible-test.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
tree="$scratch/ansible_collections/gpu_node/container_toolkit"
mkdir -p "$tree"
(cd "$repo" && git ls-files -co --exclude-standard -z |
  while IFS= read -r -d '' file; do [ -e "$file" ] || [ -L "$file" ] && printf '%s\0' "$file"; done |
  xargs -0 cp -a --parents -t "$tree")
cd "$tree"

rc=0
python_version=$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
echo "--- ansible-test sanity"
ansible-test sanity --local --python "$python_version" --color no --requirements \
  --skip-test pylint "$@" || rc=1
echo "--- ansible-test sanity pylint"
ansible-test sanity --local --python "$python_version" --color no --requirements --test pylint || rc=1
echo "--- ansible-test units"
ansible-test units --local --python "$python_version" --color no --requirements || rc=1
exit $rc
