"""How the roles' files reach each other: a role uses another only through that role's documented
entry points, never through its files by path, and a handler is one task (Ansible runs no role from
a handler, so a handler that needs another role's steps would have to reach for its files)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
FQCN = "gpu_node.container_toolkit."
ROLE_ACTIONS = ("ansible.builtin.import_role", "ansible.builtin.include_role")
TASK_FILE_ACTIONS = ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks")
YAML_FILES = sorted(ROLES.glob("*/*/*.yml"))


def _tasks(path):
    """Every task of a task or handler file, those inside blocks too."""
    pending = list(yaml.safe_load(path.read_text(encoding="utf-8")) or [])
    while pending:
        task = pending.pop()
        for key in ("block", "rescue", "always"):
            pending.extend(task.get(key) or [])
        yield task


def _role_uses():
    """(file, calling role, role used, entry point, the import's options) for every role import."""
    for path in sorted(ROLES.glob("*/tasks/*.yml")) + sorted(ROLES.glob("*/handlers/*.yml")):
        for task in _tasks(path):
            for action in ROLE_ACTIONS:
                if action in task:
                    options = task[action]
                    entry = Path(options.get("tasks_from", "main")).stem
                    yield path, path.parts[-3], options["name"].removeprefix(FQCN), entry, options


USES = list(_role_uses())


def test_the_roles_use_each_other():
    # The checks below look at something: the gpu_node role runs the others' steps.
    assert {(caller, used) for _p, caller, used, _e, _o in USES} >= {
        ("gpu_node", "toolkit"), ("gpu_node", "cdi"), ("gpu_node", "containerd"), ("gpu_node", "docker"),
        ("gpu_node", "crio"), ("containerd", "engine_restart")}


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(ROLES)))
def test_no_role_file_reaches_into_another_role_by_path(path):
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"role_path[^\n]*\.\./|\.\./\.\./roles/|roles/[a-z_]+/tasks/", text), \
        "%s reaches another role's files by path; use its entry point" % path.relative_to(ROLES)


@pytest.mark.parametrize("use", USES, ids=lambda u: "%s->%s:%s" % (u[0].relative_to(ROLES), u[2], u[3]))
def test_another_role_is_used_through_a_documented_entry_point(use):
    path, caller, used, entry, options = use
    specs = yaml.safe_load((ROLES / used / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))["argument_specs"]
    assert entry in specs, "%s uses %s's %s.yml, which its meta/argument_specs.yml does not document" % (
        path.relative_to(ROLES), used, entry)
    if caller == "gpu_node" and entry != "main":
        # gpu_node checked its own settings once: a validation task per step would cost a task per host.
        assert options.get("rolespec_validate") is False, path


@pytest.mark.parametrize("path", sorted(ROLES.glob("*/handlers/*.yml")), ids=lambda p: str(p.relative_to(ROLES)))
def test_a_handler_is_one_task(path):
    tasks = list(_tasks(path))
    assert tasks
    for task in tasks:
        assert not any(action in task for action in TASK_FILE_ACTIONS + ROLE_ACTIONS), (path, task.get("name"))


# What the other roles take that is not a setting of the run: what the look read, this run's own
# results, the typo check's allowance and the direction (present or absent).
NOT_INPUTS = ("_read_ahead", "_runtime_binaries_changed", "_variables_allowed", "_state")


def test_the_run_inputs_name_every_option_gpu_node_passes_on_as_it_is():
    """A run that finds the node as the last full run left it skips its steps only when its inputs
    digest is the same (node_record): every option of the roles gpu_node uses must be either set by
    gpu_node from its own settings, or one of gpu_node__other_inputs, which the digest takes."""
    other_inputs = yaml.safe_load((ROLES / "gpu_node" / "vars" / "main.yml").read_text(encoding="utf-8"))["gpu_node__other_inputs"]
    missing, unknown = [], set(other_inputs)
    for role in sorted({used for _path, caller, used, _entry, _options in _role_uses() if caller == "gpu_node"}):
        specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))["argument_specs"]
        options = {name for spec in specs.values() for name in spec.get("options", {})}
        set_by_gpu_node = {name for path, caller, used, _entry, _options in _role_uses() if caller == "gpu_node" and used == role
                           for task in _tasks(path) if any(action in task for action in ROLE_ACTIONS)
                           and task[next(a for a in ROLE_ACTIONS if a in task)]["name"].removeprefix(FQCN) == role
                           for name in task.get("vars") or {}}
        unknown -= options
        missing += sorted(name for name in options - set_by_gpu_node - set(other_inputs) if not name.endswith(NOT_INPUTS))
    assert not missing, "options the inputs digest does not take; add them to gpu_node__other_inputs: %s" % missing
    assert not unknown, "gpu_node__other_inputs names what no role takes: %s" % sorted(unknown)
