# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit a containerd ``config.toml`` in place with tomlkit (controller side).

Comments, order and spacing outside the edited keys are kept. The decisions come from
``module_utils/containerd_config.py``; this file only applies them to the document.

What ``state: absent`` needs to undo ``present`` is kept in the file itself, as inline
comments: a value ``present`` replaced carries
``# gpu_node.container_toolkit previous value: <old TOML value or (unset)>``, and a key or table
it created only to make the config work carries ``# added by gpu_node.container_toolkit...``.
"""

from __future__ import annotations

import copy
import re

try:
    import tomllib
except ImportError:  # Python < 3.11: no fast path
    tomllib = None

try:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError
    from tomlkit.items import AoT as _AoT
    from tomlkit.items import InlineTable as _InlineTable
    from tomlkit.items import String as _String
    from tomlkit.items import StringType as _StringType
    from tomlkit.items import Table as _Table
    HAS_TOMLKIT = True
except ImportError:  # pragma: no cover - reported by the action plugin
    tomlkit = None
    TOMLKitError = Exception
    _Table = dict
    _AoT = list
    _InlineTable = dict
    _String = str
    _StringType = None
    HAS_TOMLKIT = False

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import DifferenceTracker

PREVIOUS_MARKER = cc.PREVIOUS_MARKER


# --- generic tomlkit helpers (also used by toolkit_toml) -------------------------------------

def parse(text, name):
    """Parse ``text`` into a document that renders back to exactly ``text``.

    A clear ConfigError naming ``name`` when it is not TOML, or when tomlkit cannot reproduce
    it byte for byte (an edit would then change parts of the file nobody asked to change).
    """
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise cc.ConfigError("%s is not valid TOML: %s" % (name, exc)) from None
    if doc.as_string() != text:
        _restore_header_indents(doc, text)
        if doc.as_string() != text:
            raise cc.ConfigError("%s cannot be edited without changing lines this module does not own "
                                 "(tomlkit does not reproduce its layout); it was left as it was" % name)
    return doc


def _header_tables(container):
    """The tables whose headers tomlkit renders, in the order it renders them."""
    found = []
    for _key, item in container.body:
        tables = item.body if isinstance(item, _AoT) else [item] if isinstance(item, _Table) else []
        for table in tables:
            if isinstance(item, _AoT) or not table.is_super_table():
                found.append(table)
            found.extend(_header_tables(table.value))
    return found


def _restore_header_indents(doc, text):
    """Give every table header the indentation it has in ``text``.

    tomlkit's parser indents the second and later tables under an implicit parent table
    (``[a.b.x]``, ``[a.b.y]`` with no ``[a.b]``) by the parent's indentation once more on each
    parse. Each header is found in a rendering where its indentation is a numbered marker, and
    given the whitespace that starts the same line of ``text``.
    """
    tables = _header_tables(doc)
    saved = [table.trivia.indent for table in tables]
    for number, table in enumerate(tables):
        table.trivia.indent = saved[number].rstrip(" \t") + "\0%d\0" % number
    marked = doc.as_string().split("\n")
    for number, table in enumerate(tables):
        table.trivia.indent = saved[number]
    lines = text.split("\n")
    if len(marked) != len(lines):
        return
    for index, line in enumerate(marked):
        if line.startswith("\0"):
            number = int(line[1:line.index("\0", 1)])
            source = lines[index]
            tables[number].trivia.indent = saved[number].rstrip(" \t") + source[:len(source) - len(source.lstrip(" \t"))]


def _parts(table):
    """The concrete tables behind ``table``.

    A table whose parts are not contiguous in the file (``[a.b]``, then ``[c]``, then ``[a.d]``)
    comes from tomlkit as a proxy without ``item()``; its parts are the real tables that render.
    """
    if hasattr(table, "item"):
        return [table]
    return list(getattr(table, "_tables", None) or [table])


def item_of(table, key):
    """The live tomlkit item of ``key`` (with its trivia), also in an out-of-order table."""
    if hasattr(table, "item"):
        return table.item(key)
    for part in _parts(table):
        if key in part:
            return item_of(part, key)
    raise KeyError(key)


def _part_for(table, key):
    """The concrete table a plain ``key`` is set in: the part holding it, else the part with plain keys."""
    parts = _parts(table)
    if len(parts) == 1:
        return parts[0]
    for part in parts:
        if key in part:
            return _part_for(part, key)
    for part in parts:
        if any(not isinstance(item_of(part, k), (_Table, _AoT)) for k in part):
            return part
    for part in parts:
        if not part.is_super_table():
            return part
    return parts[0]


_KEY_LINE = re.compile(r"""^[ \t]+(\[|([A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')([ \t]*\.[ \t]*([A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*'))*[ \t]*=)""")


def indent_unit(text):
    """The indentation step of ``text``: the leading whitespace of its first indented table
    header or key (containerd's own files indent two spaces per level); "" for a flat file."""
    for line in (text or "").split("\n"):
        match = _KEY_LINE.match(line)
        if match:
            return line[:len(line) - len(line.lstrip(" \t"))]
    return ""


def lay_out(table, path, unit):
    """Indent a table this module created as containerd indents its own files: ``unit`` per
    level of ``path`` for the header, one more for the keys, and the same for its sub-tables."""
    table.trivia.indent = unit * (len(path) - 1)
    for key in list(table):
        item = item_of(table, key)
        if isinstance(item, _Table):
            lay_out(item, tuple(path) + (key,), unit)
        elif not isinstance(item, _AoT) and getattr(item, "trivia", None) is not None:
            item.trivia.indent = unit * len(path)


def _sibling_indent(table):
    for key in table:
        item = item_of(table, key)
        if not isinstance(item, (_Table,)) and getattr(item, "trivia", None) is not None:
            return item.trivia.indent
    return None


def get_table(container, keys, create, prefix=()):
    """Walk ``keys`` down from ``container``; create missing tables when asked.

    Returns None when a table is missing and ``create`` is false. A key that holds something
    other than a table is a ConfigError naming its dotted path (``prefix`` + the keys walked).
    """
    current = container
    walked = list(prefix)
    for key in keys:
        walked.append(key)
        if key not in current:
            if not create:
                return None
            if isinstance(current, _InlineTable):
                raise cc.ConfigError("%s is an inline table ({...}); write it as [%s] sections so that %s can be added"
                                     % (cc.dotted(walked[:-1]), cc.dotted(walked[:-1]), key))
            current[key] = tomlkit.table(is_super_table=True)
        item = current[key]
        if not isinstance(item, dict):
            raise cc.ConfigError("%s must be a table, but it is a %s (%s)"
                                 % (cc.dotted(walked), type(plain(item)).__name__, toml_repr(plain(item))))
        current = item
    return current


def _clear_comment(item):
    item.trivia.comment = ""
    item.trivia.comment_ws = ""


def _literal_style(table):
    """True when the strings of ``table`` are single-quoted (containerd 2.x writes them so)."""
    for key in table:
        item = item_of(table, key)
        if isinstance(item, _String):
            return item.type == _StringType.SLL
    return False


def _insert_key(table, key, value):
    """Add a new key after the table's last plain key, before its sub-tables and with no new blank line.

    tomlkit's own ``table[key] = value`` adds a blank line before the next sub-table, which
    would stay behind when ``state: absent`` removes the key again.
    """
    container = getattr(table, "value", table)
    body = getattr(container, "body", None)
    if body is None:
        table[key] = value
        return
    last_plain = None
    first_key = None
    for existing, item in body:
        if existing is None:
            continue
        if first_key is None:
            first_key = existing
        if not isinstance(item, (_Table, _AoT)):
            last_plain = existing
    if last_plain is not None:
        container._insert_after(last_plain, key, value)
    elif first_key is not None:
        container._insert_at(0, key, value)
    else:
        table[key] = value


def set_value(table, key, value, comment=None, indent=None, header_indent=None):
    """Set ``table[key]``; a new key takes its siblings' indentation (else ``indent``) and quoting;
    the comment is replaced. A table without a header gets one, indented by ``header_indent``."""
    table = _part_for(table, key)
    new = key not in table
    implicit = new and isinstance(table, _Table) and table.is_super_table()
    if new and _sibling_indent(table) is not None:
        indent = _sibling_indent(table)
    if isinstance(value, str) and "'" not in value and "\n" not in value:
        literal = (not new and isinstance(item_of(table, key), _String) and item_of(table, key).type == _StringType.SLL) \
            or (new and _literal_style(table))
        if literal:
            value = tomlkit.string(value, literal=True)
    if new:
        _insert_key(table, key, value)
    else:
        table[key] = value
    item = item_of(table, key)
    if new and indent is not None:
        item.trivia.indent = indent
    if implicit and header_indent is not None:
        table.trivia.indent = header_indent
    if comment:
        item.trivia.comment_ws = " "
        item.trivia.comment = "# " + comment
    else:
        _clear_comment(item)


def comment_of(table, key):
    if key not in table:
        return ""
    return getattr(item_of(table, key).trivia, "comment", "") or ""


def toml_repr(value):
    return tomlkit.item(value).as_string()


def plain(value):
    return value.unwrap() if hasattr(value, "unwrap") else value


def _unset_record(table):
    """How to record a key this module adds to ``table``: ``cc.UNSET_HEADER_KEPT`` when the table
    had a header of its own and no plain keys (so removing the key must keep the header),
    else ``cc.UNSET``. A key recorded earlier in the table already made that decision."""
    for key in table:
        found, previous = parse_previous(comment_of(table, key))
        if found and previous in (None, cc.UNSET_HEADER_KEPT):
            return previous or cc.UNSET
    explicit = any(isinstance(part, _Table) and not part.is_super_table() for part in _parts(table))
    header_only = all(isinstance(item_of(table, k), (_Table, _AoT)) for k in table)
    return cc.UNSET_HEADER_KEPT if explicit and header_only else cc.UNSET


def set_recorded(table, key, value, name, tracker, indent=None, header_indent=None):
    """Set ``key`` to ``value``, recording the previous value (as written, with its comment) once."""
    existed = key in table
    current = plain(table.get(key)) if existed else None
    if existed and current == value:
        return
    comment = comment_of(table, key)
    found = parse_previous(comment)[0]
    if found:
        record = comment.lstrip("#").strip()
    elif existed:
        item = item_of(table, key)
        record = "%s %s%s%s" % (PREVIOUS_MARKER, item.as_string(), item.trivia.comment_ws if comment else "", comment)
    else:
        record = "%s %s" % (PREVIOUS_MARKER, _unset_record(table))
    set_value(table, key, value, record, indent=indent, header_indent=header_indent)
    tracker.add(name, current, value, reason="%r -> %r" % (current, value) if existed else "unset -> %r" % (value,))


def parse_previous(comment):
    """(found, previous TOML text or None for unset).

    The previous text is ``cc.UNSET_HEADER_KEPT`` when the key was unset in a table whose
    header stays after the key is removed."""
    text = (comment or "").lstrip("#").strip()
    if not text.startswith(PREVIOUS_MARKER):
        return False, None
    rest = text[len(PREVIOUS_MARKER):].strip()
    return True, None if rest in ("", cc.UNSET) else rest


def _back_to_implicit(table):
    """A table left with sub-tables only, and no comment, loses its header again.

    ``present`` setting a key on an implicit table (one without a header of its own) gives
    it a header; this takes it away again so ``absent`` gives back the original bytes.
    """
    if not isinstance(table, _Table) or table.trivia.comment:
        return
    items = [item_of(table, k) for k in table]
    if items and all(isinstance(item, (_Table, _AoT)) for item in items):
        table._is_super_table = True  # pylint: disable=protected-access


def restore_recorded(table, key, name, tracker):
    """Put back the value recorded by :func:`set_recorded`; True when there was a record."""
    if table is None or key not in table:
        return False
    found, previous = parse_previous(comment_of(table, key))
    if not found:
        return False
    current = plain(table[key])
    if previous in (None, cc.UNSET_HEADER_KEPT):
        del table[key]
        if previous is None:
            for part in _parts(table):
                _back_to_implicit(part)
        tracker.add(name, current, None, reason="%r -> unset (restored)" % (current,))
    else:
        old = tomlkit.parse("v = " + previous).item("v")
        value = plain(old)
        comment_ws, old_comment = old.trivia.comment_ws, old.trivia.comment
        table[key] = old
        item = item_of(table, key)
        item.trivia.comment_ws = comment_ws
        item.trivia.comment = old_comment
        tracker.add(name, current, value, reason="%r -> %r (restored)" % (current, value))
    return True


def prune_empty_super_tables(doc, keys):
    """Remove tables along ``keys`` that are empty and implicit (no header of their own)."""
    chain = [doc]
    for key in keys:
        if not isinstance(chain[-1], dict) or key not in chain[-1]:
            break
        chain.append(chain[-1][key])
    for depth in range(len(chain) - 1, 0, -1):
        table = chain[depth]
        if isinstance(table, _Table) and len(table) == 0 and \
                (not table.trivia.comment or cc.ADDED_MARKER in table.trivia.comment):
            del chain[depth - 1][keys[depth - 1]]
        else:
            break


# --- containerd edits ------------------------------------------------------------------------

def _runtime_options(runtime, version, name, unit):
    """The runtime's ``options`` table; a new one is indented like the file's own tables."""
    path = cc.runtimes_table(version) + (name, "options")
    created = "options" not in runtime
    options = get_table(runtime, ("options",), create=True, prefix=path[:-1])
    if created:
        lay_out(item_of(runtime, "options"), path, unit)
    return options, unit * len(path)


def copy_item(item):
    """A deep copy of a tomlkit item (comments and layout included)."""
    return copy.deepcopy(item)


def _new_runtime(template_table, header_indent):
    if template_table is not None:
        table = copy_item(template_table)
        _clear_comment(table)
    else:
        table = tomlkit.table()
    return table


def _ensure_runtime(runtimes, name, binary, runtime_type, version, template, template_table, tracker, unit=""):
    prefix = "runtime %s" % name
    if name not in runtimes:
        table = _new_runtime(template_table, None)
        set_value(table, "runtime_type", runtime_type)
        runtimes[name] = table
        if template_table is not None:
            item_of(runtimes, name).trivia.indent = template_table.trivia.indent
        else:
            lay_out(item_of(runtimes, name), cc.runtimes_table(version) + (name,), unit)
        options, indent = _runtime_options(runtimes[name], version, name, unit)
        set_value(options, "BinaryName", binary, indent=indent)
        if version == 1:
            set_value(options, "Runtime", binary, indent=indent)
        if not runtimes[name].as_string().endswith("\n\n"):
            options.add(tomlkit.nl())
        tracker.add(prefix, None, {"runtime_type": runtime_type, "BinaryName": binary},
                    reason="missing (added%s)" % (", copied from %s" % template if template else ""))
        return
    runtime = get_table(runtimes, (name,), create=False, prefix=cc.runtimes_table(version))
    current_type = plain(runtime.get("runtime_type"))
    if current_type != runtime_type:
        set_value(runtime, "runtime_type", runtime_type)
        tracker.add(prefix + " runtime_type", current_type, runtime_type, reason="%r -> %r" % (current_type, runtime_type))
    options, indent = _runtime_options(runtime, version, name, unit)
    keys = ("BinaryName", "Runtime") if version == 1 else ("BinaryName",)
    for key in keys:
        current = plain(options.get(key))
        if current != binary:
            set_value(options, key, binary, indent=indent)
            tracker.add("%s %s" % (prefix, key), current, binary, reason="%r -> %r" % (current, binary))


def apply_present(doc, version, params, tracker, source=None, unit=""):
    """Register the runtimes in ``doc`` (the root config, or a drop-in).

    ``source``: (runtimes table, default runtime name) to copy templates from when ``doc`` is a
    drop-in that does not hold them itself. ``unit``: the file's indentation step.
    """
    cri = get_table(doc, cc.cri_table(version), create=True)
    containerd = get_table(cri, ("containerd",), create=True, prefix=cc.cri_table(version))
    runtimes = get_table(containerd, ("runtimes",), create=True, prefix=cc.containerd_table(version))
    names = [r["name"] for r in params["runtimes"]]
    if isinstance(runtimes, _InlineTable) and any(n not in runtimes for n in names):
        raise cc.ConfigError("%s is an inline table ({...}); write it as [%s.<name>] sections so that "
                             "runtimes can be added" % (cc.dotted(cc.runtimes_table(version)),
                                                        cc.dotted(cc.runtimes_table(version))))
    if source is None:
        source_runtimes, default_name = runtimes, plain(containerd.get("default_runtime_name"))
    else:
        source_runtimes, default_name = source
    existing = [key for key in source_runtimes if isinstance(source_runtimes[key], dict)]
    if source is None and cc.needs_default_entry(existing, default_name, names) and \
            any(n not in runtimes for n in names):
        # A runtimes table replaces containerd's built-in one: without this entry the default
        # runtime would vanish ("no corresponding runtime configured").
        table = tomlkit.table()
        set_value(table, "runtime_type", cc.DEFAULT_RUNTIME_TYPE)
        table.comment(cc.ADDED_MARKER)
        table.add(tomlkit.nl())
        runtimes["runc"] = table
        lay_out(item_of(runtimes, "runc"), cc.runtimes_table(version) + ("runc",), unit)
        tracker.add("runtime runc", None, {"runtime_type": cc.DEFAULT_RUNTIME_TYPE},
                    reason="missing next to default_runtime_name %r (added: a runtimes table replaces "
                           "containerd's built-in one)" % (default_name or "runc"))
        existing.append("runc")
    template = cc.choose_template(existing, default_name, names)
    template_table = source_runtimes[template] if template else None
    for entry in params["runtimes"]:
        _ensure_runtime(runtimes, entry["name"], entry["binary"], params["runtime_type"], version,
                        template, template_table, tracker, unit)
    at_cri = {"indent": unit * len(cc.cri_table(version)), "header_indent": unit * (len(cc.cri_table(version)) - 1)}
    if params.get("enable_cdi") is not None:
        set_recorded(cri, "enable_cdi", bool(params["enable_cdi"]), "enable_cdi", tracker, **at_cri)
    if params.get("cdi_spec_dirs") is not None:
        set_recorded(cri, "cdi_spec_dirs", list(params["cdi_spec_dirs"]), "cdi_spec_dirs", tracker, **at_cri)
    if params.get("set_as_default"):
        depth = len(cc.containerd_table(version))
        set_recorded(containerd, "default_runtime_name", names[0], "default_runtime_name", tracker,
                     indent=unit * depth, header_indent=unit * (depth - 1))
    else:
        restore_recorded(containerd, "default_runtime_name", "default_runtime_name", tracker)


def apply_absent(doc, version, params, tracker):
    """Undo :func:`apply_present`: restore recorded values, remove the runtimes and what was added."""
    cri = get_table(doc, cc.cri_table(version), create=False)
    if cri is None:
        return
    containerd = get_table(cri, ("containerd",), create=False, prefix=cc.cri_table(version))
    restore_recorded(containerd, "default_runtime_name", "default_runtime_name", tracker)
    restore_recorded(cri, "enable_cdi", "enable_cdi", tracker)
    restore_recorded(cri, "cdi_spec_dirs", "cdi_spec_dirs", tracker)
    runtimes = get_table(containerd, ("runtimes",), create=False, prefix=cc.containerd_table(version)) if containerd is not None else None
    if runtimes is not None:
        for entry in params["runtimes"]:
            if entry["name"] in runtimes:
                del runtimes[entry["name"]]
                tracker.add("runtime %s" % entry["name"], "present", None, reason="present (removed)")
        runc = runtimes.get("runc")
        if isinstance(runc, _Table) and cc.ADDED_MARKER in (runc.trivia.comment or "") and \
                not any(isinstance(runtimes[k], dict) for k in runtimes if k != "runc"):
            del runtimes["runc"]
            tracker.add("runtime runc", "present", None, reason="added by this module (removed)")
    prune_empty_super_tables(doc, cc.runtimes_table(version))
    _drop_added_version(doc)


def _drop_added_version(doc):
    if "version" in doc and cc.ADDED_MARKER in comment_of(doc, "version") and len(doc) == 1:
        del doc["version"]


def _effective(doc):
    return doc.unwrap() if doc is not None else None


def edit(text, params, containerd_output=None, drop_in_text=None, name="config.toml"):
    """Plan the edit of a containerd config. Pure: text in, text out.

    ``text``: the root config (None when the file is missing). ``params``: the module options
    (``state``, ``runtimes`` normalised, ``runtime_type``, ``set_as_default``, ``enable_cdi``,
    ``cdi_spec_dirs``, ``config_version``, ``drop_in``, ``path``). ``drop_in_text``: the drop-in's
    current content (None when missing).

    Returns a dict: ``text`` (new root), ``drop_in_text`` (new drop-in, None to remove it or when
    not in drop-in mode), ``version``, ``version_source``, ``changes``, ``restart_required``.
    """
    if tomllib is not None and text:
        # Fast path for the usual re-run: the standard library's parser is several times faster
        # than tomlkit, and nothing needs to be rendered when nothing changes.
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            data = None
        if data is not None and cc.already_done(data, text, params):
            declared = data.get("version")
            return {"text": text, "drop_in_text": None, "version": cc.file_version(declared),
                    "version_source": "file" if declared is not None else "file (no version key means 1)",
                    "changes": [], "restart_required": False}
    doc = parse(text or "", name)
    empty = len(doc) == 0
    declared = plain(doc.get("version"))
    version, source = cc.choose_version(params.get("config_version"), declared, empty, containerd_output)
    tracker = DifferenceTracker()
    before_root = _effective(doc)
    drop_in = params.get("drop_in")
    state = params.get("state", "present")
    if empty and state == "present" and (version != 1 or params.get("config_version") not in (None, "auto")):
        item = tomlkit.item(version)
        item.comment(cc.ADDED_MARKER)
        if doc.body:
            doc._insert_at(0, "version", item)  # pylint: disable=protected-access
        else:
            doc["version"] = item
        tracker.add("version", None, version, reason="unset -> %d (%s)" % (version, source))
    new_drop_in = None
    before_drop = None
    if drop_in:
        cc.check_drop_in(params.get("path") or cc.DEFAULT_PATH, drop_in)
        drop_doc = parse(drop_in_text, drop_in) if drop_in_text is not None else None
        before_drop = _effective(drop_doc)
        new_drop_in = _edit_drop_in(doc, version, params, tracker, drop_in, drop_in_text)
    elif state == "present":
        apply_present(doc, version, params, tracker, unit=indent_unit(text))
    else:
        apply_absent(doc, version, params, tracker)
    new_text = doc.as_string()
    if len(doc) == 0 and text is not None and new_text != text:
        # Nothing but comments and blank lines is left (absent after present on a blank file).
        new_text = new_text.rstrip("\n") + "\n" if new_text.strip() else ""
    after_drop = _effective(parse(new_drop_in, drop_in)) if new_drop_in is not None else None
    restart = _effective(doc) != before_root or (drop_in is not None and after_drop != before_drop)
    return {
        "text": new_text,
        "drop_in_text": new_drop_in,
        "version": version,
        "version_source": source,
        "changes": tracker.reasons(),
        "restart_required": bool(restart) and (new_text != (text or "") or new_drop_in != drop_in_text),
    }


def _edit_drop_in(doc, version, params, tracker, drop_in, drop_in_text):
    """Drop-in mode: the root only gets ``imports``; the runtimes go to the drop-in file."""
    imports = doc.get("imports")
    if imports is not None and not isinstance(plain(imports), list):
        raise cc.ConfigError("imports is not a list")
    current = [str(x) for x in plain(imports)] if imports is not None else []
    if params.get("state", "present") == "absent":
        if drop_in in current:
            doc["imports"].remove(drop_in)
            tracker.add("imports", current, [x for x in current if x != drop_in], reason="%s removed" % drop_in)
            if not doc["imports"] and cc.ADDED_MARKER in comment_of(doc, "imports"):
                del doc["imports"]
        _drop_added_version(doc)
        if drop_in_text is not None:
            tracker.add("drop_in %s" % drop_in, "present", None, reason="present (removed)")
        return None
    if not cc.import_covered(current, drop_in):
        if imports is None:
            set_value(doc, "imports", [drop_in], cc.ADDED_MARKER)
        else:
            doc["imports"].append(drop_in)
        tracker.add("imports", current, current + [drop_in], reason="%s missing (added)" % drop_in)
    new = tomlkit.document()
    set_value(new, "version", version)
    new.add(tomlkit.nl())
    root_cri = get_table(doc, cc.cri_table(version), create=False)
    root_containerd = get_table(root_cri, ("containerd",), create=False, prefix=cc.cri_table(version)) if root_cri is not None else None
    root_runtimes = get_table(root_containerd, ("runtimes",), create=False, prefix=cc.containerd_table(version)) \
        if root_containerd is not None else None
    default_name = plain(root_containerd.get("default_runtime_name")) if root_containerd is not None else None
    if cc.drop_in_carries_cri_table(version) and root_cri is not None:
        parent = get_table(new, cc.cri_table(version)[:-1], create=True)
        parent[cc.cri_table(version)[-1]] = copy_item(root_cri)
    sub = DifferenceTracker()
    runtimes_src = root_runtimes if root_runtimes is not None else tomlkit.table()
    if cc.drop_in_carries_cri_table(version) and root_runtimes is None:
        # The copied table replaces containerd's built-in runtimes: keep runc.
        runtimes_src = tomlkit.table()
        runc = tomlkit.table()
        set_value(runc, "runtime_type", cc.DEFAULT_RUNTIME_TYPE)
        runtimes_src["runc"] = runc
        get_table(new, cc.runtimes_table(version), create=True)["runc"] = copy_item(runc)
    apply_present(new, version, params, sub, source=(runtimes_src, default_name))
    new_text = new.as_string()
    if new_text != drop_in_text:
        tracker.add("drop_in %s" % drop_in, drop_in_text, new_text,
                    reason="missing (written)" if drop_in_text is None else "differs (rewritten): " + "; ".join(sub.reasons() or ["content"]))
    return new_text
