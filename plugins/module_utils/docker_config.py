# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Docker's ``daemon.json`` becomes: parse it keeping the user's bytes, decide, render.

Standard library only, no I/O; the ``docker_runtime`` action plugin reads the files from the node,
calls :func:`plan` and writes what it returns.

The file is edited in place: every key, value, space and line break outside the edited members is
kept byte for byte. A member is added after the last member of its object, indented like its
siblings (two or four spaces, tabs, or on one line for a one-line object); a value is replaced where
it is. After every edit the new text is parsed again and must mean exactly what was asked.

JSON has no comments, and dockerd refuses a ``daemon.json`` with a top-level key it does not know
("the following directives don't match any configuration option"), so what ``state: absent`` needs
is kept in a journal file next to ``daemon.json``
(:func:`journal_path`): the file's bytes before the first edit (or that it did not exist, and the
directories writing it created), the SHA-256 of the text this module wrote, and each member it set
with the value it had before. While ``daemon.json`` still holds exactly the text written, absent
gives back the original bytes; when someone changed it since, absent undoes only this module's
members that still hold the values it set, and keeps everything else.

Facts checked against Debian's dockerd 20.10.24 (``tests/integration/test_docker_runtime.py``):
an empty file is refused (``EOF``), as are a byte order mark, a ``runtimes`` that is not an object,
a ``features`` value that is not a boolean, a runtime named ``runc`` ("runtime name 'runc' is
reserved") and a ``default-runtime`` naming a runtime that does not exist. Unknown ``features`` keys
(so ``features.cdi``, which Docker reads from 25.0 on) and unknown keys of a runtime are accepted
and ignored; dockerd reads a runtime's arguments from ``runtimeArgs`` and ignores ``args``, which
NVIDIA's ``nvidia-ctk runtime configure`` writes (as an empty list, as this module does). Duplicate
keys are accepted, the last one winning.
"""

from __future__ import annotations

import copy
import hashlib
import json
import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import nesting, ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import DifferenceTracker
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import (
    node_argument_spec,
    normalize_host_path,
)

DEFAULT_PATH = "/etc/docker/daemon.json"
DEFAULT_INSTALL_DIR = cc.DEFAULT_INSTALL_DIR
DEFAULT_INDENT = "    "  # what nvidia-ctk and Go's json.MarshalIndent write
# dockerd registers these itself and refuses a runtime of daemon.json named "runc" (20.10 and later).
RESERVED_RUNTIME_NAMES = ("runc",)
BUILTIN_RUNTIMES = ("runc", "io.containerd.runc.v2", "io.containerd.runtime.v1.linux")
TAG = "gpu_node.container_toolkit"
JOURNAL_FORMAT = 1
JOURNAL_SUFFIX = ".gpu_node.container_toolkit.json"
_WS = " \t\r\n"
_MISSING = object()


class ConfigError(ValueError):
    """The file cannot be edited safely; the message names the file and what to do."""


def argument_spec():
    """The ``docker_runtime`` options, used by the action plugin and by the module's ``main()``."""
    return dict(
        node_argument_spec(read_ahead=True),
        path={"type": "str", "default": DEFAULT_PATH},
        install_dir={"type": "path", "default": DEFAULT_INSTALL_DIR},
        runtimes={
            "type": "list",
            "elements": "dict",
            "options": {"name": {"type": "str", "required": True}, "binary": {"type": "str", "required": True}},
        },
        set_as_default={"type": "bool", "default": False},
        enable_cdi={"type": "bool"},
        state={"type": "str", "default": "present", "choices": ["present", "absent"]},
        backup={"type": "bool", "default": False},
        remove_backups={"type": "bool", "default": False},
    )


def journal_path(path):
    """Host path of the journal kept for the ``daemon.json`` at host path ``path``: a hidden file in
    the same directory, so the two share a filesystem (on COS ``/etc`` is a tmpfs: both go at reboot)."""
    path = normalize_host_path(path)
    return posixpath.join(posixpath.dirname(path), "." + posixpath.basename(path) + JOURNAL_SUFFIX)


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def backup_pattern(path):
    """A regular expression matching the names of the timestamped copies ``backup`` makes of the
    file at host path ``path`` and of its journal (``<name>.<pid>.<YYYY-MM-DD@HH:MM:SS>~``)."""
    return ownership.backup_pattern(normalize_host_path(path), journal_path(path))


def own_backups(path, backups, original):
    """Which of ``backups`` (host path -> text, or None when unreadable) this module made, and the
    directories it created for the file, to remove when empty (deepest first).

    Every copy of the journal is this module's (no one else writes that file). A copy of the file
    is when it holds ``original`` (the text given back, or None when there is none: the first edit's
    copy) or a text that a journal copy records as written (each later edit's copy)."""
    journal_name = posixpath.basename(journal_path(path))
    written, dirs, ours = set(), set(), []
    for backup, text in backups.items():
        if posixpath.basename(backup).startswith(journal_name + ".") and text is not None:
            ours.append(backup)
            try:
                journal = json.loads(text)
            except ValueError:
                continue
            if isinstance(journal, dict):
                written.add(journal.get("written_sha256"))
                dirs.update(_recorded_dirs(journal) or [])
    for backup, text in backups.items():
        if backup in ours or text is None:
            continue
        if text == original or sha256(text) in written:
            ours.append(backup)
    return sorted(ours), sorted(dirs)


def normalize_runtimes(runtimes, install_dir):
    """The ``runtimes`` option checked (as containerd_runtime's; empty -> nvidia, nvidia-cdi, nvidia-legacy)."""
    try:
        result = cc.normalize_runtimes(runtimes, install_dir or DEFAULT_INSTALL_DIR)
    except cc.ConfigError as exc:
        raise ConfigError(str(exc)) from None
    for entry in result:
        if entry["name"] in RESERVED_RUNTIME_NAMES:
            raise ConfigError(
                'runtimes: the name %r is reserved by dockerd (it refuses to start with "runtime name '
                "'%s' is reserved\"); choose another name" % (entry["name"], entry["name"])
            )
    return result


# --- parsing with positions ------------------------------------------------------------------


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


def _position(text, index):
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return "line %d, column %d" % (line, column)


def _kind(value):
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
    def __init__(self, text, name):
        self.text = text
        self.name = name
        self.decoder = json.JSONDecoder(object_pairs_hook=self._pairs, parse_constant=self._constant)

    def fail(self, index, what):
        raise ConfigError("%s: %s (%s); fix the file or remove it" % (self.name, what, _position(self.text, index)))

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
            self.fail(index, "the text ends where a value of %s should be" % (_dotted(path) or "the file"))
        if self.text[index] == "{":
            return self.obj(index, path)
        try:
            value, end = self.decoder.raw_decode(self.text, index)
        except RecursionError:
            raise ConfigError(nesting.too_deep_message(self.name)) from None
        except _DuplicateKey as exc:
            self.fail(
                index,
                "duplicate key %r in an object inside %s; dockerd would take the last one silently, "
                "so which one is meant is not clear" % (exc.key, _dotted(path)),
            )
        except ValueError as exc:
            self.fail(index, "not valid JSON: %s" % getattr(exc, "msg", exc))
        if nesting.depth(value) + len(path) > nesting.MAX_NESTING:
            raise ConfigError(nesting.too_deep_message(self.name))
        return Node(index, end, value)

    def obj(self, start, path):
        if len(path) >= nesting.MAX_NESTING:
            raise ConfigError(nesting.too_deep_message(self.name))
        members = []
        value = {}
        index = self.skip(start + 1)
        if index < len(self.text) and self.text[index] == "}":
            return Node(start, index + 1, value, members)
        while True:
            if index >= len(self.text) or self.text[index] != '"':
                self.fail(index, "expected a quoted key in %s" % (_dotted(path) or "the top-level object"))
            try:
                key, key_end = json.decoder.scanstring(self.text, index + 1)
            except ValueError as exc:
                self.fail(index, "not valid JSON: %s" % getattr(exc, "msg", exc))
            if key in value:
                self.fail(
                    index,
                    "duplicate key %r in %s; dockerd would take the last one silently, so which one "
                    "is meant is not clear" % (key, _dotted(path) or "the top-level object"),
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
            self.fail(index, "expected ',' or '}' in %s" % (_dotted(path) or "the top-level object"))


class _DuplicateKey(ValueError):
    def __init__(self, key):
        super().__init__(key)
        self.key = key


def _dotted(path):
    return ".".join(path)


def parse(text, name="daemon.json"):
    """The top-level :class:`Node` of ``text``; None when the text is empty or only whitespace.

    Raises ConfigError (naming ``name``, the line and the column) for a byte order mark, text that is
    not JSON, a top-level value that is not an object, duplicate keys, and the keys this module
    edits holding the wrong type (:func:`check_types`)."""
    if text is None or not text.strip(_WS):
        return None
    if text.startswith("\ufeff"):
        raise ConfigError('%s starts with a UTF-8 byte order mark, which dockerd refuses ("invalid character"); remove it' % name)
    parser = _Parser(text, name)
    start = parser.skip(0)
    if text[start] != "{":
        node = parser.value(start, ())
        raise ConfigError(
            "%s: the file must hold one JSON object, it holds %s (%s); dockerd refuses it too" % (name, _kind(node.value), _position(text, start))
        )
    node = parser.obj(start, ())
    rest = parser.skip(node.end)
    if rest < len(text):
        parser.fail(rest, "text after the end of the top-level object")
    check_types(node, name, text)
    return node


def check_types(node, name, text=""):
    """Refuse ``runtimes``, its entries, ``features`` and ``default-runtime`` of a type dockerd refuses
    (it would not start): the error names the key and its line."""

    def wrong(member, key, wanted):
        raise ConfigError(
            "%s: %s must be %s, it is %s (%s); dockerd would not start with it. Fix it by hand, "
            "the file was left as it was" % (name, key, wanted, _kind(member.value.value), _position(text, member.key_start))
        )

    runtimes = node.member("runtimes")
    if runtimes is not None:
        if runtimes.value.members is None:
            wrong(runtimes, "runtimes", 'an object (runtime name -> {"path": ...})')
        for entry in runtimes.value.members:
            if entry.value.members is None:
                wrong(entry, "runtimes.%s" % entry.key, 'an object with a "path"')
            path = entry.value.member("path")
            if path is not None and not isinstance(path.value.value, str):
                wrong(path, "runtimes.%s.path" % entry.key, "a string")
    features = node.member("features")
    if features is not None:
        if features.value.members is None:
            wrong(features, "features", "an object of booleans")
        for entry in features.value.members:
            if not isinstance(entry.value.value, bool):
                wrong(entry, "features.%s" % entry.key, "a boolean")
    default = node.member("default-runtime")
    if default is not None and not isinstance(default.value.value, str):
        wrong(default, "default-runtime", "a string")


def load(text, name="daemon.json"):
    """The data of ``text`` as :func:`parse` checks it; ``{}`` for empty text."""
    node = parse(text, name)
    return {} if node is None else node.value


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


def set_value(text, path, value, name="daemon.json"):
    """``text`` with the member at ``path`` set to ``value``: replaced where it is, or added after the
    last member of its object (missing objects on the way are added with it)."""
    top = parse(text, name)
    layout = Layout(text, top)
    if top is None:
        data = {}
        _put(data, path, value)
        return render_new(data, layout)
    node, depth = top, 0
    while depth < len(path) - 1:
        member = node.member(path[depth])
        if member is None:
            break
        if member.value.members is None:
            raise ConfigError(
                "%s: %s is %s, not an object; fix it by hand, the file was left as it was" % (name, _dotted(path[: depth + 1]), _kind(member.value.value))
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


def delete_member(text, path, name="daemon.json"):
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


def _get(data, path):
    node = data
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _put(data, path, value):
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = copy.deepcopy(value)


def _drop(data, path):
    node = _get(data, path[:-1])
    if isinstance(node, dict):
        node.pop(path[-1], None)


# --- the journal ---------------------------------------------------------------------------------


def load_journal(text, name):
    """The journal kept in ``text`` (None when there is none). Raises ConfigError when it is damaged."""
    if text is None or not text.strip():
        return None
    try:
        journal = json.loads(text)
    except ValueError:
        journal = None
    ok = (
        isinstance(journal, dict)
        and journal.get("format") == JOURNAL_FORMAT
        and isinstance(journal.get("edits"), list)
        and (journal.get("original") is None or isinstance(journal.get("original"), str))
        and _recorded_dirs(journal) is not None
        and all(isinstance(e, dict) and isinstance(e.get("key"), list) and e["key"] for e in journal["edits"])
    )
    if not ok:
        raise ConfigError(
            "%s is not a journal this module wrote (format %d), or it is damaged; remove it to let "
            "the module start afresh (state=absent then cannot give the original back)" % (name, JOURNAL_FORMAT)
        )
    return journal


def _recorded_dirs(journal):
    try:
        return ownership.dirs_in_document(journal)
    except ValueError:
        return None


def render_journal(path, original, created_dirs, written, edits):
    journal = {
        "format": JOURNAL_FORMAT,
        "about": "%s docker_runtime: what state=absent needs to give %s back. Do not edit; remove it only "
        "together with the module's entries in that file" % (TAG, path),
        "path": path,
        "original": original,
        ownership.KEY: ownership.outermost_first(created_dirs),
        "written_sha256": sha256(written),
        "edits": edits,
    }
    return json.dumps(journal, indent=2, ensure_ascii=False) + "\n"


def _edit_record(edits, key):
    for edit in edits:
        if edit["key"] == list(key):
            return edit
    return None


def _still_ours(data, edit):
    """Whether the member an edit set still holds what it set."""
    now = _get(data, tuple(edit["key"]))
    if edit.get("container"):
        return isinstance(now, dict)
    return "after" in edit and now == edit["after"]


def undo_edits(text, edits, name, tracker=None, warnings=None):
    """Key by key: each member of ``edits`` that still holds what the module set gets its earlier value
    back (or goes, when it had none); objects the module created go when they are empty. Returns
    the new text."""
    for edit in reversed(edits):
        key = tuple(edit["key"])
        data = load(text, name)
        if edit.get("container"):
            continue
        if not _still_ours(data, edit):
            if warnings is not None and _get(data, key) is not _MISSING:
                warnings.append("%s: %s was changed since this module set it; kept as it is now" % (name, _dotted(key)))
            continue
        before = edit.get("before", _MISSING)
        if before is _MISSING:
            text = delete_member(text, key, name)
        else:
            text = set_value(text, key, before, name)
        if tracker is not None:
            tracker.add(_label(key), _shown(edit["after"]), _shown(before), reason=_undo_reason(key, edit, before))
    for edit in reversed(edits):
        if edit.get("container"):
            key = tuple(edit["key"])
            if _get(load(text, name), key) == {}:
                text = delete_member(text, key, name)
    return text


def _label(key):
    if len(key) >= 2 and key[0] == "runtimes":
        return "runtime %s%s" % (key[1], "" if len(key) == 2 else " " + _dotted(key[2:]))
    return _dotted(key)


def _undo_reason(key, edit, before):
    if before is _MISSING and len(key) == 2 and key[0] == "runtimes":
        return "added by this module (removed)"
    return "%s -> %s (restored)" % (_shown(edit.get("after")), _shown(before))


def _shown(value):
    if value is _MISSING:
        return "unset"
    return json.dumps(value, ensure_ascii=False)


# --- the decision ---------------------------------------------------------------------------------


def plan(text, params, journal_text=None, name=DEFAULT_PATH, journal_name=None):
    """Plan the edit of a ``daemon.json``. Pure: texts in, texts out.

    ``text``: the file (None when it is missing). ``journal_text``: the journal's (None when missing).
    ``params``: ``state``, ``runtimes`` (:func:`normalize_runtimes`), ``set_as_default``,
    ``enable_cdi`` (None: leave alone), ``created_dirs`` (present: the directories writing a missing
    file creates), ``path`` (the host path recorded in the journal; default ``name``).

    Returns a dict: ``text`` (the new file; None when it is missing and stays so, or is to be
    removed), ``journal_text`` (the journal after this run; None: there is none, or it is to be
    removed), ``changes``, ``warnings``, ``remove_dirs`` (absent: ``(host path, directories)`` when
    the removed file's journal records the directories its write created), ``restart_required``. Raises
    ConfigError naming the file when it cannot be edited safely; nothing is to be written then.
    """
    journal_name = journal_name or journal_path(params.get("path") or name)
    state = params.get("state", "present")
    top = parse(text, name)  # refuses what cannot be edited, before anything else
    data = {} if top is None else top.value
    journal = load_journal(journal_text, journal_name)
    tracker = DifferenceTracker()
    warnings = []
    in_sync = journal is not None and text is not None and journal.get("written_sha256") == sha256(text)
    if state == "absent":
        new_text, new_journal, remove_dirs = _plan_absent(text, data, params, journal, in_sync, name, journal_name, tracker, warnings)
    else:
        new_text, new_journal = _plan_present(text, data, params, journal, in_sync, name, tracker)
        new_journal = journal_text if new_journal is _MISSING else new_journal
        remove_dirs = []
    changes = tracker.reasons()
    if new_journal is None and journal_text is not None:
        changes.append("journal %s: %s" % (journal_name, "removed" if tracker.changed else "stale, removed"))
    after = load(new_text, name) if new_text is not None else None
    return {
        "text": new_text,
        "journal_text": new_journal,
        "changes": changes,
        "warnings": warnings,
        "remove_dirs": [(params.get("path") or name, remove_dirs)] if remove_dirs else [],
        "restart_required": new_text != text and (data if text is not None else None) != after,
    }


def _base(text, data, params, journal, in_sync, name):
    """(original, created_dirs, edits): what absent is to give back, and the members this module set."""
    if journal is not None and in_sync:
        return journal.get("original"), _recorded_dirs(journal), copy.deepcopy(journal["edits"])
    if journal is not None and text is not None:
        # Changed since this module wrote it: the records of what is still ours stay; the file without
        # them is the new original.
        edits = [copy.deepcopy(e) for e in journal["edits"] if _still_ours(data, e)]
        base = undo_edits(text, edits, name)
        if journal.get("original") is None and load(base, name) == {}:
            return None, _recorded_dirs(journal), edits
        return base, [], edits
    return text, (list(params.get("created_dirs") or []) if text is None else []), []


def _plan_present(text, data, params, journal, in_sync, name, tracker):
    """(new text, new journal text, or _MISSING for the journal as it is)."""
    runtimes = params["runtimes"]
    original, created_dirs, edits = _base(text, data, params, journal, in_sync, name)
    state = {"text": "" if text is None else text, "expected": copy.deepcopy(data)}

    def current():
        return load(state["text"], name)

    def record(key, before, after, reason):
        existing = _edit_record(edits, key)
        if existing is None:
            entry = {"key": list(key)}
            if before is not _MISSING:
                entry["before"] = copy.deepcopy(before)
            entry["after"] = copy.deepcopy(after)
            edits.append(entry)
        elif "before" not in existing and before is not _MISSING and existing.get("after") != before:
            # Recorded as missing, but the file holds someone else's value now: that is what goes back.
            existing["before"] = copy.deepcopy(before)
            existing["after"] = copy.deepcopy(after)
        else:
            existing["after"] = copy.deepcopy(after)
        tracker.add(_label(key), _shown(before), _shown(after), reason=reason)

    def apply(key, value, reason):
        before = _get(current(), key)
        if before == value:
            return
        if len(key) > 1 and _get(current(), key[:1]) is _MISSING and _edit_record(edits, key[:1]) is None:
            edits.append({"key": [key[0]], "container": True})
        state["text"] = set_value(state["text"], key, value, name)
        _put(state["expected"], key, value)
        record(key, before, value, reason % {"before": _shown(before), "after": _shown(value)})

    for entry in runtimes:
        key = ("runtimes", entry["name"])
        existing = _get(current(), key)
        if existing is _MISSING:
            apply(key, {"path": entry["binary"], "args": []}, "missing (added, path %s)" % entry["binary"])
        elif existing.get("path") != entry["binary"]:
            apply(key + ("path",), entry["binary"], "%(before)s -> %(after)s")
    if params.get("set_as_default"):
        apply(("default-runtime",), runtimes[0]["name"], "%(before)s -> %(after)s")
    else:
        ours = _edit_record(edits, ("default-runtime",))
        if ours is not None and _still_ours(current(), ours):
            before = ours.get("before", _MISSING)
            after = _get(current(), ("default-runtime",))
            if before is _MISSING:
                state["text"] = delete_member(state["text"], ("default-runtime",), name)
                _drop(state["expected"], ("default-runtime",))
            else:
                state["text"] = set_value(state["text"], ("default-runtime",), before, name)
                _put(state["expected"], ("default-runtime",), before)
            edits.remove(ours)
            tracker.add(
                "default-runtime", _shown(after), _shown(before), reason="%s -> %s (restored: set_as_default is false)" % (_shown(after), _shown(before))
            )
    if params.get("enable_cdi") is not None:
        apply(("features", "cdi"), bool(params["enable_cdi"]), "%(before)s -> %(after)s")
    if not tracker.changed:
        return text, _MISSING
    if current() != state["expected"]:
        raise ConfigError("%s: the edited text would not mean what was asked (a bug in this module); nothing was written" % name)
    return state["text"], render_journal(params.get("path") or name, original, created_dirs, state["text"], edits)


def _plan_absent(text, data, params, journal, in_sync, name, journal_name, tracker, warnings):
    """(new text, new journal text, directories to remove when empty)."""
    if journal is None:
        for entry in params["runtimes"]:
            if entry["name"] in (data.get("runtimes") or {}):
                warnings.append(
                    "%s: runtime %s was not added by this module (there is no journal %s); it was left as it is" % (name, entry["name"], journal_name)
                )
        return text, None, []
    if text is None:
        return None, None, []
    if in_sync:
        for edit in reversed(journal["edits"]):
            if not edit.get("container"):
                before = edit.get("before", _MISSING)
                key = tuple(edit["key"])
                tracker.add(_label(key), _shown(edit.get("after")), _shown(before), reason=_undo_reason(key, edit, before))
        if journal.get("original") is None:
            tracker.add("file %s" % name, "created by this module", None, reason="created by this module (removed)")
            return None, None, _recorded_dirs(journal)
        return journal["original"], None, []
    new_text = undo_edits(text, journal["edits"], name, tracker, warnings)
    after = load(new_text, name)
    default = after.get("default-runtime")
    if isinstance(default, str) and default not in BUILTIN_RUNTIMES and default not in (after.get("runtimes") or {}):
        raise ConfigError(
            "%s: default-runtime is %r, a runtime that state=absent removes, so dockerd would not start "
            "(\"specified default runtime '%s' does not exist\"); set default-runtime to another runtime "
            "first" % (name, default, default)
        )
    if journal.get("original") is None and after == {}:
        tracker.add("file %s" % name, "created by this module", None, reason="created by this module (removed)")
        return None, None, _recorded_dirs(journal)
    return new_text, None, []
