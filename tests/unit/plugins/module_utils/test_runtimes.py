# -*- coding: utf-8 -*-
"""The rules every engine shares: the runtimes registered, and the low-level runtime they wrap."""

from __future__ import annotations

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config as dc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt

OURS = ("nvidia", "nvidia-cdi", "nvidia-legacy")


def test_the_defaults_live_in_the_install_dir():
    assert rt.normalize_runtimes(None, "/opt/t") == rt.default_runtimes("/opt/t") == [
        {"name": "nvidia", "binary": "/opt/t/nvidia-container-runtime"},
        {"name": "nvidia-cdi", "binary": "/opt/t/nvidia-container-runtime.cdi"},
        {"name": "nvidia-legacy", "binary": "/opt/t/nvidia-container-runtime.legacy"},
    ]
    assert rt.normalize_runtimes([])[0]["binary"] == "/usr/local/nvidia/toolkit/nvidia-container-runtime"


def test_a_name_an_engine_reserves_is_refused_with_its_reason():
    with pytest.raises(rt.ConfigError, match=r"the name 'runc' is reserved \(dockerd refuses to start"):
        rt.normalize_runtimes([{"name": "runc", "binary": "/x"}], "/t", dc.RESERVED_RUNTIME_NAMES)
    assert rt.normalize_runtimes([{"name": "runc", "binary": "/x"}], "/t") == [{"name": "runc", "binary": "/x"}]


@pytest.mark.parametrize("candidates, defined, usable, chosen", [
    (["kata", "runc", "crun"], {"kata", "runc", "crun"}, {"runc", "crun"}, "runc"),   # a VM default is passed over
    (["nvidia", "runc", "crun"], {"nvidia", "crun"}, None, "crun"),                  # our own default last
    (["nvidia", "runc", "crun"], {"nvidia"}, None, "nvidia"),                        # ...but taken when alone
    ([None, "crun", "runc"], {"runc"}, None, "runc"),
    (["runc", "crun"], set(), None, None),
    (["runc", "runc", "crun"], {"crun"}, None, "crun"),
])
def test_the_base_runtime_is_the_first_usable_one_ours_last(candidates, defined, usable, chosen):
    check = None if usable is None else usable.__contains__
    assert rt.base_runtime(candidates, defined, OURS, check) == chosen
