"""`make demo` installs only what the demo needs: requirements-demo.txt holds what scripts/demo.py and
the test-support modules it imports really import, beyond requirements.txt nothing else, and the test
suite's requirements include it (the demo and the tests share .venv, the tests adding theirs on top).
The apt lists are split the same way: nothing of the test stack in scripts/apt-packages-demo.txt."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SUPPORT = REPO / "tests" / "support"
# Top-level import name -> the distribution that provides it (None: this collection itself).
DISTRIBUTIONS = {"ansible": "ansible-core", "ansible_collections": None, "grpc": "grpcio", "grpc_tools": "grpcio-tools",
                 "tomlkit": "tomlkit", "yaml": "pyyaml"}
# What only the test suite uses; none of it may be in the demo's set.
TEST_ONLY = {"pytest", "pytest-cov", "ruff", "ansible-lint", "yamllint", "jsonschema", "molecule", "molecule-plugins"}


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(name):
    """Distribution names in a requirements file, following ``-r`` includes."""
    found = set()
    for line in (REPO / name).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        include = re.match(r"(?:-r|--requirement)[\s=]+(\S+)", line)
        if include:
            found |= requirements(include.group(1))
        elif line:
            found.add(normalize(re.match(r"[A-Za-z0-9._-]+", line).group(0)))
    return found


def imported_names(path):
    """Top-level names ``path`` imports anywhere (also inside functions) or runs with ``python -m``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.List):
            items = [item.value if isinstance(item, ast.Constant) else None for item in node.elts]
            names |= {items[i + 1].split(".")[0] for i in range(len(items) - 1) if items[i] == "-m" and isinstance(items[i + 1], str)}
    return names


def demo_imports():
    """Third-party names the demo imports: scripts/demo.py and, transitively, the tests/support modules it uses."""
    seen, todo, third_party = set(), [REPO / "scripts" / "demo.py"], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in imported_names(path):
            if (SUPPORT / (name + ".py")).is_file():
                todo.append(SUPPORT / (name + ".py"))
            elif name not in sys.stdlib_module_names and name != "__future__":
                third_party.add(name)
    return third_party


pytestmark = pytest.mark.skipif(sys.version_info < (3, 10), reason="not applicable: sys.stdlib_module_names needs Python 3.10")


def test_requirements_demo_is_what_the_demo_imports_on_top_of_requirements_txt():
    names = demo_imports()
    unknown = names - set(DISTRIBUTIONS)
    assert not unknown, "the demo imports %s: add the distribution to DISTRIBUTIONS and, if needed, to requirements-demo.txt" % sorted(unknown)
    needed = {DISTRIBUTIONS[name] for name in names} - {None}
    demo, base = requirements("requirements-demo.txt"), requirements("requirements.txt")
    assert needed <= demo, "requirements-demo.txt lacks %s" % sorted(needed - demo)
    assert demo - base <= needed, "requirements-demo.txt installs %s, which the demo does not use" % sorted(demo - base - needed)
    assert not demo & TEST_ONLY


def test_the_test_suite_installs_the_demos_packages_and_more():
    demo, tests = requirements("requirements-demo.txt"), requirements("requirements-test.txt")
    assert demo < tests
    assert TEST_ONLY <= tests


def test_the_apt_lists_are_split():
    def packages(name):
        text = (REPO / "scripts" / name).read_text(encoding="utf-8")
        return {line.split("#", 1)[0].strip() for line in text.splitlines()} - {""}

    demo, tests = packages("apt-packages-demo.txt"), packages("apt-packages.txt")
    assert {"gcc", "containerd", "python3-venv"} <= demo
    assert not demo & tests, "listed twice: %s" % sorted(demo & tests)
    assert not demo & {"golang-go", "rpm", "debootstrap", "shellcheck", "podman", "dpkg-dev"}
