# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tiny, deterministic YAML emitter for the subset CDI specs use. Standard library only.

Handles dicts (keys in insertion order), lists, strings, ints, bools and None, in block style.
A string is written plain only when every YAML 1.1 and 1.2 loader reads it back as the same
string; otherwise it is double-quoted with escapes, so ``"0"``, ``"yes"``, ``"1e3"`` and
``"a: b"`` stay strings.
"""

from __future__ import annotations

import functools
import re

# Plain scalars we allow: a conservative character set; a leading '-' only as in options
# (``--link``), never '---' or '...'; no ': ' or ' #'.
_PLAIN_RE = re.compile(r"(?:[A-Za-z0-9_/]|-{1,2}[A-Za-z0-9]|\.[A-Za-z0-9_/])[A-Za-z0-9_/.:=,+@-]*")
# Anything a YAML 1.1 or 1.2 resolver could take for a non-string.
_SPECIAL_RE = re.compile(
    r"""^(?:
        [-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?   # ints, floats, 1_000, 1e3
      | [-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?                  # .5
      | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?    # sexagesimal 1:20
      | 0[xXoObB][0-9a-fA-F_]+                              # 0x1f, 0o17, 0b101
      | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
      | y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
      | null|Null|NULL|~
      | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt\ ].*)?         # timestamps
      | = | <<
    )$""",
    re.X,
)
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def _printable(code):
    """YAML's printable set, minus the characters we prefer escaped."""
    return 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or code >= 0x10000


def quote(text):
    """``text`` as a double-quoted YAML scalar."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif _printable(code) and code not in (0x2028, 0x2029, 0xFEFF):
            out.append(char)
        elif code <= 0xFF:
            out.append("\\x%02x" % code)
        else:  # the rest of the BMP: everything above it is printable
            out.append("\\u%04x" % code)
    out.append('"')
    return "".join(out)


def scalar(value):
    """One scalar as YAML text."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    raise TypeError("cannot emit %s as YAML: %r" % (type(value).__name__, value))


@functools.lru_cache(maxsize=8192)
def _string(value):
    if _PLAIN_RE.fullmatch(value) and not _SPECIAL_RE.fullmatch(value) and not value.endswith(":"):
        return value
    return quote(value)


def _emit(value, indent, lines):
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError("YAML keys must be strings here: %r" % (key,))
            if isinstance(item, (dict, list)) and item:
                lines.append("%s%s:" % (pad, scalar(key)))
                # Sequences sit at their key's indentation, mappings one level in.
                _emit(item, indent if isinstance(item, list) else indent + 2, lines)
            else:
                lines.append("%s%s: %s" % (pad, scalar(key), _inline(item)))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                sub = []
                _emit(item, indent + 2, sub)
                # The first line of the nested block goes on the dash's line.
                sub[0] = pad + "- " + sub[0][indent + 2:]
                lines.extend(sub)
            else:
                lines.append("%s- %s" % (pad, _inline(item)))
    else:
        lines.append(pad + scalar(value))


def _inline(value):
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return scalar(value)


def dump(value):
    """``value`` (a dict, list or scalar) as a YAML document ending in a newline."""
    if isinstance(value, (dict, list)) and not value:
        return _inline(value) + "\n"
    lines = []
    _emit(value, 0, lines)
    return "\n".join(lines) + "\n"
