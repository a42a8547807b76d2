# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit TOML files line by line, keeping every byte this code was not asked to change (controller side).

A file is read twice: by a real TOML parser (the standard library's ``tomllib``, else tomlkit's
public ``parse``), which says what the file means, and by a small scanner, which says on which
lines each table header and key sits. An edit replaces or inserts whole lines; after every edit
the new text is parsed again and must mean exactly what was asked, else the edit is refused
with :class:`TomlEditError` and the file is left as it was. Nothing here depends on the layout
a TOML library renders, so split tables, dotted keys and odd indentation are handled alike.

Edits made with a journal can be undone byte for byte: a replaced line carries its original
text in a trailing comment (``# gpu_node.container_toolkit: was "<json>"``), an inserted line
carries ``# gpu_node.container_toolkit: added``, and inserted groups of lines sit between a
``begin`` and an ``end`` comment line.
"""

from __future__ import annotations

import copy
import datetime
import json
import math
import re

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal, nesting

try:
    import tomllib
except ImportError:  # Python < 3.11: tomlkit parses instead
    tomllib = None

try:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError
    HAS_TOMLKIT = True
    TOMLKIT_VERSION = getattr(tomlkit, "__version__", "unknown")
except ImportError:
    tomlkit = None
    TOMLKitError = ValueError
    HAS_TOMLKIT = False
    TOMLKIT_VERSION = None

MIN_TOMLKIT = (0, 14)
TAG = edit_journal.TAG
ADDED = edit_journal.ADDED
WAS = edit_journal.WAS
BEGIN = edit_journal.BEGIN
END = edit_journal.END
_MARK_RE = edit_journal.MARK_RE


class TomlEditError(ValueError):
    """The TOML file cannot be read or edited as asked; the message names the file and says why."""


# --- reading ---------------------------------------------------------------------------------

def parser_name():
    """Which parser :func:`load` uses: ``tomllib`` or ``tomlkit <version>``."""
    return "tomllib" if PARSER == "tomllib" else "tomlkit %s" % TOMLKIT_VERSION


PARSER = "tomllib" if tomllib is not None else "tomlkit"


def check_parser():
    """A clear error when no usable TOML parser is installed on the controller."""
    if PARSER == "tomllib":
        return
    if not HAS_TOMLKIT:
        raise TomlEditError("the Python package tomlkit is not installed on the controller (needed where Python has no "
                            "tomllib, before 3.11); run: pip install -r requirements.txt")
    found = tuple(int(part) for part in re.findall(r"\d+", TOMLKIT_VERSION)[:2])
    if found < MIN_TOMLKIT:
        raise TomlEditError("tomlkit %s is installed on the controller; this collection needs tomlkit >= %s; run: "
                            "pip install -r requirements.txt" % (TOMLKIT_VERSION, ".".join(map(str, MIN_TOMLKIT))))


def load(text, name):
    """The plain data of ``text``; a TomlEditError naming ``name`` (and the line) when it is not TOML."""
    if text.startswith("\ufeff"):
        raise TomlEditError("%s starts with a UTF-8 byte order mark (BOM), which TOML does not allow; save it "
                            "without the BOM and run again" % name)
    check_parser()
    try:
        if PARSER == "tomllib":
            data = tomllib.loads(text)
        else:
            data = tomlkit.parse(text).unwrap()
    except (ValueError, TOMLKitError) as exc:
        raise TomlEditError("%s is not valid TOML: %s" % (name, exc)) from None
    except RecursionError:
        raise TomlEditError(nesting.too_deep_message(name)) from None
    if nesting.depth(data) > nesting.MAX_NESTING:
        raise TomlEditError(nesting.too_deep_message(name))
    return data


# --- scanning --------------------------------------------------------------------------------

class Statement:
    """One table header or key/value pair: ``kind`` (``table``, ``array``, ``key``), the full
    ``path`` of what it defines, ``table`` (the header it sits under), the raw ``key`` text,
    and its first and last line (0-based, inclusive)."""

    __slots__ = ("end", "indent", "key", "kind", "path", "start", "table")

    def __init__(self, kind, path, table, key, start, end, indent):
        self.kind, self.path, self.table, self.key = kind, path, table, key
        self.start, self.end, self.indent = start, end, indent


_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b", '"': '"', "\\": "\\"}


def _basic_string(text, pos):
    """(value, position after the closing quote) of the basic string starting at ``text[pos]``."""
    out = []
    pos += 1
    while text[pos] != '"':
        char = text[pos]
        if char == "\\":
            code = text[pos + 1]
            if code in "uUx":
                width = {"u": 4, "U": 8, "x": 2}[code]
                out.append(chr(int(text[pos + 2:pos + 2 + width], 16)))
                pos += 2 + width
                continue
            out.append(_ESCAPES[code])
            pos += 2
            continue
        out.append(char)
        pos += 1
    return "".join(out), pos + 1


def parse_key(text, pos=0, stop="="):
    """(key path, position of ``stop``) for the dotted key starting at ``text[pos]``."""
    parts = []
    while True:
        while text[pos] in " \t":
            pos += 1
        if text[pos] == '"':
            part, pos = _basic_string(text, pos)
        elif text[pos] == "'":
            close = text.index("'", pos + 1)
            part, pos = text[pos + 1:close], close + 1
        else:
            match = _BARE.match(text, pos)
            part, pos = match.group(0), match.end()
        parts.append(part)
        while text[pos] in " \t":
            pos += 1
        if text[pos] == ".":
            pos += 1
            continue
        if text[pos] != stop:
            raise ValueError("unexpected %r" % text[pos])
        return tuple(parts), pos


def _value_end(lines, index, pos):
    """The last line of the value that starts at ``lines[index][pos]``."""
    depth = 0
    line = lines[index]
    while True:
        while pos < len(line):
            if line.startswith('"""', pos) or line.startswith("'''", pos):
                quote = line[pos:pos + 3]
                pos += 3
                while True:
                    found = line.find(quote, pos)
                    while found > 0 and quote == '"""' and _escaped(line, found):
                        found = line.find(quote, found + 1)
                    if found >= 0:
                        pos = found + 3
                        while line.startswith(quote[0], pos):
                            pos += 1
                        break
                    index += 1
                    line, pos = lines[index], 0
                continue
            char = line[pos]
            if char in "\"'":
                pos = _after_string(line, pos)
                continue
            if char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
            elif char == "#":
                break
            pos += 1
        if depth <= 0:
            return index
        index += 1
        line, pos = lines[index], 0


def _escaped(line, pos):
    count = 0
    while pos - count - 1 >= 0 and line[pos - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def scan(lines):
    """The statements of a valid TOML document given as lines (with their line ends)."""
    statements = []
    table = ()
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip(" \t")
        indent = line[:len(line) - len(stripped)]
        if not stripped.strip() or stripped.startswith("#"):
            index += 1
            continue
        if stripped.startswith("[["):
            path, _pos = parse_key(stripped, 2, "]")
            table = ("[[", *path)
            statements.append(Statement("array", path, table, None, index, index, indent))
        elif stripped.startswith("["):
            path, _pos = parse_key(stripped, 1, "]")
            table = path
            statements.append(Statement("table", path, table, None, index, index, indent))
        else:
            key, pos = parse_key(stripped)
            end = _value_end(lines, index, pos + 1)
            statements.append(Statement("key", table + key, table, stripped[:pos].rstrip(" \t"), index, end, indent))
            index = end
        index += 1
    return statements


# --- writing values --------------------------------------------------------------------------

def key_text(path):
    """A key path as TOML writes it: bare parts where possible, else quoted."""
    return ".".join(part if _BARE.fullmatch(part) else json.dumps(part, ensure_ascii=False) for part in path)


def value_text(value, literal=False):
    """``value`` as a TOML value (inline: arrays and tables on one line)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        if literal and "'" not in value and not re.search(r"[\x00-\x08\x0a-\x1f\x7f]", value):
            return "'%s'" % value
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[%s]" % ", ".join(value_text(item, literal) for item in value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ %s }" % ", ".join("%s = %s" % (key_text((k,)), value_text(v, literal)) for k, v in value.items())
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    raise TomlEditError("cannot write a value of type %s in TOML" % type(value).__name__)


def table_lines(path, data, layout=("", ""), literal=False):
    """Lines (without line ends) of ``[path]`` holding ``data``, sub-tables as tables of their own.

    ``layout``: (header step, key step): a header is indented one header step per level below
    the top (containerd's own files: two spaces; flat files: none), its keys one key step more.
    """
    head = layout[0] * (len(path) - 1)
    body = head + layout[1]
    out = ["%s[%s]" % (head, key_text(path))]
    subtables = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            subtables.append((key, value))
        else:
            out.append("%s%s = %s" % (body, key_text((key,)), value_text(value, literal)))
    for key, value in subtables:
        out.extend(table_lines(path + (key,), value, layout, literal))
    return out


def document_text(data, layout=("", ""), literal=False):
    """A whole document for ``data``: top-level keys, a blank line, then each table."""
    out = []
    tables = []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        else:
            out.append("%s = %s" % (key_text((key,)), value_text(value, literal)))
    for key, value in tables:
        out.append("")
        out.extend(_tables_of((key,), value, layout, literal))
    return "\n".join(out).lstrip("\n") + "\n"


def _tables_of(path, data, layout, literal):
    scalars = {k: v for k, v in data.items() if not (isinstance(v, dict) and v)}
    out = table_lines(path, scalars, layout, literal) if scalars or not data else []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.extend(_tables_of(path + (key,), value, layout, literal))
    return out


def _line_end(text):
    return "\r\n" if "\r\n" in text else "\n"


# --- the document ----------------------------------------------------------------------------

def get_path(data, path):
    """The value at ``path`` in plain data, or None."""
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def plain(value):
    """``value`` as the plain Python types a parsed file holds: a value templated by Ansible can be
    a subclass of ``str``, ``list`` or ``dict``, and the edit tells TOML's types apart by type."""
    for kind, convert in ((bool, bool), (int, int), (float, float), (str, str.__str__)):
        if isinstance(value, kind):
            return convert(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _set_path(data, path, value):
    for key in path[:-1]:
        data = data.setdefault(key, {})
    data[path[-1]] = value


class TomlDocument:
    """A TOML file being edited: ``text``, what it means (``data``), and where its lines are.

    ``journal``: mark every change so :meth:`undo` can give back the original bytes.
    """

    def __init__(self, text, name, journal=False):
        self.name = name
        self.journal = journal
        self.text = text or ""
        self.data = load(self.text, name)
        self.original = self.text
        self._layout = None
        self._scan()
        self.literal = _prefers_literal(self.text)
        self.newline = _line_end(self.text)

    def _scan(self):
        self.lines = self.text.splitlines(keepends=True)
        self._statements = None

    @property
    def statements(self):
        # Scanned on first use: a document that needs no edit is never scanned.
        if self._statements is None:
            self._statements = scan(self.lines)
        return self._statements

    @property
    def layout(self):
        if self._layout is None:
            self._layout = layout_of(self.statements)
        return self._layout

    @property
    def changed(self):
        return self.text != self.original

    def where(self, statement):
        return "%s, line %d" % (self.name, statement.start + 1)

    def _commit(self, lines, expected, what):
        text = "".join(lines)
        try:
            data = load(text, self.name)
        except TomlEditError:
            data = None
        if data != expected:
            return False
        self.text, self.data = text, data
        self._scan()
        return True

    def _line(self, text):
        return text + self.newline

    # -- finding

    def key_statement(self, path):
        for statement in self.statements:
            if statement.kind == "key" and statement.path == tuple(path):
                return statement
        return None

    def header(self, path):
        for statement in self.statements:
            if statement.kind == "table" and statement.path == tuple(path):
                return statement
        return None

    def section_end(self, header_index):
        """The last line of the keys under the header at ``header_index`` (the header's own line
        when it has none): where keys are added, before comments that lead into the next header."""
        last = header_index
        for statement in self.statements:
            if statement.start <= header_index:
                continue
            if statement.kind != "key":
                break
            last = statement.end
        return last

    def _section_of(self, line):
        """The header statement whose section holds ``line`` (None for the top of the file)."""
        found = None
        for statement in self.statements:
            if statement.start > line:
                break
            if statement.kind != "key":
                found = statement
        return found

    def _key_indent(self, section_start, header):
        for statement in self.statements:
            if statement.start <= section_start:
                continue
            if statement.kind != "key":
                break
            return statement.indent
        if header is None:
            return ""
        return header.indent + self.layout[1]

    def _lead_in(self, line):
        """``line`` moved up over the comment lines directly above it (a header's own comments)."""
        while line > 0 and self.lines[line - 1].lstrip(" \t").startswith("#") and \
                TAG not in self.lines[line - 1]:
            line -= 1
        return line

    # -- editing

    def set(self, path, value):
        """Set the key ``path`` to ``value``; False when it already has it (same type too)."""
        path = tuple(path)
        value = plain(value)
        current = get_path(self.data, path)
        if current is not None and current == value and type(current) is type(value):
            return False
        for depth in range(1, len(path)):
            table = get_path(self.data, path[:depth])
            if table is not None and not isinstance(table, dict):
                raise TomlEditError("%s: %s must be a table, but it is a %s (%s)" % (
                    self.name, key_text(path[:depth]), type(table).__name__, value_text(table)))
        if isinstance(current, dict) and not isinstance(value, dict):
            raise TomlEditError("%s: %s is a table; cannot give it the value %s"
                                % (self.name, key_text(path), value_text(value)))
        if isinstance(value, dict) and current is None:
            self.add_table(path, value)
            return True
        expected = copy.deepcopy(self.data)
        _set_path(expected, path, value)
        statement = self.key_statement(path)
        if statement is not None:
            if self._replace(statement, value, expected):
                return True
        else:
            attempts = (self._add_in_table, self._add_dotted, self._add_header_before_subtables, self._add_at_end)
            if any(attempt(path, value, expected) for attempt in attempts):
                return True
        raise self._refusal(path)

    def _refusal(self, path):
        inline = None
        for depth in range(len(path) - 1, 0, -1):
            statement = self.key_statement(path[:depth])
            if statement is not None:
                inline = statement
                break
        if inline is not None:
            return TomlEditError("%s: %s is an inline table ({...}); write it as [%s] sections so that %s can "
                                 "be set" % (self.where(inline), key_text(inline.path), key_text(inline.path),
                                             key_text(path[len(inline.path):])))
        return TomlEditError("%s: %s cannot be set without changing the meaning of other lines; set it by hand "
                             "or simplify the tables around it" % (self.name, key_text(path)))

    def _replace(self, statement, value, expected):
        old = "".join(self.lines[statement.start:statement.end + 1])
        old_body = old.rstrip("\r\n")
        ending = old[len(old_body):]
        new = "%s%s = %s" % (statement.indent, statement.key, value_text(value, self.literal))
        if self.journal:
            match = _MARK_RE.search(old_body)
            if match and match.group(1) == "added":  # added before: still ours alone
                new = edit_journal.added_mark(new)
            elif match:  # replaced before: keep the first record of the original
                new = edit_journal.was_mark(new, match.group(2))
            else:
                new = edit_journal.was_mark(new, json.dumps(old_body, ensure_ascii=False))
        else:
            mark = _trailing_comment(old_body) if statement.start == statement.end else ""
            if mark:
                new += mark if mark.startswith((" ", "\t")) else "  " + mark
        lines = self.lines[:statement.start] + [new + ending] + self.lines[statement.end + 1:]
        return self._commit(lines, expected, "replace")

    def _insert(self, at, new_lines, expected):
        """Insert ``new_lines`` (no line ends) before line ``at``; marked when journaling."""
        if self.journal:
            if self._inside_block(at):
                pass  # inside a block of ours: it grows
            elif 0 < at <= len(self.lines) and self.lines[at - 1].strip() == END:
                at -= 1  # right after a block of ours: grow that block
            elif len(new_lines) == 1:
                new_lines = [edit_journal.added_mark(new_lines[0])]
            else:
                indent = new_lines[0][:len(new_lines[0]) - len(new_lines[0].lstrip(" \t"))]
                new_lines = [indent + BEGIN] + new_lines + [indent + END]
            # Each table header this module writes carries its own mark, so that state=absent can
            # tell a table of its own in a block from one someone else put there later.
            new_lines = [edit_journal.added_mark(line) if line.lstrip(" \t").startswith("[") and
                         not _MARK_RE.search(line) else line for line in new_lines]
        lines = list(self.lines)
        chunk = [self._line(line) for line in new_lines]
        if at >= len(lines) and lines and not lines[-1].endswith("\n"):
            # A file without a final newline keeps that: the newline goes before our lines.
            chunk[-1] = chunk[-1].rstrip("\r\n")
            chunk[0] = self.newline + chunk[0]
        return self._commit(lines[:at] + chunk + lines[at:], expected, "insert")

    def _inside_block(self, at):
        """True when line ``at`` lies between a begin marker of ours and its end marker."""
        for line in reversed(self.lines[:at]):
            if line.strip() == END:
                return False
            if line.strip() == BEGIN:
                return True
        return False

    def _add_in_table(self, path, value, expected):
        header = self.header(path[:-1]) if path[:-1] else None
        if path[:-1] and header is None:
            return False
        if header is None:  # top level: after the last top-level key, else at the top
            last = -1
            for statement in self.statements:
                if statement.kind != "key":
                    break
                last = statement.end
            indent = ""
            line = "%s%s = %s" % (indent, key_text(path[-1:]), value_text(value, self.literal))
            return self._insert(last + 1, [line], expected)
        end = self.section_end(header.start)
        indent = self._key_indent(header.start, header)
        line = "%s%s = %s" % (indent, key_text(path[-1:]), value_text(value, self.literal))
        return self._insert(end + 1, [line], expected)

    def _add_dotted(self, path, value, expected):
        """Under the deepest header above ``path`` whose section already spells part of it with dotted keys."""
        for depth in range(len(path) - 2, -1, -1):
            prefix = path[:depth]
            header = self.header(prefix) if prefix else None
            if prefix and header is None:
                continue
            owns = [s for s in self.statements if s.kind == "key" and s.table == prefix and
                    s.path[:len(path) - 1] == path[:-1]]
            if not owns:
                continue
            indent = owns[-1].indent
            line = "%s%s = %s" % (indent, key_text(path[depth:]), value_text(value, self.literal))
            return self._insert(owns[-1].end + 1, [line], expected) or \
                self._insert(self.section_end(header.start) + 1 if header else owns[-1].end + 1, [line], expected)
        return False

    def _add_header_before_subtables(self, path, value, expected):
        table = path[:-1]
        if not table:
            return False
        first = None
        for statement in self.statements:
            if statement.kind == "table" and statement.path[:len(table)] == table:
                first = statement
                break
        if first is None:
            return False
        new = table_lines(table, {path[-1]: value}, self.layout, self.literal)
        return self._insert(self._lead_in(first.start), new, expected)

    def _add_at_end(self, path, value, expected):
        table = path[:-1]
        if not table:
            return False
        new = table_lines(table, {path[-1]: value}, self.layout, self.literal)
        if self.lines and not self.journal:
            new = [""] + new
        return self._insert(len(self.lines), new, expected)

    def add_table(self, path, data, after=None):
        """Add the table ``path`` holding ``data`` (sub-tables as tables of their own)."""
        self.add_tables([(path, data)], after)

    def add_tables(self, tables, after=None):
        """Add each ``(path, data)`` of ``tables``, together, after the last section under the
        table ``after`` when given and possible, else at the end of the file. One insertion and
        one check for all of them."""
        expected = copy.deepcopy(self.data)
        new = []
        for path, data in tables:
            path = tuple(path)
            if get_path(self.data, path) is not None:
                raise TomlEditError("%s: %s already exists" % (self.name, key_text(path)))
            _set_path(expected, path, copy.deepcopy(data))
            new.extend(table_lines(path, data, self.layout, self.literal))
        inside = [s for s in self.statements if after and s.path[:len(after)] == tuple(after)]
        if inside:
            section = self._section_of(inside[-1].end)
            end = self.section_end(section.start) if section is not None else inside[-1].end
            if self._insert(end + 1, new, expected):
                return
        if self._insert(len(self.lines), new, expected):
            return
        raise self._refusal(tuple(tables[0][0]) + ("x",))

    def remove_key(self, path):
        """Remove the key statement ``path`` (a value this file defines); False when it is not there."""
        statement = self.key_statement(path)
        if statement is None:
            return False
        expected = copy.deepcopy(self.data)
        parent = get_path(expected, path[:-1]) if path[:-1] else expected
        del parent[path[-1]]
        lines = self.lines[:statement.start] + self.lines[statement.end + 1:]
        if not self._commit(lines, expected, "remove"):
            raise TomlEditError("%s: %s cannot be removed without changing other lines"
                                % (self.where(statement), key_text(path)))
        return True

    # -- the journal

    def restore(self, path):
        """Undo the journaled change of the one key ``path``; False when it carries none."""
        statement = self.key_statement(path)
        if statement is None:
            return False
        last = self.lines[statement.end]
        match = _MARK_RE.search(last.rstrip("\r\n"))
        if not match or edit_journal.changed_by_hand(last.rstrip("\r\n"), match):
            return False
        if match.group(1) == "added":
            replacement = []
        else:
            replacement = [json.loads(match.group(2)) + last[len(last.rstrip("\r\n")):]]
        lines = self.lines[:statement.start] + replacement + self.lines[statement.end + 1:]
        text = "".join(lines)
        self.text, self.data = text, load(text, self.name)
        self._scan()
        return True

    def written_here(self, path):
        """Whether the table ``path`` has a header of its own that this module wrote (marked)."""
        statement = self.header(path)
        if statement is None:
            return False
        match = _MARK_RE.search(self.lines[statement.start].rstrip("\r\n"))
        return bool(match) and match.group(1) == "added" and not edit_journal.changed_by_hand(
            self.lines[statement.start].rstrip("\r\n"), match)

    def marks_its_headers(self):
        """Whether any table header in the file carries this module's mark (written by a release
        that marks them; files written before carry none)."""
        return any(statement.kind in ("table", "array") and _MARK_RE.search(self.lines[statement.start].rstrip("\r\n"))
                   for statement in self.statements)

    def marked(self):
        """True when the file holds changes recorded by a journaled edit."""
        return TAG + ":" in self.text

    def undo(self, kept=None):
        """Give back the original lines of every journaled change (one changed by hand since goes
        to ``kept``, see :func:`edit_journal.undo_lines`); the text afterwards."""
        try:
            text = edit_journal.undo_lines(self.lines, self.name, kept)
        except edit_journal.JournalError as exc:
            raise TomlEditError(str(exc)) from None
        try:
            data = load(text, self.name)
        except TomlEditError:
            raise TomlEditError("%s: giving back the recorded lines would not leave valid TOML; the file was "
                                "left as it was" % self.name) from None
        self.text, self.data = text, data
        self._scan()
        return text


def _trailing_comment(line):
    """The ``# ...`` comment at the end of a one-line key statement, with the blanks before it; or ""."""
    stripped = line.lstrip(" \t")
    try:
        _key, pos = parse_key(stripped)
        found = _comment_start(stripped[pos + 1:])
    except (ValueError, IndexError, KeyError):
        return ""
    if found is None:
        return ""
    value = stripped[pos + 1:pos + 1 + found]
    return value[len(value.rstrip(" \t")):] + stripped[pos + 1 + found:].rstrip()


def _after_string(line, pos):
    """The position after the one-line string (basic or literal) that starts at ``line[pos]``."""
    if line[pos] == '"':
        return _basic_string(line, pos)[1]
    return line.index("'", pos + 1) + 1


def _comment_start(text):
    pos = 0
    while pos < len(text):
        if text[pos] in "\"'":
            pos = _after_string(text, pos)
            continue
        if text[pos] == "#":
            return pos
        pos += 1
    return None


def layout_of(statements):
    """(header step, key step) of a file: how much a header is indented per level below the top
    (containerd's ``config default`` output: two spaces; hand-written files: often none), and how
    much further its keys are. Taken from the file's first indented header and first key under a
    header; ("", "") for a flat file."""
    header_step = ""
    for statement in statements:
        if statement.kind == "table" and statement.indent and len(statement.path) > 1:
            header_step = statement.indent[:len(statement.indent) // (len(statement.path) - 1)]
            break
    key_step = ""
    for statement in statements:
        if statement.kind == "key" and statement.table and statement.table[0] != "[[":
            head = header_step * (len(statement.table) - 1)
            key_step = statement.indent[len(head):] if statement.indent.startswith(head) else statement.indent
            break
    return header_step, key_step


def _prefers_literal(text):
    """True when the file's strings are mostly single-quoted (containerd 2.x writes them so)."""
    single = len(re.findall(r"(?m)=[ \t]*'", text))
    double = len(re.findall(r'(?m)=[ \t]*"', text))
    return single > double
