# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The journal this collection leaves in the files it edits, and how to give the original back.

Standard library only, no I/O: the controller undoes edits with it (``plugin_utils.toml_edit``
checks the result parses), and so can a node (``persist_files`` keeps the config provisioning
started from on COS without reading it before the edit).

A replaced line carries its original text in a trailing comment (``# gpu_node.container_toolkit:
was "<json>"``), an inserted line carries ``# gpu_node.container_toolkit: added``, and inserted
groups of lines sit between a ``begin`` and an ``end`` comment line. A file this collection
created from nothing opens with the ``created`` line of ``ownership``.
"""

from __future__ import annotations

import hashlib
import json
import re

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.ownership import CREATED_RE, TAG

ADDED = "# %s: added" % TAG
WAS = "# %s: was " % TAG
BEGIN = "# %s: begin (state=absent removes the lines up to the end marker)" % TAG
END = "# %s: end" % TAG
# A mark may end in "(wrote <digest>)": the line as this collection wrote it, so that state=absent
# gives back only a line that is still so (marks written before this carry none, and are trusted).
MARK_RE = re.compile(r"[ \t]*# " + re.escape(TAG) + r": (added|was (\".*\"))(?: \(wrote ([0-9a-f]{8})\))?[ \t]*$")


class JournalError(ValueError):
    """The journal in a file is damaged; the message names the file and the line."""


def digest(body):
    """The short digest a mark records of the line body it was written on (trailing blanks aside)."""
    return hashlib.sha256(body.rstrip(" \t").encode("utf-8", "surrogateescape")).hexdigest()[:8]


def added_mark(body):
    """``body`` marked as a line this collection inserted."""
    return "%s  %s (wrote %s)" % (body, ADDED, digest(body))


def was_mark(body, original_json):
    """``body`` marked as a line this collection wrote in place of the line ``original_json`` held."""
    return "%s  %s%s (wrote %s)" % (body, WAS, original_json, digest(body))


def changed_by_hand(body, match):
    """Whether the marked line ``body`` (``match``: :data:`MARK_RE` on it) is no longer as written."""
    return match.group(3) is not None and digest(body[:match.start()]) != match.group(3)


def has_journal(text):
    """Whether ``text`` holds any journal entry (a file this collection edited)."""
    return TAG + ":" in (text or "")


def undo_lines(lines, name, kept=None):
    """The text ``lines`` (each with its line ending) had before the journaled edits.

    A marked line changed by hand since it was written stays as it is now, its mark dropped; its
    1-based number and text go to ``kept`` (a list) when given."""
    out = []
    index = 0
    strip_newline_before = False
    while index < len(lines):
        line = lines[index]
        body = line.rstrip("\r\n")
        if body.strip() == BEGIN:
            close = index
            while close < len(lines) and lines[close].strip() != END:
                close += 1
            if close >= len(lines):
                raise JournalError("%s, line %d: the block started by %r has no end marker %r; remove the "
                                   "block by hand" % (name, index + 1, BEGIN, END))
            if not lines[close].endswith("\n") and out:
                strip_newline_before = True
            index = close + 1
            continue
        match = MARK_RE.search(body)
        if match and changed_by_hand(body, match):
            out.append(body[:match.start()] + line[len(body):])
            if kept is not None:
                kept.append((index + 1, body[:match.start()].strip()))
        elif (match and match.group(1) == "added") or CREATED_RE.match(body):
            if not line.endswith("\n") and out:
                strip_newline_before = True
        elif match:
            out.append(json.loads(match.group(2)) + line[len(body):])
        else:
            out.append(line)
        index += 1
    if strip_newline_before and out:
        out[-1] = out[-1].rstrip("\r\n")
    return "".join(out)


def undo_text(text, name, kept=None):
    """:func:`undo_lines` for a whole text."""
    return undo_lines((text or "").splitlines(True), name, kept)
