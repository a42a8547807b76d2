# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit the toolkit's ``config.toml`` (controller side), keeping what users added.

Only the keys in the wanted settings are set; every other key, table and comment is left as
it is. The decisions come from ``module_utils/toolkit_config.py``; the lines are edited by
``plugin_utils/toml_edit.py``.
"""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import DifferenceTracker
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.toolkit_config import flatten
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import (
    TomlDocument,
    TomlEditError,
    get_path,
    load,
)


def edit(text, wanted, name="config.toml"):
    """Apply ``wanted`` (nested dict) to the TOML ``text`` (None when missing).

    Returns ``{"text", "changes", "settings"}``; ``settings`` is the whole file as plain data.
    Raises TomlEditError naming ``name`` when the file cannot be edited safely.
    """
    doc = TomlDocument(text or "", name)
    tracker = DifferenceTracker()
    for keys, value in flatten(wanted):
        current = get_path(doc.data, keys)
        if doc.set(keys, value):
            # (type, value): 1 and true are equal in Python but not in TOML.
            reason = "%r -> %r" % (current, value) if current is not None else "unset -> %r" % (value,)
            tracker.add(".".join(keys), (type(current).__name__, current), (type(value).__name__, value), reason=reason)
    return {"text": doc.text, "changes": tracker.reasons(), "settings": doc.data}


def runtime_binary(text, name="runc"):
    """``options.BinaryName`` of runtime ``name`` in a containerd config, or None when unknown."""
    if not text:
        return None
    try:
        data = load(text, "containerd config")
        binary = get_path(data, cc.runtimes_table(cc.file_version(data.get("version"))) + (name, "options", "BinaryName"))
    except (TomlEditError, cc.ConfigError):
        return None
    return binary if isinstance(binary, str) and binary else None
