#!/usr/bin/env bash
# meta/runtime.yml says requires_ansible >=2.16: run the unit tests and the module-level
# integration tests again with the oldest ansible-core we claim, in a venv of its own.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
venv="$repo/.cache/venv-ansible-2.16"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "ansible-core>=2.16,<2.17" "tomlkit>=0.14,<0.15.3" "PyYAML>=6,<7" "pytest>=8,<10" "jsonschema>=4.20,<5" || exit 1
fi
# shellcheck source=scripts/env.sh
. scripts/env.sh
export PATH="$venv/bin:$PATH"
export ANSIBLE_PYTHON_INTERPRETER="$venv/bin/python"
echo "ansible-core $("$venv/bin/python" -c 'import ansible; print(ansible.__version__)')"
"$venv/bin/python" -m pytest -q tests/unit tests/integration/test_nvidia_driver_info.py
