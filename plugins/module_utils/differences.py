# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Collect what differs where the decision is made, report it once: a result's ``changes``, the
one shape every module and action of the collection returns, and structured before/after diffs.

A change is ``{"path": host path, "action": word}``, with ``setting`` (the key inside the file that
differed, when the change is one setting of a file) and ``reason`` (why, in words) when known.
Node modules import this too: it needs only the standard library.
"""

from __future__ import annotations

# The action words of ``changes``, across the collection. A new word is added here, so that a
# consumer (verify's table, a playbook selecting on ``action``) meets no word it does not know.
ACTIONS = ("created", "updated", "replaced", "mode_changed", "removed", "kept", "installed", "remounted exec")


def change(path, action, reason=None, setting=None):
    """One entry of a result's ``changes``. Raises ValueError for an action not in ACTIONS."""
    if action not in ACTIONS:
        raise ValueError("change action %r is not one of %s" % (action, ", ".join(ACTIONS)))
    entry = {"path": path, "action": action}
    if setting is not None:
        entry["setting"] = setting
    if reason:
        entry["reason"] = reason
    return entry


def file_action(before, after):
    """What writing ``after`` over ``before`` does to a file (None: missing): created, updated or removed."""
    if after is None:
        return "removed"
    return "updated" if before is not None else "created"


def change_line(entry):
    """One change in words, for a report line: ``updated /etc/x.toml: runtime nvidia: missing``."""
    line = "%s %s" % (entry.get("action", "changed"), entry.get("path", ""))
    detail = ": ".join(str(part) for part in (entry.get("setting"), entry.get("reason")) if part)
    return (line.strip() + ": " + detail) if detail else line.strip()


class DifferenceTracker:
    """Records (name, before, after) triples; ``changed`` once any differ."""

    def __init__(self):
        self._items = []

    def add(self, name, before=None, after=None, reason=None, path=None, action=None):
        """Record a difference when ``before`` and ``after`` differ; return whether it did.

        ``name`` is a setting of the file :meth:`changes` is asked about, unless ``path`` is given:
        then the difference is that whole file's (or directory's), and ``action`` says what happens to it."""
        if before == after:
            return False
        self._items.append({"name": name, "before": before, "after": after, "reason": reason,
                            "path": path, "action": action})
        return True

    @property
    def changed(self):
        return bool(self._items)

    def changes(self, path, created=False):
        """The result's ``changes``: a setting's difference is ``updated`` on ``path``, the file the
        settings are in (``created`` when that file was missing: ``created=True``), named in
        ``setting``; a whole file's is its own."""
        action = "created" if created else "updated"
        out = []
        for item in self._items:
            if item["path"] is not None:
                out.append(change(item["path"], item["action"] or file_action(item["before"], item["after"]),
                                  reason=item["reason"]))
            else:
                out.append(change(path, action, setting=item["name"],
                                  reason=item["reason"] or "%r -> %r" % (item["before"], item["after"])))
        return out

    def as_diff(self):
        """``{"before": {...}, "after": {...}}`` keyed by name, for structured diffs."""
        before = {}
        after = {}
        for item in self._items:
            before[item["name"]] = item["before"]
            after[item["name"]] = item["after"]
        return {"before": before, "after": after}

    def __len__(self):
        return len(self._items)
