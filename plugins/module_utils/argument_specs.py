# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument specs of the action-backed modules, in one place.

The action plugin validates a task's arguments with its module's spec, and the module file's
``main()`` builds its ``AnsibleModule`` with the same spec, so ``ansible-test sanity`` compares
it with the module's ``DOCUMENTATION``. Each function returns a fresh dict (callers may change it).
(``cdi_spec``'s, shared by the module and the node's own generator, is ``cdi_files.argument_spec``.)
"""

from __future__ import annotations

import json

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import crio_config as crio
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config as dc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_config as tc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import (
    DEFAULT_INSTALL_DIR,
    node_argument_spec,
)


def _engine(path):
    """What every engine module takes: where its file is, the runtimes, the default, undo."""
    return dict(
        node_argument_spec(read_ahead=True),
        path={"type": "str", "default": path},
        install_dir={"type": "path", "default": DEFAULT_INSTALL_DIR},
        runtimes={
            "type": "list",
            "elements": "dict",
            "options": {"name": {"type": "str", "required": True}, "binary": {"type": "str", "required": True}},
        },
        set_as_default={"type": "bool", "default": False},
        state={"type": "str", "default": "present", "choices": ["present", "absent"]},
        backup={"type": "bool", "default": False},
        remove_backups={"type": "bool", "default": False},
    )


def containerd_runtime():
    return dict(
        _engine(cc.DEFAULT_PATH),
        runtime_type={"type": "str", "default": cc.DEFAULT_RUNTIME_TYPE},
        enable_cdi={"type": "bool"},
        enable_cri={"type": "bool", "default": False},
        cdi_spec_dirs={"type": "list", "elements": "str"},
        container_annotations={"type": "list", "elements": "str",
                               "default": list(cc.DEFAULT_CONTAINER_ANNOTATIONS)},
        config_version={"type": "str", "default": "auto", "choices": ["auto", "1", "2", "3", "4"]},
        drop_in={"type": "str"},
        validate={"type": "str"},
    )


def docker_runtime():
    return dict(_engine(dc.DEFAULT_PATH), enable_cdi={"type": "bool"})


def crio_runtime():
    return dict(_engine(crio.DEFAULT_PATH), config_path={"type": "str", "default": crio.DEFAULT_CONFIG})


def k3s_runtime():
    spec = _engine(DEFAULT_INSTALL_DIR)
    del spec["path"]
    spec["distribution"] = {"type": "str", "default": "auto", "choices": ["auto", "k3s", "rke2"]}
    return spec


def engine_restart():
    return dict(
        node_argument_spec(),
        engine={"type": "str", "required": True},
        restart_script={"type": "str", "required": True},
        restart={"type": "dict"},
        rollback_because={"type": "str"},
        timeout={"type": "int", "default": 30},
        backup_files={"type": "dict", "default": {}},
    )


def gpu_node_look():
    return dict(
        node_argument_spec(driver=True),
        read_ahead={"type": "dict"},
        settings={"type": "dict", "required": True},
        needs_driver={"type": "bool", "default": True},
        options_file={"type": "path", "required": True},
        prefix={"type": "str", "default": "gpu_node_"},
        known={"type": "list", "elements": "str", "default": []},
        allowed={"type": "list", "elements": "str", "default": []},
        skip_unchanged={"type": "bool", "default": False},
        other_inputs={"type": "list", "elements": "str", "default": []},
        sources={"type": "list", "elements": "str", "default": []},
        remote_src={"type": "bool", "default": False},
    )


def toolkit_config():
    return dict(
        node_argument_spec(read_ahead=True),
        path={"type": "str"},
        install_dir={"type": "path", "default": DEFAULT_INSTALL_DIR},
        driver_root={"type": "str", "default": "auto"},
        ldconfig={"type": "str", "default": "auto"},
        runtime_mode={"type": "str", "default": "auto", "choices": list(tc.MODES), "aliases": ["mode"]},
        runtimes={"type": "list", "elements": "str"},
        containerd_config={"type": "str", "default": "/etc/containerd/config.toml"},
        default_kind={"type": "str"},
        annotation_prefixes={"type": "list", "elements": "str"},
        spec_dirs={"type": "list", "elements": "str"},
        settings={"type": "dict", "default": {}},
        state={"type": "str", "default": "present", "choices": ["present", "absent"]},
        backup={"type": "bool", "default": False},
    )


def toolkit_install():
    return dict(
        node_argument_spec(read_ahead=True),
        src={"type": "list", "elements": "str"},
        remote_src={"type": "bool", "default": False},
        checksum={"type": "list", "elements": "str", "no_log": False},
        validate_certs={"type": "bool", "default": True},
        install_dir={"type": "path", "default": DEFAULT_INSTALL_DIR},
        state={"type": "str", "choices": ["present", "absent"], "default": "present"},
        low_level_runtime={"type": "str", "default": "runc"},
        config_path={"type": "path"},
        exec_mount={"type": "bool", "default": False},
        config={"type": "dict"},
        # What the action plugin sends the node: the wire between the two halves of one task, as
        # one JSON text (wire_text). One string: no_log hides it whole, and no path or digest inside
        # it is masked where the result repeats it.
        _wire={"type": "str", "no_log": True},
    )


# toolkit_install's _wire: its keys.
TOOLKIT_INSTALL_WIRE = ("expected", "payload", "config_write")


def wire_text(wire):
    """toolkit_install's ``_wire`` as the action plugin sends it: ``wire`` (a dict) as JSON text."""
    return json.dumps(wire, separators=(",", ":"), sort_keys=True)


def wire_of(text):
    """The dict :func:`wire_text` made, or {} for none. Raises ValueError naming what is wrong."""
    if not text:
        return {}
    try:
        wire = json.loads(text)
    except ValueError:
        raise ValueError("_wire is not what the action plugin sends: not JSON") from None
    if not isinstance(wire, dict):
        raise ValueError("_wire is not what the action plugin sends: not a JSON object")
    unknown = sorted(set(wire) - set(TOOLKIT_INSTALL_WIRE))
    if unknown:
        raise ValueError("_wire is not what the action plugin sends: no key %s" % ", ".join(unknown))
    return wire


# What toolkit_install's config option does not take from toolkit_config's: the install's own.
TOOLKIT_CONFIG_FROM_INSTALL = ("host_root", "read_ahead", "state", "path", "install_dir")


def toolkit_install_config():
    """toolkit_install's ``config``: toolkit_config's options, less those the install gives it."""
    spec = toolkit_config()
    for name in TOOLKIT_CONFIG_FROM_INSTALL:
        del spec[name]
    return spec


def toolkit_package():
    return dict(
        node_argument_spec(),
        method={"type": "str", "default": "package", "choices": ["package", "auto"]},
        manager={"type": "str", "default": "auto", "choices": ["auto", "apt", "dnf"]},
        version={"type": "str", "default": ""},
        repo={"type": "bool", "default": True},
        repo_name={"type": "str", "default": "nvidia-container-toolkit"},
        repo_url={"type": "str", "default": ""},
        repo_suite={"type": "str", "default": "/"},
        repo_components={"type": "list", "elements": "str", "default": []},
        repo_key={"type": "str", "default": "", "no_log": False},
        record_dir={"type": "str", "default": DEFAULT_INSTALL_DIR},
        state={"type": "str", "default": "present", "choices": ["present", "absent"]},
    )


def persist_files():
    return dict(
        node_argument_spec(read_ahead=True),
        dir={"type": "str", "required": True},
        containerd_config={"type": "str"},
        docker_config={"type": "str"},
        cdi_specs={"type": "list", "elements": "str"},
        files={"type": "dict", "default": {}},
        executables={"type": "list", "elements": "str", "default": []},
        state={"type": "str", "default": "present", "choices": ["present", "absent"]},
    )
