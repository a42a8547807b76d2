# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How deep a parsed document nests, without recursion: one bound for every file read from a node.

Python's TOML and JSON parsers, and the code that walks what they give, recurse: a file nested a
few thousand levels deep (which no engine writes, but a broken or hostile node can hold) ends in
``maximum recursion depth exceeded`` with no file named. The parsers check :data:`MAX_NESTING`
and refuse such a file naming it.
"""

from __future__ import annotations

# Real containerd, Docker and CRI-O configs nest fewer than 10 levels (tables, arrays and inline
# tables counted alike).
MAX_NESTING = 64


def depth(value):
    """The number of nested dicts and lists in ``value`` at its deepest (0 for a scalar)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level <= MAX_NESTING:
            stack.extend((child, level + 1) for child in children)
    return deepest


def too_deep_message(name):
    return ("%s nests tables, arrays or objects more than %d levels deep, which no container engine's config "
            "does: fix or remove it" % (name, MAX_NESTING))
