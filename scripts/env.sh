# shellcheck shell=bash
# Sourced by the other scripts: the project's venv and collection path, and every place the tools
# would otherwise write under $HOME moved into .cache/, so that `make test` and `make demo` write
# only in the checkout, .cache/ and temp dirs (scripts/test.sh runs each stage with an empty HOME
# and fails a stage that leaves anything there).
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="$repo/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$repo/.cache/collections"
export ANSIBLE_NOCOLOR=1
export ANSIBLE_FORCE_COLOR=0
export ANSIBLE_HOST_KEY_CHECKING=False
export ANSIBLE_LOCALHOST_WARNING=False
export ANSIBLE_INVENTORY_UNPARSED_WARNING=False
export ANSIBLE_PYTHON_INTERPRETER="$repo/.venv/bin/python"

# ~/.ansible: ansible-core's local temp files, Galaxy's cache and default install paths, and the
# copy of the collection ansible-lint and molecule would install (ansible-compat's cache).
export ANSIBLE_HOME="$repo/.cache/ansible-home"
# The node side's temp files and async job status; on a local connection, and over SSH to this
# machine, `~` would be this machine's home.
export ANSIBLE_REMOTE_TEMP="$ANSIBLE_HOME/remote-tmp"
export ANSIBLE_ASYNC_DIR="$ANSIBLE_HOME/async"
# ~/.cache: pip's, ansible-lint's and Go's caches.
export XDG_CACHE_HOME="$repo/.cache/xdg"

# User configuration is still read where it is (pip's index and proxy settings, git's
# safe.directory), also when a script runs with another HOME. Set while HOME is the user's own.
export XDG_CONFIG_HOME="${XDG_CONFIG_HOME:-$HOME/.config}"
if [ -z "${GIT_CONFIG_GLOBAL:-}" ] && [ -f "$HOME/.gitconfig" ]; then
  export GIT_CONFIG_GLOBAL="$HOME/.gitconfig"
fi
if [ -z "${PIP_CONFIG_FILE:-}" ] && [ -f "$HOME/.pip/pip.conf" ]; then
  export PIP_CONFIG_FILE="$HOME/.pip/pip.conf"
fi
