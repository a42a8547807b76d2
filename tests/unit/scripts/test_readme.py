"""README.md as a new user follows it: the install commands come in an order that works, and the
example inventory of "On your inventory" is one Ansible reads, with only the gpu_node role's
variables (and Ansible's own ``ansible_*``), values its argument spec accepts, and the playbooks
the README calls by name."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
README = (REPO / "README.md").read_text(encoding="utf-8")
SPEC = yaml.safe_load((REPO / "roles" / "gpu_node" / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
OPTIONS = SPEC["argument_specs"]["main"]["options"]
BIN = Path(sys.executable).parent
FQCN = "gpu_node.container_toolkit."


def section(title, nested=True):
    """The text under the heading ``title`` (any level), up to the next heading of its level or above
    (``nested=False``: up to the next heading of any level). Lines in code blocks are no headings."""
    lines = README.splitlines(keepends=True)
    in_code, start, level, found = False, None, None, []
    for line in lines:
        if line.startswith("```"):
            in_code = not in_code
        heading = None if in_code else re.match(r"(#+) (.*)", line)
        if heading and start is not None and len(heading.group(1)) <= (level if nested else 6):
            break
        if start is not None:
            found.append(line)
        elif heading and heading.group(2).strip() == title:
            start, level = True, len(heading.group(1))
    assert start, "README.md has no section %r" % title
    return "".join(found)


def code_blocks(text, lang):
    return re.findall(r"^```%s\n(.*?)^```" % lang, text, re.MULTILINE | re.DOTALL)


def commands(text):
    """The commands of a section's ``sh`` blocks, one a line, comments dropped."""
    lines = []
    for block in code_blocks(text, "sh"):
        lines += [line.split("#", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line]


def first(lines, pattern):
    found = [i for i, line in enumerate(lines) if re.search(pattern, line)]
    assert found, "no command matches %r in %s" % (pattern, lines)
    return found[0]


def example_inventory():
    blocks = [block for block in code_blocks(section("On your inventory"), "yaml") if block.startswith("# inventory.yml\n")]
    assert len(blocks) == 1, "expected one YAML inventory.yml in 'On your inventory', found %d" % len(blocks)
    return blocks[0]


def test_the_simulated_nodes_inventory_builds_provisions_and_verifies_with_the_playbooks_it_names():
    """The "Try it on simulated nodes" inventory: every host has what simulated_node needs (an absolute
    gpu_node_host_root), a layout and missing items the playbook accepts, and the commands name playbooks
    the collection has."""
    blocks = [block for block in code_blocks(section("On your inventory"), "yaml") if block.startswith("# simulated.yml\n")]
    assert len(blocks) == 1
    hosts = hosts_and_vars(yaml.safe_load(blocks[0])["gpu_workers"])
    playbook = (REPO / "playbooks" / "simulated_node.yml").read_text()
    assert sorted(hosts) == ["sim-cos-1", "sim-ubuntu-1"]
    for host_vars in hosts.values():
        assert host_vars["gpu_node_host_root"].startswith("/") and host_vars["ansible_connection"] == "local"
        assert host_vars["gpu_node_containerd_restart_mode"] == "none"
        assert host_vars.get("simulated_node_layout", "cos") in ("cos", "ubuntu")
        for item in host_vars.get("simulated_node_missing", []):
            assert item in playbook.split("simulated_node_missing", 1)[1].split("simulated_node_fresh", 1)[0], item
    commands = [line for line in code_blocks(section("On your inventory"), "sh") if "simulated.yml" in line]
    assert commands, "no command uses simulated.yml"
    for name in re.findall(r"gpu_node\.container_toolkit\.(\w+)", "\n".join(commands)):
        assert (REPO / "playbooks" / (name + ".yml")).is_file(), name


def hosts_and_vars(group, inherited=None):
    """``{host: {var: value}}`` for every host under ``group``, with group vars applied as Ansible does."""
    scope = dict(inherited or {}, **(group.get("vars") or {}))
    found = {}
    for name, host_vars in (group.get("hosts") or {}).items():
        found[name] = dict(scope, **(host_vars or {}))
    for child in (group.get("children") or {}).values():
        found.update(hosts_and_vars(child or {}, scope))
    return found


def group_hosts(group, name):
    """Hosts of the group ``name`` anywhere under ``group``."""
    for child_name, child in (group.get("children") or {}).items():
        if child_name == name:
            return sorted(hosts_and_vars(child or {}))
        found = group_hosts(child or {}, name)
        if found:
            return found
    return []


def accepts(spec, value):
    """Whether a role option's spec accepts ``value`` as an inventory gives it."""
    kind = spec.get("type", "str")
    if kind == "bool":
        ok = isinstance(value, bool)
    elif kind in ("str", "path"):
        ok = isinstance(value, str)
    elif kind == "raw":
        ok = isinstance(value, str) or (isinstance(value, list) and all(isinstance(item, str) for item in value))
    else:
        ok = True
    return ok and ("choices" not in spec or value in spec["choices"])


def ansible_env(tmp_path):
    # Ansible's home and temp dirs in the test's own directory: nothing written to $HOME.
    return dict(os.environ, ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
                ANSIBLE_NOCOLOR="1")


def test_install_runs_pip_in_a_venv_before_ansible_galaxy():
    lines = commands(section("Install"))
    venv = first(lines, r"\bpython3? -m venv\b")
    pip = first(lines, r"\bpip install -r requirements\.txt\b")
    build = first(lines, r"\bansible-galaxy collection build\b")
    install = first(lines, r"\bansible-galaxy collection install\b")
    assert venv < pip < build < install, lines
    # ansible-galaxy comes from that pip install: no ansible command may come before it.
    assert all(i > pip for i, line in enumerate(lines) if re.search(r"\bansible(-[a-z]+)?\b", line)), lines


def test_collection_sources_named_in_the_readme_exist_or_are_local():
    assert "example.invalid" not in README and "example.com" not in README
    sources = re.findall(r"ansible-galaxy collection install (\S+)", README)
    assert sources, "README.md names no source for ansible-galaxy collection install"
    for source in sources:
        source = source.strip("`")
        assert source.startswith("git+file://") or re.fullmatch(r"gpu_node-container_toolkit-[^/]*\.tar\.gz", source), source


def test_playbooks_modules_and_roles_named_in_the_readme_exist():
    names = set(re.findall(re.escape(FQCN) + r"([a-z_]+)", README))
    known = {p.stem for p in (REPO / "playbooks").glob("*.yml")} | {p.stem for p in (REPO / "plugins" / "modules").glob("*.py")}
    known |= {p.name for p in (REPO / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file()}
    known |= {p.stem for p in (REPO / "plugins" / "doc_fragments").glob("*.py")}
    known |= {p.stem for p in (REPO / "plugins" / "filter").glob("*.py")}
    assert {"site", "verify", "uninstall"} <= names
    assert names <= known, "README.md names %s, which the collection does not have" % sorted(names - known)


def test_example_inventory_uses_only_the_roles_variables_with_values_they_accept():
    inventory = yaml.safe_load(example_inventory())
    hosts = hosts_and_vars(inventory["all"])
    assert len(hosts) == 2, sorted(hosts)
    problems = []
    for host, host_vars in sorted(hosts.items()):
        for name, value in sorted(host_vars.items()):
            if name.startswith("ansible_"):
                continue
            if name not in OPTIONS:
                problems.append("%s: %s is not a variable of the gpu_node role" % (host, name))
            elif not accepts(OPTIONS[name], value):
                problems.append("%s: %s=%r is not what the gpu_node role accepts (%s)" % (host, name, value, OPTIONS[name]))
        # Real nodes: the node's / is the host's own, whether written out or left to the default.
        assert host_vars.get("gpu_node_host_root", OPTIONS["gpu_node_host_root"]["default"]) == "/", host
        assert host_vars.get("gpu_node_toolkit_src"), "%s has no gpu_node_toolkit_src" % host
    assert not problems, "\n".join(problems)
    # The playbooks' default target group holds both nodes.
    assert group_hosts(inventory["all"], "gpu_nodes") == sorted(hosts)


def test_example_inventory_reads_in_ansible_inventory_and_site_lists_its_hosts(tmp_path):
    path = tmp_path / "inventory.yml"
    path.write_text(example_inventory(), encoding="utf-8")
    expected = sorted(hosts_and_vars(yaml.safe_load(path.read_text(encoding="utf-8"))["all"]))
    env = ansible_env(tmp_path)
    proc = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(path), "--list"],
                          capture_output=True, text=True, env=env, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "[WARNING]" not in proc.stderr, proc.stderr
    listed = json.loads(proc.stdout)
    assert sorted(listed["gpu_nodes"]["hosts"]) == expected
    for host in expected:
        assert len(listed["_meta"]["hostvars"][host]["gpu_node_toolkit_src"]) == 4

    # What the README runs: the playbook by its name, against that inventory.
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(path), FQCN + "site", "--list-hosts"],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The play that provisions (the first play, on the controller, checks the inventory matches).
    provision = proc.stdout.partition("Provision GPU nodes")[2]
    listed_hosts = re.search(r"hosts \(\d+\):\n((?:[ \t]+\S+[ \t]*\n?)+)", provision)
    assert listed_hosts, proc.stdout
    assert sorted(listed_hosts.group(1).split()) == expected


@pytest.mark.parametrize("title", ["On your inventory", "Uninstall"])
def test_first_commands_run_the_playbooks_by_name_on_the_example_inventory(title):
    lines = commands(section(title, nested=False))
    playbook = "uninstall" if title == "Uninstall" else "site"
    assert all(line.startswith("ansible-playbook -i inventory.yml " + FQCN) for line in lines), lines
    check = first(lines, re.escape(FQCN + playbook) + r" --check --diff$")
    run = first(lines, re.escape(FQCN + playbook) + "$")
    assert check < run, lines
    if playbook == "site":
        assert lines == ["ansible-playbook -i inventory.yml %s%s" % (FQCN, tail) for tail in ("site --check --diff", "site", "verify")]
