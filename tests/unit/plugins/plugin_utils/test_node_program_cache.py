# -*- coding: utf-8 -*-
"""node_program.build_cached: one build per run however many hosts' workers ask, and never a stale
text after a module_utils file changed."""

from __future__ import annotations

import multiprocessing
import os
import time

from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import node_program

ENTRY = "from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import helper\n\ndef main(argv):\n    return 0\n"


def module_utils(tmp_path, helper="VALUE = 1\n"):
    directory = tmp_path / "module_utils"
    directory.mkdir(exist_ok=True)
    (directory / "entry.py").write_text(ENTRY)
    (directory / "helper.py").write_text(helper)
    return str(directory)


def counting_build(monkeypatch, log, seconds=0.0):
    real = node_program.build

    def build(entry, directory):
        with open(log, "a") as handle:
            handle.write("built\n")
        time.sleep(seconds)  # long enough for the other workers to ask meanwhile
        return real(entry, directory)

    monkeypatch.setattr(node_program, "build", build)


def builds(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_the_cached_text_is_the_built_text_and_is_built_once(tmp_path, monkeypatch):
    directory = module_utils(tmp_path)
    expected = node_program.build("entry", directory)
    log = tmp_path / "builds"
    counting_build(monkeypatch, log)
    cache = tmp_path / "cache"
    cache.mkdir()
    assert node_program.build_cached("entry", str(cache), directory) == expected
    assert node_program.build_cached("entry", str(cache), directory) == expected
    assert builds(log) == 1
    # No temp file left behind, only the text and its lock.
    assert sorted(name.split("-")[0] for name in os.listdir(cache)) == ["gpu_node", "gpu_node"]


def test_a_changed_module_utils_file_is_built_again(tmp_path, monkeypatch):
    directory = module_utils(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    first = node_program.build_cached("entry", str(cache), directory)
    module_utils(tmp_path, helper="VALUE = 22\n")
    os.utime(os.path.join(directory, "helper.py"), ns=(1, 1))  # a new mtime even on a coarse clock
    second = node_program.build_cached("entry", str(cache), directory)
    assert "VALUE = 1" in first and "VALUE = 22" in second


def _ask(entry, cache, directory, results):
    results.put(node_program.build_cached(entry, cache, directory))


def test_workers_asking_at_once_share_one_build(tmp_path, monkeypatch):
    directory = module_utils(tmp_path)
    log = tmp_path / "builds"
    counting_build(monkeypatch, log, seconds=0.3)
    cache = tmp_path / "cache"
    cache.mkdir()
    context = multiprocessing.get_context("fork")  # as Ansible starts its workers
    results = context.Queue()
    workers = [context.Process(target=_ask, args=("entry", str(cache), directory, results)) for _worker in range(6)]
    for worker in workers:
        worker.start()
    texts = [results.get(timeout=60) for _worker in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert [worker.exitcode for worker in workers] == [0] * 6
    assert len(set(texts)) == 1 and "VALUE = 1" in texts[0]
    assert builds(log) == 1


def test_without_a_usable_cache_dir_each_builds_its_own(tmp_path):
    directory = module_utils(tmp_path)
    assert node_program.build_cached("entry", str(tmp_path / "missing"), directory) == node_program.build("entry", directory)
