"""The digest of a run's inputs besides the node (lookup inputs_digest)."""

from __future__ import annotations

import os
import re

import pytest
import yaml
from ansible_runner import run_playbook

from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import run_inputs


def digests(tmp_path, cases):
    """Each case's digest, ``[(settings, options)]``, from one real ansible-playbook run."""
    book = tmp_path / "digests.yml"
    book.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "digest %d" % index, "ansible.builtin.debug": {"msg": "DIGEST %d {{ lookup('gpu_node.container_toolkit.inputs_digest', "
                                                                     "settings, **options) }}" % index},
         "vars": {"settings": settings, "options": options}}
        for index, (settings, options) in enumerate(cases)]}]))
    proc = run_playbook(book)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = dict(re.findall(r'"DIGEST (\d+) ?([0-9a-f]*)"', proc.stdout))
    return [found[str(index)] for index in range(len(cases))]


@pytest.fixture
def source(tmp_path):
    tree = tmp_path / "toolkit"
    (tree / "usr" / "bin").mkdir(parents=True)
    (tree / "usr" / "bin" / "nvidia-ctk").write_bytes(b"\x7fELF one")
    os.symlink("nvidia-ctk", tree / "usr" / "bin" / "ctk")
    return tree


def test_same_inputs_same_digest_and_each_input_counts(source, tmp_path):
    src = {"sources": [str(source)]}
    first = digests(tmp_path, [({"a": 1}, src), ({"a": 1}, src), ({"a": 2}, src),
                               ({"a": 1}, {"sources": ["https://example.com/toolkit.tar.gz"]}),
                               ({"a": 1}, {"sources": [str(tmp_path / "missing")]}),
                               ({"a": 1}, dict(src, remote_src=True)), ({"a": 1}, {"sources": [], "remote_src": True})])
    base = first[0]
    assert len(base) == 64 and first[1] == base
    assert len({base, first[2], first[3], first[6]}) == 4
    # Sources it cannot read here: no digest, so no record matches.
    assert first[4] == "" and first[5] == ""
    (source / "usr" / "bin" / "nvidia-ctk").write_bytes(b"\x7fELF two")
    changed = digests(tmp_path, [({"a": 1}, src)])[0]
    (source / "usr" / "bin" / "nvidia-ctk").chmod(0o700)
    assert len({base, changed, digests(tmp_path, [({"a": 1}, src)])[0]}) == 3


def test_the_collection_digest_follows_its_files(tmp_path):
    root = tmp_path / "collection"
    (root / "plugins").mkdir(parents=True)
    (root / "plugins" / "a.py").write_text("one")
    cache = tmp_path / "cache"
    cache.mkdir()
    first = run_inputs.collection_digest_cached(str(cache), root)
    assert first == run_inputs.collection_digest(root)
    assert len(list(cache.iterdir())) == 1
    (root / "plugins" / "a.py").write_text("two!")
    assert run_inputs.collection_digest_cached(str(cache), root) != first
    # Without a usable cache dir, computed each time.
    assert run_inputs.collection_digest_cached(str(tmp_path / "nowhere"), root) == run_inputs.collection_digest(root)
