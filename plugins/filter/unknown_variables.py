# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``unknown_variables`` filter: a role's variables that are set but that the role does not
know, each with the closest known name; a misspelled setting fails the run instead of being ignored."""

from __future__ import annotations

import difflib
import re

from ansible.errors import AnsibleFilterError


def unknown_variables(names, known, allowed=()):
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
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        found.append("%s%s" % (name, " (did you mean %s?)" % close[0] if close else ""))
    return found


class FilterModule:
    def filters(self):
        return {"unknown_variables": unknown_variables}
