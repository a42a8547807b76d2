# -*- coding: utf-8 -*-
"""The undo journal: texts journaled by the real editors give back their original bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal as ej
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlDocument, TomlEditError, load

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "containerd"
CONFIGS = sorted(p.name for p in FIXTURES.glob("*.toml"))


def params(**overrides):
    result = {
        "state": "present",
        "runtimes": rt.default_runtimes("/usr/local/nvidia/toolkit"),
        "runtime_type": cc.DEFAULT_RUNTIME_TYPE,
        "set_as_default": True,
        "enable_cdi": True,
        "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"],
        "config_version": "auto",
        "drop_in": None,
        "path": "/etc/containerd/config.toml",
    }
    result.update(overrides)
    return result


def variants(text):
    """The text as saved, with CRLF line ends, and without its final newline."""
    return {"lf": text, "crlf": text.replace("\n", "\r\n"), "no-final-newline": text.rstrip("\r\n")}


def edited(text):
    """``text`` after the edits a TomlDocument with a journal makes: replace, add keys, add tables."""
    doc = TomlDocument(text, "t.toml", journal=True)
    doc.set(("a", "x"), 2)
    doc.set(("a", "new"), "v")
    doc.add_table(("a", "sub"), {"k": "v", "deeper": {"z": 1}})
    doc.set(("b", "y"), [1, 2])
    assert doc.changed and ej.has_journal(doc.text)
    return doc.text


@pytest.mark.parametrize("text, expected", [
    (None, False), ("", False), ("x = 1\n", False), ("# gpu_node.container_toolkit\n", False),
    ("x = 1  %s\n" % ej.ADDED, True), (ej.END + "\n", True),
])
def test_has_journal(text, expected):
    assert ej.has_journal(text) is expected


@pytest.mark.parametrize("kind", ["lf", "crlf", "no-final-newline"])
@pytest.mark.parametrize("original", [
    '[a]\nx = 1\n',
    '# a comment\n[a]\nx = 1  # keep me\n\n[c]\nz = "q"\n',
    'top = true\n[a]\nx = 1\n[a.other]\nw = 3\n',
])
def test_toml_document_edits_are_given_back_byte_for_byte(original, kind):
    text = variants(original)[kind]
    journaled = edited(text)
    assert journaled != text
    if kind == "crlf":
        assert journaled.count("\n") == journaled.count("\r\n")
    assert journaled.endswith("\n") == (kind != "no-final-newline")
    assert ej.undo_text(journaled, "t.toml") == text
    assert ej.undo_lines(journaled.splitlines(True), "t.toml") == text
    # The controller's undo goes through the same function and agrees.
    assert TomlDocument(journaled, "t.toml", journal=True).undo() == text


@pytest.mark.parametrize("text", ["", "# only a comment\n", "x = 1", "x = 1\r\n"])
def test_small_files_including_empty_ones(text):
    journaled = edited(text)
    assert load(journaled, "t")["a"]["sub"]["deeper"] == {"z": 1}
    assert ej.undo_text(journaled, "t.toml") == text


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("kind", ["lf", "crlf", "no-final-newline"])
def test_containerd_edits_of_real_configs_are_given_back(name, kind):
    text = variants((FIXTURES / name).read_text())[kind]
    result = ct.edit(text, params())
    assert result["text"] != text and ej.has_journal(result["text"])
    assert ej.undo_text(result["text"], name) == text


def test_an_edit_of_an_edit_keeps_the_first_record():
    text = (FIXTURES / "gke-cos.toml").read_text()
    first = ct.edit(text, params())["text"]
    second = ct.edit(first, params(runtimes=rt.default_runtimes("/opt/toolkit"), set_as_default=False))["text"]
    assert second != first and "/opt/toolkit" in second
    assert ej.undo_text(second, "config.toml") == text


def test_a_file_created_from_nothing_gives_back_nothing():
    text = ct.edit(None, params(created_dirs=["/etc/containerd"]))["text"]
    assert text.startswith(ownership.CREATED)
    assert ownership.record_in_text(text)[1] == ["/etc/containerd"]
    assert ej.undo_text(text, "config.toml") == ""


@pytest.mark.parametrize("original", ['x = "a \\"quoted\\" \\\\ value"', "x = 'é ☃'", "\tx = 1   # with a comment"])
def test_a_replaced_line_comes_back_exactly(original):
    for ending in ("\n", "\r\n", ""):
        text = "[t]\n%s%s" % (original, ending)
        line = "x = 2  %s%s%s" % (ej.WAS, json.dumps(original, ensure_ascii=False), ending)
        assert ej.undo_text("[t]\n" + line, "t") == text


def test_indented_blocks_and_marks_with_trailing_blanks_are_recognised():
    text = ("[a]\n  x = 1\n  y = 2  %s  \n  %s\n  [a.b]\n  z = 1\n  %s\n[c]\n" % (ej.ADDED, ej.BEGIN, ej.END))
    assert ej.undo_text(text, "t") == "[a]\n  x = 1\n[c]\n"


def test_text_without_a_journal_is_unchanged():
    text = "# gpu_node.container_toolkit was here, but not as a mark\n[a]\r\nx = 1"
    assert ej.undo_text(text, "t") == text
    assert ej.undo_text(None, "t") == ""
    assert ej.undo_lines([], "t") == ""


def test_only_journal_lines_leave_nothing():
    text = "%s\n[a]\n%s\ny = 1  %s" % (ej.BEGIN, ej.END, ej.ADDED)
    assert ej.undo_text(text, "t") == ""


@pytest.mark.parametrize("text, line", [
    ("%s\n[a]\nx = 1\n" % ej.BEGIN, 1),
    ("[z]\nq = 1\n%s\n[a]\n%s\n  %s\n[b]\n" % (ej.BEGIN, ej.END, ej.BEGIN), 6),
    ("x = 1\r\n%s\r\n[a]" % ej.BEGIN, 2),
])
def test_a_begin_without_an_end_names_the_line(text, line):
    with pytest.raises(ej.JournalError) as caught:
        ej.undo_text(text, "/etc/containerd/config.toml")
    message = str(caught.value)
    assert message.startswith("/etc/containerd/config.toml, line %d: " % line)
    assert "has no end marker" in message and "remove the block by hand" in message
    assert isinstance(caught.value, ValueError)
    # The controller's editor says the same, as its own error.
    with pytest.raises(TomlEditError, match="line %d: the block started by" % line):
        TomlDocument(text, "/etc/containerd/config.toml", journal=True).undo()


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_an_added_last_line_without_a_newline_takes_the_newline_before_it(newline):
    doc = TomlDocument("x = 1", "t", journal=True)
    doc.set(("y",), 2)
    assert doc.text == "x = 1\n" + ej.added_mark("y = 2")
    assert ej.undo_text(doc.text, "t") == "x = 1"
    text = "[a]%sx = 1%sy = 2  %s" % (newline, newline, ej.ADDED)
    assert ej.undo_text(text, "t") == "[a]%sx = 1" % newline
