# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Collect what differs where the decision is made, report it once (before/after and reasons)."""

from __future__ import annotations


class DifferenceTracker:
    """Records (name, before, after) triples; ``changed`` once any differ."""

    def __init__(self):
        self._items = []

    def add(self, name, before=None, after=None, reason=None):
        """Record a difference when ``before`` and ``after`` differ; return whether it did."""
        if before == after:
            return False
        self._items.append({"name": name, "before": before, "after": after, "reason": reason})
        return True

    @property
    def changed(self):
        return bool(self._items)

    def reasons(self):
        """One human-readable line per difference, e.g. "runtime nvidia: missing"."""
        lines = []
        for item in self._items:
            if item["reason"]:
                lines.append("%s: %s" % (item["name"], item["reason"]))
            else:
                lines.append("%s: %r -> %r" % (item["name"], item["before"], item["after"]))
        return lines

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
