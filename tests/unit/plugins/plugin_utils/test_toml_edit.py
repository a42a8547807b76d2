# -*- coding: utf-8 -*-
"""The line-by-line TOML editor: scanning, setting keys where the file defines them, the journal."""

from __future__ import annotations

import math

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toml_edit
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlDocument, TomlEditError, load


@pytest.fixture(params=["tomllib", "tomlkit"], autouse=True)
def parser(request, monkeypatch):
    if request.param == "tomllib" and toml_edit.tomllib is None:
        pytest.skip("not applicable: no tomllib before Python 3.11")
    monkeypatch.setattr(toml_edit, "PARSER", request.param)
    return request.param


TRICKY = '''# top
title = "a ] [ # not a comment"
multi = """
[not.a.table]
x = 1 \\""" still a string
"""
literal = \'\'\'
[neither]\'\'\'
array = [
  "one", # [comment]
  { inline = "{" },
]
"quoted.key" = 1
dotted . "with space" = 2

  [server]   # header comment
  port = 1

[[products]]
name = "x"
'''


def test_scan_finds_headers_and_keys_with_their_lines():
    statements = toml_edit.scan(TRICKY.splitlines(keepends=True))
    found = [(s.kind, s.path, s.start, s.end) for s in statements]
    assert found == [
        ("key", ("title",), 1, 1),
        ("key", ("multi",), 2, 5),
        ("key", ("literal",), 6, 7),
        ("key", ("array",), 8, 11),
        ("key", ("quoted.key",), 12, 12),
        ("key", ("dotted", "with space"), 13, 13),
        ("table", ("server",), 15, 15),
        ("key", ("server", "port"), 16, 16),
        ("array", ("products",), 18, 18),
        ("key", ("[[", "products", "name"), 19, 19),
    ]


@pytest.mark.parametrize("value, text", [
    (True, "true"), (3, "3"), (1.5, "1.5"), (float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan"),
    ("a\"b", '"a\\"b"'), ([1, "x"], '[1, "x"]'), ({"a": 1}, "{ a = 1 }"), ({}, "{}"),
])
def test_value_text_round_trips(value, text):
    assert toml_edit.value_text(value) == text
    parsed = load("v = " + text, "t")["v"]
    assert parsed == value or (math.isnan(value) and math.isnan(parsed))


def test_value_text_literal_only_where_possible():
    assert toml_edit.value_text("/a/b", literal=True) == "'/a/b'"
    assert toml_edit.value_text("it's", literal=True) == '"it\'s"'


def test_value_text_refuses_what_toml_cannot_hold():
    with pytest.raises(TomlEditError, match="cannot write a value of type object"):
        toml_edit.value_text(object())


def test_key_text():
    assert toml_edit.key_text(("plugins", "io.containerd.grpc.v1.cri", "a_b-c")) == 'plugins."io.containerd.grpc.v1.cri".a_b-c'


def test_set_replaces_in_place_keeping_the_users_comment():
    doc = TomlDocument('[a]\n  x = 1    # mine\n  y = 2\n', "t")
    assert doc.set(("a", "x"), 5) is True
    assert doc.text == '[a]\n  x = 5    # mine\n  y = 2\n'
    assert doc.set(("a", "x"), 5) is False


def test_set_adds_after_the_tables_last_key_before_the_next_headers_comments():
    doc = TomlDocument('[a]\n  x = 1\n\n# about b\n[b]\n', "t")
    doc.set(("a", "z"), "v")
    assert doc.text == '[a]\n  x = 1\n  z = "v"\n\n# about b\n[b]\n'


def test_set_with_dotted_keys_adds_a_dotted_key():
    doc = TomlDocument('[p]\nc.r.t = "x"\n[q]\n', "t")
    doc.set(("p", "c", "r", "u"), 1)
    assert doc.text == '[p]\nc.r.t = "x"\nc.r.u = 1\n[q]\n'


def test_set_on_an_implicit_table_gives_it_a_header_before_its_first_subtable():
    doc = TomlDocument('[x]\n\n# runc\n[a.b.c]\n  k = 1\n', "t")
    doc.set(("a", "b", "z"), True)
    assert doc.text == '[x]\n\n[a.b]\n  z = true\n# runc\n[a.b.c]\n  k = 1\n'


def test_set_on_a_missing_table_appends_it():
    doc = TomlDocument('top = 1\n', "t")
    doc.set(("new", "key"), "v")
    assert load(doc.text, "t") == {"top": 1, "new": {"key": "v"}}
    assert doc.text.startswith("top = 1\n")


def test_set_top_level_key_goes_before_the_tables():
    doc = TomlDocument('# c\n[a]\nx = 1\n', "t")
    doc.set(("version",), 2)
    assert doc.text == 'version = 2\n# c\n[a]\nx = 1\n'


def test_set_into_an_inline_table_is_refused_with_the_line():
    doc = TomlDocument('[a]\n  b = { c = 1 }\n', "t.toml")
    with pytest.raises(TomlEditError, match=r"t\.toml, line 2: a\.b is an inline table"):
        doc.set(("a", "b", "d"), 2)
    assert doc.text == '[a]\n  b = { c = 1 }\n'


def test_set_through_a_value_is_refused():
    doc = TomlDocument('a = 1\n', "t")
    with pytest.raises(TomlEditError, match="a must be a table, but it is a int"):
        doc.set(("a", "b"), 2)
    with pytest.raises(TomlEditError, match="is a table"):
        TomlDocument('[a.b]\n', "t").set(("a", "b"), 2)


def test_add_table_refuses_an_existing_one():
    with pytest.raises(TomlEditError, match="already exists"):
        TomlDocument('[a]\n', "t").add_table(("a",), {})


def test_crlf_files_stay_crlf():
    doc = TomlDocument('[a]\r\nx = 1\r\n', "t", journal=True)
    doc.set(("a", "y"), 2)
    assert doc.text == '[a]\r\nx = 1\r\n' + edit_journal.added_mark('y = 2') + '\r\n'
    assert doc.undo() == '[a]\r\nx = 1\r\n'


@pytest.mark.parametrize("text", ['[a]\nx = 1', '[a]\nx = 1\n', 'x = 1', '', '# only\n'])
def test_journal_gives_back_the_bytes_also_without_a_final_newline(text):
    doc = TomlDocument(text, "t", journal=True)
    doc.set(("a", "x"), 2)
    doc.add_table(("a", "sub"), {"k": "v", "deeper": {"z": 1}})
    doc.set(("b", "y"), [1, 2])
    assert load(doc.text, "t")["a"]["sub"]["deeper"] == {"z": 1}
    assert doc.text.endswith("\n") == (text.endswith("\n") or not text)
    assert TomlDocument(doc.text, "t", journal=True).undo() == text


def test_journal_records_a_multi_line_value_once():
    text = '[a]\nx = [\n  1,\n  2,\n]  # keep\n'
    doc = TomlDocument(text, "t", journal=True)
    doc.set(("a", "x"), [3])
    doc.set(("a", "x"), [4])
    assert doc.text.count(toml_edit.WAS) == 1
    assert TomlDocument(doc.text, "t", journal=True).undo() == text


def test_restore_one_key():
    doc = TomlDocument('[a]\nx = 1\n', "t", journal=True)
    doc.set(("a", "x"), 2)
    doc.set(("a", "y"), 3)
    assert doc.restore(("a", "x")) is True
    assert doc.restore(("a", "y")) is True
    assert doc.restore(("a", "y")) is False
    assert doc.restore(("a", "zz")) is False
    assert doc.text == '[a]\nx = 1\n'


def test_undo_without_an_end_marker_is_refused():
    text = "%s\n[a]\n" % toml_edit.BEGIN
    with pytest.raises(TomlEditError, match="has no end marker"):
        TomlDocument(text, "t", journal=True).undo()


def test_undo_that_would_break_the_file_is_refused():
    text = 'x = 1  # gpu_node.container_toolkit: was "[broken"\n'
    with pytest.raises(TomlEditError, match="would not leave valid TOML"):
        TomlDocument(text, "t", journal=True).undo()


def test_remove_key():
    doc = TomlDocument('[a]\nx = 1\ny = 2\n', "t")
    assert doc.remove_key(("a", "x")) is True
    assert doc.remove_key(("a", "x")) is False
    assert doc.text == '[a]\ny = 2\n'


def test_layout_of():
    nested = TomlDocument('[a]\n  [a.b]\n    x = 1\n', "t")
    assert nested.layout == ("  ", "  ")
    flat = TomlDocument('[a.b]\n  x = 1\n', "t")
    assert flat.layout == ("", "  ")
    assert TomlDocument('x = 1\n', "t").layout == ("", "")


def test_document_text():
    text = toml_edit.document_text({"version": 2, "a": {"b": {"c": 1}, "d": "x"}, "e": {}}, layout=("  ", "  "))
    assert load(text, "t") == {"version": 2, "a": {"b": {"c": 1}, "d": "x"}, "e": {}}


@pytest.mark.parametrize("text, message", [
    ("\ufeffx = 1\n", "starts with a UTF-8 byte order mark"),
    ("[a\n", "t is not valid TOML"),
])
def test_load_errors(text, message):
    with pytest.raises(TomlEditError, match=message):
        load(text, "t")


def test_parser_name(parser):
    assert toml_edit.parser_name().startswith(parser)


def test_missing_or_old_tomlkit_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(toml_edit, "PARSER", "tomlkit")
    monkeypatch.setattr(toml_edit, "HAS_TOMLKIT", False)
    with pytest.raises(TomlEditError, match=r"tomlkit is not installed.*pip install -r requirements.txt"):
        load("x = 1", "t")
    monkeypatch.setattr(toml_edit, "HAS_TOMLKIT", True)
    monkeypatch.setattr(toml_edit, "TOMLKIT_VERSION", "0.11.8")
    with pytest.raises(TomlEditError, match=r"tomlkit 0.11.8 is installed.*needs tomlkit >= 0.14.*pip install -r"):
        load("x = 1", "t")


class _TemplatedStr(str):
    """What ansible-core 2.19 can pass for a templated value: a subclass of str."""


class _TemplatedList(list):
    pass


def test_a_templated_value_equal_to_the_file_is_no_change():
    doc = TomlDocument('[nvidia-container-runtime]\nmode = "auto"\nruntimes = ["runc"]\n', "config.toml")
    assert doc.set(("nvidia-container-runtime", "mode"), _TemplatedStr("auto")) is False
    assert doc.set(("nvidia-container-runtime", "runtimes"), _TemplatedList([_TemplatedStr("runc")])) is False
    assert doc.set(("nvidia-container-runtime", "mode"), _TemplatedStr("cdi")) is True
    assert doc.data["nvidia-container-runtime"]["mode"].__class__ is str and 'mode = "cdi"' in doc.text
