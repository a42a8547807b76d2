# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JSON edited in place: every byte outside the members changed stays as it was.

Standard library only, no I/O, nothing about any engine (``docker_config`` holds Docker's rules).
:func:`parse` keeps where each member is in the text, refusing duplicate keys (most readers take
the last one silently) and nesting deeper than ``nesting.MAX_NESTING``; :func:`set_value` and
:func:`delete_member` change one member and keep the file's own layout (indent unit, separators,
newline) for what they add.
"""

from __future__ import annotations

import copy
import json

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import nesting
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.runtimes import ConfigError

DEFAULT_INDENT = "    "  # what nvidia-ctk and Go's json.MarshalIndent write
_WS = " \t\r\n"
MISSING = object()


class JsonEditError(ConfigError):
    """The text cannot be edited safely; the message names the file, the line and the column."""


class Member:
    """``"key": value`` in an object: where the key starts and its value node."""

    def __init__(self, key, key_start, key_end, value):
        self.key = key
        self.key_start = key_start
        self.key_end = key_end
        self.value = value


class Node:
    """A JSON value and where it is in the text; ``members`` for objects (else None)."""

    def __init__(self, start, end, value, members=None):
        self.start = start
        self.end = end
        self.value = value
        self.members = members

    def member(self, key):
        for member in self.members or ():
            if member.key == key:
                return member
        return None


def position(text, index):
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return "line %d, column %d" % (line, column)


def kind(value):
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string"


class _Parser:
    def __init__(self, text, name, reader):
        self.text = text
        self.name = name
        self.reader = reader
        self.decoder = json.JSONDecoder(object_pairs_hook=self._pairs, parse_constant=self._constant)

    def fail(self, index, what):
        raise JsonEditError("%s: %s (%s); fix the file or remove it" % (self.name, what, position(self.text, index)))

    def _pairs(self, pairs):
        seen = set()
        for key, _value in pairs:
            if key in seen:
                # Inside an array: no position of its own; the array's start is reported by the caller.
                raise _DuplicateKey(key)
            seen.add(key)
        return dict(pairs)

    @staticmethod
    def _constant(name):
        raise ValueError("%s is not JSON" % name)

    def skip(self, index):
        while index < len(self.text) and self.text[index] in _WS:
            index += 1
        return index

    def value(self, index, path):
        index = self.skip(index)
        if index >= len(self.text):
            self.fail(index, "the text ends where a value of %s should be" % (dotted(path) or "the file"))
        if self.text[index] == "{":
            return self.obj(index, path)
        try:
            value, end = self.decoder.raw_decode(self.text, index)
        except RecursionError:
            raise JsonEditError(nesting.too_deep_message(self.name)) from None
        except _DuplicateKey as exc:
            self.fail(
                index,
                "duplicate key %r in an object inside %s; %s would take the last one silently, "
                "so which one is meant is not clear" % (exc.key, dotted(path), self.reader),
            )
        except ValueError as exc:
            self.fail(index, "not valid JSON: %s" % getattr(exc, "msg", exc))
        if nesting.depth(value) + len(path) > nesting.MAX_NESTING:
            raise JsonEditError(nesting.too_deep_message(self.name))
        return Node(index, end, value)

    def obj(self, start, path):
        if len(path) >= nesting.MAX_NESTING:
            raise JsonEditError(nesting.too_deep_message(self.name))
        members = []
        value = {}
        index = self.skip(start + 1)
        if index < len(self.text) and self.text[index] == "}":
            return Node(start, index + 1, value, members)
        while True:
            if index >= len(self.text) or self.text[index] != '"':
                self.fail(index, "expected a quoted key in %s" % (dotted(path) or "the top-level object"))
            try:
                key, key_end = json.decoder.scanstring(self.text, index + 1)
            except ValueError as exc:
                self.fail(index, "not valid JSON: %s" % getattr(exc, "msg", exc))
            if key in value:
                self.fail(
                    index,
                    "duplicate key %r in %s; %s would take the last one silently, so which one "
                    "is meant is not clear" % (key, dotted(path) or "the top-level object", self.reader),
                )
            colon = self.skip(key_end)
            if colon >= len(self.text) or self.text[colon] != ":":
                self.fail(colon, "expected ':' after the key %r" % key)
            node = self.value(colon + 1, path + (key,))
            members.append(Member(key, index, key_end, node))
            value[key] = node.value
            index = self.skip(node.end)
            if index < len(self.text) and self.text[index] == ",":
                index = self.skip(index + 1)
                continue
            if index < len(self.text) and self.text[index] == "}":
                return Node(start, index + 1, value, members)
            self.fail(index, "expected ',' or '}' in %s" % (dotted(path) or "the top-level object"))


class _DuplicateKey(ValueError):
    def __init__(self, key):
        super().__init__(key)
        self.key = key


def dotted(path):
    return ".".join(path)


def parse(text, name, reader="the program that reads it", check=None):
    """The top-level :class:`Node` of ``text``; None when the text is empty or only whitespace.

    Raises JsonEditError (naming ``name``, the line and the column) for a byte order mark, text that
    is not JSON, a top-level value that is not an object, and duplicate keys; ``check(node)`` may
    refuse more. ``reader`` names who reads the file, for the messages."""
    if text is None or not text.strip(_WS):
        return None
    if text.startswith("\ufeff"):
        raise JsonEditError('%s starts with a UTF-8 byte order mark, which %s refuses ("invalid character"); remove it'
                            % (name, reader))
    parser = _Parser(text, name, reader)
    start = parser.skip(0)
    if text[start] != "{":
        node = parser.value(start, ())
        raise JsonEditError("%s: the file must hold one JSON object, it holds %s (%s); %s refuses it too"
                            % (name, kind(node.value), position(text, start), reader))
    node = parser.obj(start, ())
    rest = parser.skip(node.end)
    if rest < len(text):
        parser.fail(rest, "text after the end of the top-level object")
    if check is not None:
        check(node)
    return node


# --- layout --------------------------------------------------------------------------------------


def _line_indent(text, index):
    """The whitespace that opens the line holding ``index``."""
    start = text.rfind("\n", 0, index) + 1
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


class Layout:
    """How a file is laid out: the indent unit, the key separator, the item separator of one-line
    objects, the line ending. Detected from the text, defaults for a new file."""

    def __init__(self, text, top):
        self.unit = DEFAULT_INDENT
        self.key_sep = ": "
        self.item_sep = ", "
        self.newline = "\r\n" if "\r\n" in (text or "") else "\n"
        if top is None:
            return
        if top.members:
            between = text[top.members[0].key_end : top.members[0].value.start]
            if "\n" not in between:
                self.key_sep = between
        unit = _detect_unit(text, top)
        if unit:
            self.unit = unit
        item = _detect_item_sep(text, top)
        if item is not None:
            self.item_sep = item
        elif not self.key_sep.endswith(" "):
            self.item_sep = ","


def _objects(node):
    yield node
    for member in node.members or ():
        if member.value.members is not None:
            yield from _objects(member.value)


def _detect_unit(text, top):
    """The indent one level adds: from the first multi-line object with members, relative to its line."""
    for node in _objects(top):
        if not node.members:
            continue
        first = node.members[0]
        if "\n" not in text[node.start : first.key_start]:
            continue
        outer = _line_indent(text, node.start)
        inner = _line_indent(text, first.key_start)
        if inner.startswith(outer) and len(inner) > len(outer):
            step = inner[len(outer) :]
            if step == "\t" * len(step) or step == " " * len(step):
                return step
    return None


def _detect_item_sep(text, top):
    for node in _objects(top):
        for before, after in zip(node.members or (), (node.members or ())[1:]):
            between = text[before.value.end : after.key_start]
            if "\n" not in between:
                return between
    return None


def _multiline(text, node):
    """Whether the object ``node`` spreads over lines (its members each on a line of their own)."""
    if node.members:
        return "\n" in text[node.start : node.members[0].key_start]
    return "\n" in text[node.start : node.end]


def _render(value, layout, indent, multiline):
    """``value`` as JSON; multi-line values continue at ``indent`` plus the unit per level."""
    if not multiline:
        item = layout.item_sep if layout.item_sep.strip(" ") == "," else ", "
        return json.dumps(value, ensure_ascii=False, separators=(item, layout.key_sep))
    rendered = json.dumps(value, ensure_ascii=False, indent=layout.unit, separators=(",", layout.key_sep))
    return rendered.replace("\n", layout.newline + indent)


def render_new(data, layout=None):
    """A whole new file holding ``data``."""
    layout = layout or Layout("", None)
    return _render(data, layout, "", True) + layout.newline


# --- edits on the text ----------------------------------------------------------------------------


def _find(top, path):
    """The node at ``path`` (a tuple of keys), or None."""
    node = top
    for key in path:
        if node is None or node.members is None:
            return None
        member = node.member(key)
        node = member.value if member else None
    return node


def _member_of(top, path):
    parent = _find(top, path[:-1])
    if parent is None or parent.members is None:
        return None, None
    return parent, parent.member(path[-1])


def set_value(text, path, value, name):
    """``text`` with the member at ``path`` set to ``value``: replaced where it is, or added after the
    last member of its object (missing objects on the way are added with it)."""
    top = parse(text, name)
    layout = Layout(text, top)
    if top is None:
        data = {}
        put(data, path, value)
        return render_new(data, layout)
    node, depth = top, 0
    while depth < len(path) - 1:
        member = node.member(path[depth])
        if member is None:
            break
        if member.value.members is None:
            raise JsonEditError(
                "%s: %s is %s, not an object; fix it by hand, the file was left as it was" % (name, dotted(path[: depth + 1]), kind(member.value.value))
            )
        node, depth = member.value, depth + 1
    existing = node.member(path[depth])
    if existing is not None and depth == len(path) - 1:
        indent = _line_indent(text, existing.key_start)
        rendered = _render(value, layout, indent, _multiline(text, node))
        return text[: existing.value.start] + rendered + text[existing.value.end :]
    # Add path[depth] to node, holding the rest of the path.
    nested = value
    for key in reversed(path[depth + 1 :]):
        nested = {key: nested}
    return _insert(text, node, path[depth], nested, layout, top)


def _insert(text, parent, key, value, layout, top):
    key_text = json.dumps(key, ensure_ascii=False)
    if parent.members:
        last = parent.members[-1]
        if _multiline(text, parent):
            indent = _line_indent(text, last.key_start)
            member = key_text + layout.key_sep + _render(value, layout, indent, True)
            return text[: last.value.end] + "," + layout.newline + indent + member + text[last.value.end :]
        member = key_text + layout.key_sep + _render(value, layout, "", False)
        return text[: last.value.end] + layout.item_sep + member + text[last.value.end :]
    # An empty object: multi-line when it is the top-level object or sits in a multi-line one.
    owner = _owner(top, parent)
    if parent is top or owner is None or _multiline(text, owner):
        outer = _line_indent(text, parent.start)
        indent = outer + layout.unit
        member = key_text + layout.key_sep + _render(value, layout, indent, True)
        inner = layout.newline + indent + member + layout.newline + outer
    else:
        inner = key_text + layout.key_sep + _render(value, layout, "", False)
    return text[: parent.start + 1] + inner + text[parent.end - 1 :]


def _owner(top, node):
    for candidate in _objects(top):
        for member in candidate.members or ():
            if member.value is node:
                return candidate
    return None


def delete_member(text, path, name):
    """``text`` without the member at ``path`` (unchanged when it is not there)."""
    top = parse(text, name)
    if top is None:
        return text
    parent, member = _member_of(top, path)
    if member is None:
        return text
    index = parent.members.index(member)
    if len(parent.members) == 1:
        return text[: parent.start + 1] + "}" + text[parent.end :]
    if index + 1 < len(parent.members):
        following = parent.members[index + 1]
        return text[: member.key_start] + text[following.key_start :]
    previous = parent.members[index - 1]
    return text[: previous.value.end] + text[member.value.end :]


def get(data, path):
    node = data
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return MISSING
        node = node[key]
    return node


def put(data, path, value):
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = copy.deepcopy(value)


def drop(data, path):
    node = get(data, path[:-1])
    if isinstance(node, dict):
        node.pop(path[-1], None)
