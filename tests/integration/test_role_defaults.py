"""Defaults that can hurt (issue 13): the roles fail up front, before touching the node, when a run
could not finish; task names are the same for every host; the toolkit source is documented as what
it really accepts.

Runs the real playbooks and roles against simulated COS nodes (``fakenode.py``), as test_site.py does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import toolkit_artifacts
import yaml
from ansible_runner import REPO, recap, run_playbook
from snapshots import snapshot

PLAYBOOKS = REPO / "playbooks"
ROLES = REPO / "roles"
TOOLKIT = "/home/kubernetes/bin/nvidia/toolkit"
CONFIG = "/etc/containerd/config.toml"
SPEC = "/var/run/cdi/management.nvidia.com-gpu.yaml"
SYSTEMD_BOOTED = os.path.isdir("/run/systemd/system")


def changed_entries(before, after):
    return sorted(set(before.items()) ^ set(after.items()))


@pytest.fixture
def cos(fake_node_factory, tmp_path):
    """A COS node with nvidiactl missing (a run that goes ahead creates it), and the toolkit artifacts."""
    node = fake_node_factory("cos", missing=("nvidiactl",))
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    base = {"gpu_node_hosts": "localhost", "gpu_node_host_root": str(node.root)}
    return node, artifacts, base


def _ok(proc):
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    return recap(proc.stdout)["localhost"]


def _failed_up_front(proc, node, before):
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-3000:]
    assert recap(proc.stdout)["localhost"]["changed"] == 0
    assert changed_entries(before, snapshot(node.root)) == []
    return " ".join(output.split())  # fail_msg folds lines; compare on single spaces


# 1. No toolkit source and no toolkit installed: fail before anything, naming gpu_node_toolkit_src.

@pytest.mark.parametrize("check", [False, True], ids=["run", "check-mode"])
def test_empty_toolkit_src_without_installed_toolkit_fails_before_touching_the_node(cos, check):
    node, _artifacts, base = cos
    config_bytes = node.node_path(CONFIG).read_bytes()
    before = snapshot(node.root)

    proc = run_playbook(PLAYBOOKS / "site.yml", extra_vars=dict(base, gpu_node_containerd_restart_mode="none"), check=check)

    text = _failed_up_front(proc, node, before)
    assert node.node_path(CONFIG).read_bytes() == config_bytes
    assert "gpu_node_toolkit_src is empty and the toolkit is not installed in %s" % TOOLKIT in text
    assert "missing or not executable: nvidia-container-runtime, nvidia-container-runtime.cdi, " \
           "nvidia-container-runtime.legacy, nvidia-cdi-hook" in text
    for accepted in ("a directory shaped like the unpacked packages", "NVIDIA's .deb or .rpm packages",
                     "a tarball", "URL of any of these, with gpu_node_toolkit_checksum", "or a list of these",
                     "gpu_node_toolkit_remote_src: true"):
        assert accepted in text
    assert not node.node_path(TOOLKIT).exists()
    assert not node.node_path(SPEC).exists()
    assert not node.node_path("/dev/nvidiactl").exists()


def test_containerd_only_run_without_installed_toolkit_fails_up_front(cos):
    """--tags containerd leaves the toolkit out: a source alone does not put binaries there."""
    node, artifacts, base = cos
    before = snapshot(node.root)
    extra = dict(base, gpu_node_toolkit_src=str(artifacts), gpu_node_containerd_restart_mode="none")
    proc = run_playbook(PLAYBOOKS / "site.yml", extra_vars=extra, extra_args=["--tags", "containerd"])
    text = _failed_up_front(proc, node, before)
    assert "This run leaves out the toolkit tag" in text and "Run with the toolkit tag too" in text


def test_empty_toolkit_src_with_the_toolkit_installed_goes_ahead(cos):
    node, artifacts, base = cos
    extra = dict(base, gpu_node_containerd_restart_mode="none")
    _ok(run_playbook(PLAYBOOKS / "site.yml", extra_vars=dict(extra, gpu_node_toolkit_src=str(artifacts))))
    provisioned = snapshot(node.root)

    totals = _ok(run_playbook(PLAYBOOKS / "site.yml", extra_vars=extra))
    assert totals["changed"] == 0
    # Other inputs (no source): the steps ran, changed nothing, and the record is of these inputs now.
    kept = "home/kubernetes/bin/nvidia/toolkit/.gpu-node"
    assert sorted({path for path, _entry in changed_entries(provisioned, snapshot(node.root))}) == [
        kept, kept + "/provisioned.json"]
    recorded = snapshot(node.root)
    totals = _ok(run_playbook(PLAYBOOKS / "site.yml", extra_vars=extra))
    assert totals["changed"] == 0
    assert changed_entries(recorded, snapshot(node.root)) == []

    # --tags containerd after a full run: the binaries are there, so it goes ahead.
    totals = _ok(run_playbook(PLAYBOOKS / "site.yml", extra_vars=dict(extra, gpu_node_toolkit_src=str(artifacts)),
                              extra_args=["--tags", "containerd"]))
    assert totals["changed"] == 0


def _role_play(tmp_path, role, role_vars):
    play = [{"name": "Run the %s role alone" % role, "hosts": "localhost", "gather_facts": False,
             "roles": [{"role": "gpu_node.container_toolkit." + role, "vars": role_vars}]}]
    path = tmp_path / ("%s.yml" % role)
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    return path


def test_toolkit_role_with_empty_src_and_nothing_installed_fails_before_writing(cos, tmp_path):
    node, _artifacts, _base = cos
    before = snapshot(node.root)
    proc = run_playbook(_role_play(tmp_path, "toolkit", {"toolkit_host_root": str(node.root), "toolkit_install_dir": TOOLKIT}))
    text = _failed_up_front(proc, node, before)
    assert "toolkit_src is empty and the toolkit is not installed in %s" % TOOLKIT in text
    assert "NVIDIA's .deb or .rpm packages" in text and "with toolkit_checksum" in text


# 2. Restart mode systemd (the default) where systemd is not PID 1: fail before anything.

@pytest.mark.skipif(SYSTEMD_BOOTED, reason="not applicable: systemd is PID 1 on this machine")
@pytest.mark.parametrize("playbook", ["site.yml", "uninstall.yml"])
def test_default_restart_mode_without_systemd_fails_before_touching_the_node(cos, playbook):
    node, artifacts, base = cos
    extra = dict(base, gpu_node_toolkit_src=str(artifacts))
    if playbook == "uninstall.yml":
        # Provisioned with a mode that works here; removal would need a restart too.
        _ok(run_playbook(PLAYBOOKS / "site.yml", extra_vars=dict(extra, gpu_node_containerd_restart_mode="none")))
    config_bytes = node.node_path(CONFIG).read_bytes()
    before = snapshot(node.root)

    proc = run_playbook(PLAYBOOKS / playbook, extra_vars=extra)  # gpu_node_containerd_restart_mode: default

    text = _failed_up_front(proc, node, before)
    assert node.node_path(CONFIG).read_bytes() == config_bytes
    assert "gpu_node_containerd_restart_mode is 'systemd' (the default), but systemd is not PID 1" in text
    assert "(no /run/systemd/system)" in text
    assert "Set gpu_node_containerd_restart_mode to 'command' together with gpu_node_containerd_restart_command" in text
    assert "or to 'none'" in text
    assert "unknown state" not in text


def test_command_restart_mode_without_a_command_fails_up_front(cos):
    node, artifacts, base = cos
    before = snapshot(node.root)
    extra = dict(base, gpu_node_toolkit_src=str(artifacts), gpu_node_containerd_restart_mode="command")
    text = _failed_up_front(run_playbook(PLAYBOOKS / "site.yml", extra_vars=extra), node, before)
    assert "gpu_node_containerd_restart_mode is 'command' but gpu_node_containerd_restart_command is empty" in text


@pytest.mark.skipif(SYSTEMD_BOOTED, reason="not applicable: systemd is PID 1 on this machine")
def test_containerd_role_alone_checks_systemd_before_editing(cos, tmp_path):
    node, _artifacts, _base = cos
    before = snapshot(node.root)
    proc = run_playbook(_role_play(tmp_path, "containerd", {"containerd_host_root": str(node.root),
                                                            "containerd_install_dir": TOOLKIT}))
    text = _failed_up_front(proc, node, before)
    assert "containerd_restart_mode is 'systemd' (the default), but systemd is not PID 1" in text
    assert "Set containerd_restart_mode to 'command' together with containerd_restart_command" in text


def test_restart_mode_rule_is_documented():
    for role, option in (("gpu_node", "gpu_node_containerd_restart_mode"), ("containerd", "containerd_restart_mode")):
        spec = _options(role)[option]
        text = " ".join(spec["description"]) if isinstance(spec["description"], list) else spec["description"]
        assert "/run/systemd/system" in text and "PID 1" in text
        assert "V(command)" in text and "V(none)" in text
        readme = (ROLES / role / "README.md").read_text()
        assert "/run/systemd/system" in readme


# 3. Task names are static: one name for every host of a play.

def _tasks(items):
    for item in items or []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in ("block", "rescue", "always"):
            yield from _tasks(item.get(key))


def _named_items(path):
    data = yaml.safe_load(path.read_text()) or []
    if path.parent.name == "playbooks":
        for play in data:
            yield play
            for key in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                yield from _tasks(play.get(key))
    else:
        yield from _tasks(data)


def test_task_names_carry_no_templates():
    files = sorted(ROLES.glob("*/tasks/*.yml")) + sorted(ROLES.glob("*/handlers/*.yml")) + sorted(PLAYBOOKS.glob("*.yml"))
    assert len(files) > 10
    templated = ["%s: %s" % (path.relative_to(REPO), item["name"]) for path in files
                 for item in _named_items(path) if "{{" in str(item.get("name", "")) or "{%" in str(item.get("name", ""))]
    assert templated == []


def test_fleet_output_names_no_host_values(fake_node_factory, tmp_path):
    """A COS node and an Ubuntu node in one play: no TASK line carries either node's paths."""
    cos_node = fake_node_factory("cos")
    ubuntu_node = fake_node_factory("ubuntu")
    ubuntu_config = ubuntu_node.node_path(CONFIG)
    ubuntu_config.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "tests" / "fixtures" / "containerd" / "containerd-1.7.34-default.toml", ubuntu_config)
    artifacts = toolkit_artifacts.build_tree(tmp_path / "artifacts")
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("[gpu_nodes]\ncos-node ansible_connection=local gpu_node_host_root=%s\n"
                         "ubuntu-node ansible_connection=local gpu_node_host_root=%s\n" % (cos_node.root, ubuntu_node.root))

    proc = run_playbook(PLAYBOOKS / "site.yml", inventory=str(inventory),
                        extra_vars={"gpu_node_toolkit_src": str(artifacts), "gpu_node_containerd_restart_mode": "none"})
    assert proc.returncode == 0, proc.stdout[-5000:]
    totals = recap(proc.stdout)
    assert totals["cos-node"]["failed"] == 0 and totals["ubuntu-node"]["failed"] == 0
    assert 'BinaryName = "%s/nvidia-container-runtime"' % TOOLKIT in cos_node.node_path(CONFIG).read_text()
    assert 'BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"' in ubuntu_config.read_text()

    headers = [line for line in proc.stdout.splitlines() if line.startswith(("TASK [", "RUNNING HANDLER ["))]
    assert len(headers) >= 10
    host_values = (TOOLKIT, "/usr/local/nvidia/toolkit", "/home/kubernetes", CONFIG, str(cos_node.root),
                   str(ubuntu_node.root), str(tmp_path))
    assert [line for line in headers if any(value in line for value in host_values)] == []


# 4. gpu_node_toolkit_src / toolkit_src: documented as what toolkit_install accepts.

def _options(role):
    """The options of every entry point of ``role`` (``main``, or engine_restart's two)."""
    specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    return {name: option for entry in specs.values() for name, option in entry["options"].items()}


@pytest.mark.parametrize("role,src,checksum", [("toolkit", "toolkit_src", "toolkit_checksum"),
                                               ("gpu_node", "gpu_node_toolkit_src", "gpu_node_toolkit_checksum")])
def test_toolkit_src_spec_says_what_is_accepted(role, src, checksum):
    options = _options(role)
    assert options[src]["type"] == "raw"
    assert options[checksum]["type"] == "raw"  # one checksum per item when src is a list
    text = " ".join(options[src]["description"])
    for accepted in ("list of strings", "directory", "C(.deb)", "C(.rpm)", "tarball", "URL", "O(%s)" % checksum,
                     "remote_src", "Empty only when"):
        assert accepted in text, accepted
    readme = (ROLES / role / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `%s` |" % src))
    for accepted in ("list", "directory" if role == "gpu_node" else "string", "fails before"):
        assert accepted in row, (accepted, row)
    assert ".deb" in readme and ".rpm" in readme and "URL" in readme


def test_role_readmes_use_markdown_not_ansible_doc_markup():
    for readme in sorted(ROLES.glob("*/README.md")):
        text = readme.read_text()
        assert re.findall(r"\b(?:C|V|O|RV|I|B|M|L|U|E|P)\([^)]*\)", text) == [], readme
        # Every option of the role's spec has a row.
        role = readme.parent.name
        for option in _options(role):
            assert "| `%s` |" % option in text, (readme, option)


def test_a_list_of_nvidia_packages_provisions_the_node(cos, tmp_path):
    if shutil.which("dpkg-deb") is None:
        pytest.skip("needs dpkg-deb to build the .deb packages")
    node, artifacts, base = cos
    debs = [str(path) for path in toolkit_artifacts.build_debs(artifacts, tmp_path / "debs")]
    extra = dict(base, gpu_node_toolkit_src=debs, gpu_node_containerd_restart_mode="none")
    proc = run_playbook(PLAYBOOKS / "site.yml", extra_vars=extra)
    assert _ok(proc)["changed"] > 0
    assert "Validating arguments" in proc.stdout
    for name in ("nvidia-container-runtime", "nvidia-container-runtime.cdi", "nvidia-container-runtime.legacy", "nvidia-cdi-hook"):
        assert os.access(node.node_path(TOOLKIT + "/" + name), os.X_OK), name
    assert Path(node.node_path(SPEC)).exists()


def test_the_look_reads_ahead_under_every_platforms_install_dir():
    # The look runs before the platform is known, so it reads under every platform's install_dir;
    # a platform added (or moved) in vars/ without the list would lose its read-ahead silently.
    role_vars = ROLES / "gpu_node" / "vars"
    main = yaml.safe_load((role_vars / "main.yml").read_text())
    platforms = {
        path.stem: yaml.safe_load(path.read_text())
        for path in role_vars.glob("*.yml") if path.name != "main.yml"
    }
    install_dirs = {spec["gpu_node__platform_defaults"]["install_dir"] for spec in platforms.values()}
    assert len(platforms) >= 5 and set(main["gpu_node__install_dir_candidates"]) == install_dirs
    assert len(main["gpu_node__install_dir_candidates"]) == len(install_dirs)
    # Which files those are is the modules' own knowledge (toolkit_config's config.toml, toolkit_install's
    # manifest): the read_ahead_paths filter names them, the role does not spell them again.
    assert "gpu_node__read_ahead_dirs | gpu_node.container_toolkit.read_ahead_paths(" in main["gpu_node__read_ahead"]


# Misspelled variables: a setting under the role's prefix that the role does not know fails the run
# before anything changes, with the closest known name, wherever it is set.

def _user_play(tmp_path, node, host_vars):
    """A playbook and inventory of a user's own: their group, the role under ``roles:``."""
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"gpu_workers": {"hosts": {"localhost": dict(
        host_vars, ansible_connection="local", gpu_node_host_root=str(node.root))}}}))
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"name": "Our GPU workers", "hosts": "gpu_workers", "gather_facts": False,
                                     "roles": ["gpu_node.container_toolkit.gpu_node"]}], sort_keys=False))
    return play, inventory


def test_a_misspelled_variable_fails_before_anything_changes_naming_the_right_one(cos, tmp_path):
    node, artifacts, _base = cos
    before = snapshot(node.root)
    play, inventory = _user_play(tmp_path, node, {
        "gpu_node_toolkit_src": str(artifacts), "gpu_node_set_as_defualt": True,
        "gpu_node_containerd_restart_mod": "none", "gpu_node_containerd_restart_mode": "none"})
    text = _failed_up_front(run_playbook(play, inventory=str(inventory)), node, before)
    assert ("Unknown variables for the gpu_node role: gpu_node_containerd_restart_mod (did you mean "
            "gpu_node_containerd_restart_mode?), gpu_node_set_as_defualt (did you mean gpu_node_set_as_default?)") in text
    assert "Nothing was changed" in text and "gpu_node_variables_allowed" in text


def test_a_relative_host_root_fails_before_anything_naming_the_absolute_path(cos, tmp_path):
    # Relative to what? The modules would read it from their own working directory on the node.
    node, artifacts, _base = cos
    before = snapshot(node.root)
    play, inventory = _user_play(tmp_path, node, {
        "gpu_node_toolkit_src": str(artifacts), "gpu_node_containerd_restart_mode": "none"})
    relative = os.path.relpath(node.root, tmp_path)
    proc = run_playbook(play, inventory=str(inventory), extra_vars={"gpu_node_host_root": relative})
    text = _failed_up_front(proc, node, before)
    assert ("gpu_node_host_root '%s' is a relative path" % relative) in text
    assert ("for a simulated node next to the playbook, '%s/%s'" % (tmp_path, relative)) in text
    assert "Nothing was changed" in text


def test_a_variable_of_the_users_own_under_the_prefix_is_let_through_when_allowed(cos, tmp_path):
    node, artifacts, _base = cos
    play, inventory = _user_play(tmp_path, node, {
        "gpu_node_toolkit_src": str(artifacts), "gpu_node_containerd_restart_mode": "none",
        "gpu_node_rack": "r12", "gpu_node_variables_allowed": ["gpu_node_rack"]})
    proc = run_playbook(play, inventory=str(inventory))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert recap(proc.stdout)["localhost"]["changed"] > 0


@pytest.mark.parametrize("playbook, what", [("site.yml", "provisioned"), ("verify.yml", "checked"),
                                            ("uninstall.yml", "uninstalled")])
def test_an_inventory_without_the_group_fails_instead_of_passing_having_done_nothing(cos, tmp_path, playbook, what):
    """A cron or CI check on an inventory whose group is not gpu_nodes used to exit 0, 'skipping: no hosts matched'."""
    node, artifacts, _base = cos
    before = snapshot(node.root)
    _play, inventory = _user_play(tmp_path, node, {"gpu_node_toolkit_src": str(artifacts),
                                                   "gpu_node_containerd_restart_mode": "none"})
    proc = run_playbook(PLAYBOOKS / playbook, inventory=str(inventory))
    text = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0, text[-2000:]
    assert ("No host of the inventory matches 'gpu_nodes', so nothing would be %s and the run would still pass"
            % what) in text
    assert changed_entries(before, snapshot(node.root)) == []
    # Named, the group is run.
    named = run_playbook(PLAYBOOKS / playbook, inventory=str(inventory), extra_vars={"gpu_node_hosts": "gpu_workers"})
    assert "No host of the inventory matches" not in named.stdout


# 5. Driver on disk, kernel module not loaded: refused up front, or (an image being built)
#    provisioned whole but for the device nodes and the CDI spec. Never half done.

def test_a_driver_that_is_not_loaded_fails_before_anything_naming_the_choice(fake_node_factory, tmp_path):
    node = fake_node_factory("cos", missing=("kernel_module", "nvidiactl"))
    before = snapshot(node.root)
    play, inventory = _user_play(tmp_path, node, {
        "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
        "gpu_node_containerd_restart_mode": "none"})
    text = _failed_up_front(run_playbook(play, inventory=str(inventory)), node, before)
    assert "The NVIDIA kernel module is not loaded on this node (driver 535.104.12 is on disk)" in text
    assert "set gpu_node_driver_not_loaded=provision" in text and "Nothing was changed" in text


def test_an_image_being_built_is_provisioned_whole_but_for_device_nodes_and_the_spec(fake_node_factory, tmp_path):
    node = fake_node_factory("cos", missing=("kernel_module", "nvidiactl"))
    play, inventory = _user_play(tmp_path, node, {
        "gpu_node_toolkit_src": str(toolkit_artifacts.build_tree(tmp_path / "artifacts")),
        "gpu_node_containerd_restart_mode": "none", "gpu_node_driver_not_loaded": "provision"})
    first = run_playbook(play, inventory=str(inventory))
    assert _ok(first)["changed"] > 0
    assert "the CDI spec is made at boot by the refresh this run set up" in " ".join(first.stdout.split())
    assert os.access(node.node_path(TOOLKIT + "/nvidia-container-runtime"), os.X_OK)
    assert 'BinaryName = "%s/nvidia-container-runtime"' % TOOLKIT in node.node_path(CONFIG).read_text()
    assert not node.node_path(SPEC).exists() and not node.node_path("/dev/nvidiactl").exists()
    # What the boot needs to make the spec: the program and the settings this run used.
    kept = node.node_path(TOOLKIT + "/.gpu-node")
    assert (kept / "gpu-node-cdi").is_file() and "specs" in json.loads((kept / "cdi-refresh.json").read_text())
    assert _ok(run_playbook(play, inventory=str(inventory)))["changed"] == 0


# 1. Tags: the role's look and checks run when one of its steps is selected, not for the
#    playbook's own tags.

def _tagged_play(tmp_path, node, how):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"gpu_workers": {"hosts": {"localhost": {
        "ansible_connection": "local", "gpu_node_host_root": str(node.root),
        "gpu_node_containerd_restart_mode": "none"}}}}))
    own = {"name": "Our own task", "ansible.builtin.debug": {"msg": "app"}, "tags": ["app"]}
    role = {"import_role": {"name": "gpu_node.container_toolkit.gpu_node"}} if how == "import_role" else {
        "include_role": {"name": "gpu_node.container_toolkit.gpu_node", "apply": {"tags": ["gpu"]}}, "tags": ["gpu"]}
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"name": "Our GPU workers", "hosts": "gpu_workers", "gather_facts": False,
                                     "tasks": [own, dict(role, name="The GPU node role")]}], sort_keys=False))
    return play, inventory


@pytest.mark.parametrize("how", ["import_role", "include_role"])
def test_the_playbooks_own_tags_run_none_of_the_role(fake_node_factory, tmp_path, how):
    # A fresh node without a toolkit source: any task of the role would fail the run.
    node = fake_node_factory("cos", missing=("nvidiactl",))
    before = snapshot(node.root)
    play, inventory = _tagged_play(tmp_path, node, how)
    proc = run_playbook(play, inventory=str(inventory), extra_args=["--tags", "app"])
    totals = _ok(proc)
    # Ansible's own argument check of an imported role is tagged always; it reads nothing on the node.
    tasks = [line for line in proc.stdout.splitlines() if line.startswith("TASK [")]
    assert [t for t in tasks if "gpu_node.container_toolkit" in t and "Validating arguments" not in t] == [], tasks
    assert "TASK [Our own task]" in proc.stdout and totals["failed"] == 0 and totals["changed"] == 0
    assert changed_entries(before, snapshot(node.root)) == []


def test_a_step_tag_runs_the_look_and_that_step(cos, tmp_path):
    node, artifacts, base = cos
    _ok(run_playbook(PLAYBOOKS / "site.yml", extra_vars=dict(base, gpu_node_toolkit_src=str(artifacts),
                                                             gpu_node_containerd_restart_mode="none")))
    node.node_path(SPEC).unlink()
    play, inventory = _tagged_play(tmp_path, node, "import_role")
    proc = run_playbook(play, inventory=str(inventory), extra_args=["--tags", "cdi"])
    assert _ok(proc)["changed"] > 0
    assert "TASK [gpu_node.container_toolkit.gpu_node : Look at the node" in proc.stdout
    assert node.node_path(SPEC).exists()
    assert "Install or remove the NVIDIA Container Toolkit binaries" not in proc.stdout
    assert "Our own task" not in proc.stdout


# 2. Each role's own prefix: a near miss fails up front; another role's variable under the same
#    prefix (geerlingguy.docker's docker_users) passes.

@pytest.mark.parametrize("role, variables, message", [
    ("containerd", {"containerd_restart_mod": "none", "containerd_restart_mode": "none"},
     "Misspelled variables for the containerd role: containerd_restart_mod (did you mean containerd_restart_mode?)"),
    ("docker", {"docker_restart_mdoe": "none", "docker_restart_mode": "none", "docker_users": ["ops"]},
     "Misspelled variables for the docker role: docker_restart_mdoe (did you mean docker_restart_mode?)."),
])
def test_a_near_miss_under_a_roles_own_prefix_fails_before_anything(cos, tmp_path, role, variables, message):
    node, _artifacts, _base = cos
    before = snapshot(node.root)
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"gpu_workers": {"hosts": {"localhost": dict(
        variables, ansible_connection="local", **{role + "_host_root": str(node.root)})}}}))
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"name": "Our GPU workers", "hosts": "gpu_workers", "gather_facts": False,
                                     "roles": ["gpu_node.container_toolkit." + role]}], sort_keys=False))
    text = _failed_up_front(run_playbook(play, inventory=str(inventory)), node, before)
    assert message in text and "%s_variables_allowed" % role in text
    assert "docker_users" not in text


def test_another_roles_variables_under_the_same_prefix_pass(cos, tmp_path):
    node, _artifacts, _base = cos
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"gpu_workers": {"hosts": {"localhost": {
        "ansible_connection": "local", "docker_host_root": str(node.root), "docker_restart_mode": "none",
        # geerlingguy.docker's variables, in the same inventory
        "docker_users": ["ops"], "docker_service_state": "started", "docker_edition": "ce"}}}}))
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"name": "Our GPU workers", "hosts": "gpu_workers", "gather_facts": False,
                                     "roles": ["gpu_node.container_toolkit.docker"]}], sort_keys=False))
    assert _ok(run_playbook(play, inventory=str(inventory)))["changed"] > 0
    assert "nvidia" in json.loads(node.node_path("/etc/docker/daemon.json").read_text())["runtimes"]
