# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit the toolkit's ``config.toml`` with tomlkit (controller side), keeping what users added.

Only the keys in the wanted settings are set; every other key, table and comment is left as
it is. The decisions come from ``module_utils/toolkit_config.py``.
"""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import DifferenceTracker
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.toolkit_config import (
    ToolkitConfigError,
    flatten,
)
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.containerd_toml import (
    get_table,
    item_of,
    parse,
    plain,
    set_value,
    tomlkit,
)


def edit(text, wanted, name="config.toml"):
    """Apply ``wanted`` (nested dict) to the TOML ``text`` (None when missing).

    Returns ``{"text", "changes", "settings"}``; ``settings`` is the whole file as plain data.
    """
    try:
        doc = parse(text or "", name)
    except cc.ConfigError as exc:
        raise ToolkitConfigError(str(exc)) from None
    tracker = DifferenceTracker()
    for keys, value in flatten(wanted):
        try:
            table = get_table(doc, keys[:-1], create=True)
        except cc.ConfigError as exc:
            raise ToolkitConfigError("%s: %s" % (name, exc)) from None
        key = keys[-1]
        dotted = ".".join(keys)
        exists = key in table
        current = plain(table[key]) if exists else None
        if exists and isinstance(current, dict) and not isinstance(value, dict):
            raise ToolkitConfigError("%s: %s is a table; settings gives it the value %r" % (name, dotted, value))
        if exists and current == value and type(current) is type(value):
            continue
        if isinstance(value, dict):
            table[key] = tomlkit.table()
        else:
            set_value(table, key, value, comment=_comment(table, key) if exists else None)
        # (type, value): 1 and true are equal in Python but not in TOML.
        reason = "%r -> %r" % (current, value) if exists else "unset -> %r" % (value,)
        tracker.add(dotted, (type(current).__name__, current), (type(value).__name__, value), reason=reason)
    new_text = doc.as_string()
    return {"text": new_text, "changes": tracker.reasons(), "settings": doc.unwrap()}


def _comment(table, key):
    """The user's inline comment on ``key``, kept when the value changes."""
    comment = item_of(table, key).trivia.comment or ""
    return comment.lstrip("#").strip() or None


def runtime_binary(text, name="runc"):
    """``options.BinaryName`` of runtime ``name`` in a containerd config, or None when unknown."""
    if not text:
        return None
    try:
        doc = tomlkit.parse(text)
        version = cc.file_version(plain(doc.get("version")))
        table = doc
        for key in cc.runtimes_table(version) + (name, "options"):
            table = table[key]
        binary = plain(table.get("BinaryName"))
    except Exception:  # pylint: disable=broad-exception-caught
        return None
    return binary if isinstance(binary, str) and binary else None
