"""pytest fixtures that build fake GPU nodes (see fakenode.py)."""

from __future__ import annotations

import os

import pytest
from fakenode import build_node


@pytest.fixture
def fake_node_factory(tmp_path):
    """``factory(layout="cos", **options)`` builds a fresh node under the test's tmp dir."""
    if os.geteuid() != 0:
        pytest.skip("fake nodes need root: device nodes are made with mknod")
    counter = {"n": 0}

    def factory(layout="cos", **options):
        counter["n"] += 1
        return build_node(tmp_path / ("node%d-%s" % (counter["n"], layout)), layout, **options)

    return factory


@pytest.fixture
def cos_node(fake_node_factory):
    return fake_node_factory("cos")


@pytest.fixture
def ubuntu_node(fake_node_factory):
    return fake_node_factory("ubuntu")


@pytest.fixture
def driver_container_node(fake_node_factory):
    return fake_node_factory("driver-container")
