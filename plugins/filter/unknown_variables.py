# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``unknown_variables`` filter: a role's variables that are set but that the role does not
know, each with the closest known name; a misspelled setting fails the run instead of being ignored."""

from __future__ import annotations

import difflib
import re

from ansible.errors import AnsibleFilterError

# Two edits (a transposition counts as one) cover the typos people make; a name further from every
# known one is taken as another role's (docker_service_state is geerlingguy.docker's, not a typo of
# docker_service).
TYPO_DISTANCE = 2


def edit_distance(first, second):
    """Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps."""
    previous2, previous = None, list(range(len(second) + 1))
    for i, a in enumerate(first, 1):
        current = [i] + [0] * len(second)
        for j, b in enumerate(second, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            if previous2 is not None and i > 1 and j > 1 and a == second[j - 2] and first[i - 2] == b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def unknown_variables(names, known, allowed=(), typos_only=False):
    if isinstance(names, str) or isinstance(known, str) or isinstance(allowed, str):
        raise AnsibleFilterError("unknown_variables takes lists of names (input, known, allowed)")
    try:
        patterns = [re.compile(entry) for entry in allowed or ()]
    except re.error as exc:
        raise AnsibleFilterError("an entry of the allowed variables is not a regular expression: %s" % exc) from None
    known = sorted(set(known))
    found = []
    for name in sorted(set(names)):
        if name in known or any(pattern.fullmatch(name) for pattern in patterns):
            continue
        if typos_only:
            nearest = min(known, key=lambda candidate: (edit_distance(name, candidate), candidate), default=None)
            if nearest is not None and edit_distance(name, nearest) <= TYPO_DISTANCE:
                found.append("%s (did you mean %s?)" % (name, nearest))
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        found.append("%s%s" % (name, " (did you mean %s?)" % close[0] if close else ""))
    return found


class FilterModule:
    def filters(self):
        return {"unknown_variables": unknown_variables}
