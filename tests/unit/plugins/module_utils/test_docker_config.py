# -*- coding: utf-8 -*-
"""docker_config: parse daemon.json keeping the user's bytes, decide the edit, give the original back.

The fixtures are documented daemon.json files (tests/fixtures/docker/SOURCES.md names each source).
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import argument_specs, json_edit
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import docker_config as dc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "docker"
TOOLKIT = "/usr/local/nvidia/toolkit"
NVIDIA = {
    "nvidia": TOOLKIT + "/nvidia-container-runtime",
    "nvidia-cdi": TOOLKIT + "/nvidia-container-runtime.cdi",
    "nvidia-legacy": TOOLKIT + "/nvidia-container-runtime.legacy",
}
# fixture -> the indentation one level adds in it (None: a one-line file)
LAYOUTS = {
    "nvidia-ctk-configured.json": "    ",
    "nvidia-container-runtime-readme.json": "    ",
    "docker-docs-logging.json": "  ",
    "docker-docs-runtimes.json": "  ",
    "registry-mirror-tabs.json": "\t",
    "one-line.json": None,
}


def fixture(name):
    return (FIXTURES / name).read_text()


def params(state="present", **overrides):
    result = {
        "state": state,
        "runtimes": rt.normalize_runtimes(None, TOOLKIT, dc.RESERVED_RUNTIME_NAMES),
        "set_as_default": False,
        "enable_cdi": None,
        "created_dirs": [],
    }
    result.update(overrides)
    return result


def present(text, journal=None, **overrides):
    return dc.plan(text, params(**overrides), journal)


def absent(text, journal, **overrides):
    return dc.plan(text, params("absent", **overrides), journal)


def only_insertions(before, after):
    """Every character of ``before`` is still in ``after``, in order: nothing of the user's was
    deleted or replaced."""
    ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    return [op for op in ops if op[0] in ("delete", "replace")] == []


# --- parse: what is refused, and how the error reads ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[]", ["must hold one JSON object", "an array", "line 1, column 1"]),
        ('"x"', ["must hold one JSON object", "a string"]),
        ('{\n  "debug": true,\n  "debug": false\n}\n', ["duplicate key 'debug'", "top-level object", "line 3, column 3"]),
        ('{"runtimes": {"a": {"path": "/x", "path": "/y"}}}', ["duplicate key 'path'", "runtimes.a"]),
        ('{"x": [{"k": 1, "k": 2}]}', ["duplicate key 'k'", "inside x"]),
        ('{\n  "debug": true,\n}\n', ["expected a quoted key", "line 3"]),
        ('{"debug": tru}', ["not valid JSON"]),
        ('{"debug": NaN}', ["not valid JSON"]),
        ('{"a": 1} {"b": 2}', ["text after the end of the top-level object"]),
        ('{"a": 1', ["expected ',' or '}'"]),
        ("\ufeff{}", ["byte order mark"]),
        ('{\n  "runtimes": []\n}', ["runtimes must be an object", "an array", "line 2, column 3", "dockerd would not start"]),
        ('{"runtimes": {"nvidia": "/usr/bin/nvidia-container-runtime"}}', ["runtimes.nvidia must be an object", "a string"]),
        ('{"runtimes": {"nvidia": {"path": 1}}}', ["runtimes.nvidia.path must be a string", "a number"]),
        ('{"features": ["cdi"]}', ["features must be an object of booleans", "an array"]),
        ('{"features": {"cdi": "true"}}', ["features.cdi must be a boolean", "a string"]),
        ('{"default-runtime": null}', ["default-runtime must be a string", "null"]),
    ],
)
def test_refused_with_the_path_and_the_place(text, words):
    with pytest.raises(dc.ConfigError) as caught:
        present(text)
    message = str(caught.value)
    assert message.startswith(dc.DEFAULT_PATH)
    for word in words:
        assert word in message, message


def test_empty_and_blank_files_parse_as_nothing():
    assert dc.parse(None) is None and dc.parse("") is None and dc.parse(" \n\t") is None
    assert dc.load("") == {}


def test_reserved_runtime_name_is_refused_before_dockerd_would():
    with pytest.raises(dc.ConfigError, match="'runc' is reserved"):
        rt.normalize_runtimes([{"name": "runc", "binary": "/usr/bin/runc"}], TOOLKIT, dc.RESERVED_RUNTIME_NAMES)
    with pytest.raises(dc.ConfigError, match="listed twice"):
        rt.normalize_runtimes([{"name": "a", "binary": "/a"}, {"name": "a", "binary": "/b"}], TOOLKIT, dc.RESERVED_RUNTIME_NAMES)
    assert rt.normalize_runtimes(None, "/home/kubernetes/bin/nvidia/toolkit", dc.RESERVED_RUNTIME_NAMES)[0] == {
        "name": "nvidia",
        "binary": "/home/kubernetes/bin/nvidia/toolkit/nvidia-container-runtime",
    }


def test_journal_path_is_a_hidden_file_next_to_the_config():
    assert dc.journal_path("/etc/docker/daemon.json") == "/etc/docker/.daemon.json.gpu_node.container_toolkit.json"
    assert dc.journal_path("etc//docker/../docker/d.json") == "/etc/docker/.d.json.gpu_node.container_toolkit.json"


# --- present, present again, absent: on every fixture --------------------------------------------


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_each_fixture_round_trip(name):
    original = fixture(name)
    first = present(original, set_as_default=True, enable_cdi=True)
    data = dc.load(first["text"])
    for runtime, binary in NVIDIA.items():
        assert data["runtimes"][runtime]["path"] == binary
    assert data["default-runtime"] == "nvidia"
    assert data["features"]["cdi"] is True
    assert first["restart_required"] is True
    # Everything that was there is still there, with the values it had (besides what was asked).
    before = json.loads(original)
    for key, value in before.items():
        if key not in ("runtimes", "default-runtime", "features"):
            assert data[key] == value
    for key, value in (before.get("runtimes") or {}).items():
        if key not in NVIDIA:
            assert data["runtimes"][key] == value
    assert data.get("features", {}).get("buildkit", True) is True

    again = present(first["text"], first["journal_text"], set_as_default=True, enable_cdi=True)
    assert again["text"] == first["text"] and again["journal_text"] == first["journal_text"]
    assert again["changes"] == [] and again["restart_required"] is False

    removed = absent(first["text"], first["journal_text"])
    assert removed["text"] == original
    assert removed["journal_text"] is None and removed["restart_required"] is True
    assert {"path": dc.journal_path(dc.DEFAULT_PATH), "action": "removed", "reason": "this module's journal"} in removed["changes"]
    once_more = absent(original, None)
    assert once_more["text"] == original and once_more["changes"] == [] and once_more["restart_required"] is False


# The two NVIDIA files already hold a runtime nvidia, whose path is replaced (the test below).
@pytest.mark.parametrize("name", sorted(n for n in LAYOUTS if not n.startswith("nvidia-")))
def test_fixture_bytes_kept_and_indentation_followed(name):
    original = fixture(name)
    edited = present(original, enable_cdi=True)["text"]
    assert only_insertions(original, edited)
    unit = LAYOUTS[name]
    if unit is None:
        assert "\n" not in edited
        assert '"nvidia":{"path":"%s","args":[]}' % NVIDIA["nvidia"] in edited
        return
    # Each added runtime sits one unit deeper than "runtimes", itself at one unit (or where it was).
    lines = edited.splitlines()
    runtimes_line = next(line for line in lines if line.lstrip().startswith('"runtimes"'))
    level = runtimes_line[: len(runtimes_line) - len(runtimes_line.lstrip())]
    assert level == unit
    assert level + unit + '"nvidia-cdi": {' in lines
    assert level + unit + unit + '"path": "%s",' % NVIDIA["nvidia-cdi"] in lines
    assert level + unit + unit + '"args": []' in lines
    assert edited.endswith("}\n")


def test_an_existing_nvidia_runtime_keeps_its_keys_only_the_path_changes():
    original = fixture("nvidia-container-runtime-readme.json")
    result = present(original)
    data = dc.load(result["text"])
    assert data["runtimes"]["nvidia"] == {"path": NVIDIA["nvidia"], "runtimeArgs": []}
    assert {"path": dc.DEFAULT_PATH, "action": "updated", "setting": "runtime nvidia path",
            "reason": '"/usr/bin/nvidia-container-runtime" -> "%s"' % NVIDIA["nvidia"]} in result["changes"]
    assert absent(result["text"], result["journal_text"])["text"] == original


def test_nothing_to_do_writes_no_journal():
    """nvidia-ctk's own file, asked for what it already holds: no change, no journal."""
    original = fixture("nvidia-ctk-configured.json")
    result = present(original, runtimes=[{"name": "nvidia", "binary": "nvidia-container-runtime"}])
    assert result["text"] == original and result["journal_text"] is None and result["changes"] == []
    removed = absent(original, None)
    assert removed["text"] == original and removed["changes"] == []
    assert removed["warnings"] == [
        "%s: runtime nvidia was not added by this module (there is no journal %s); it was left as it is" % (dc.DEFAULT_PATH, dc.journal_path(dc.DEFAULT_PATH))
    ]


def test_created_file_is_removed_with_the_directories_it_made():
    result = present(None, created_dirs=["/etc/docker"], set_as_default=True)
    assert result["text"].startswith('{\n    "runtimes": {\n        "nvidia": {\n')
    journal = json.loads(result["journal_text"])
    assert journal["original"] is None and journal["created_dirs"] == ["/etc/docker"]
    assert journal["written_sha256"] == dc.sha256(result["text"])
    removed = absent(result["text"], result["journal_text"])
    assert removed["text"] is None and removed["journal_text"] is None
    assert removed["remove_dirs"] == [("/etc/docker/daemon.json", ["/etc/docker"])]
    assert {"path": "/etc/docker/daemon.json", "action": "removed", "reason": "created by this module"} in removed["changes"]


def test_an_empty_file_gets_its_empty_bytes_back():
    result = present("\n")
    assert dc.load(result["text"])["runtimes"]["nvidia"]["path"] == NVIDIA["nvidia"]
    removed = absent(result["text"], result["journal_text"])
    assert removed["text"] == "\n" and removed["remove_dirs"] == []


def test_crlf_file_stays_crlf():
    original = '{\r\n  "debug": true\r\n}\r\n'
    edited = present(original)["text"]
    assert "\n" not in edited.replace("\r\n", "")
    assert '\r\n  "runtimes": {\r\n    "nvidia": {\r\n' in edited


def test_set_as_default_false_gives_the_previous_default_back():
    original = fixture("docker-docs-runtimes.json")
    made_default = present(original, set_as_default=True)
    assert dc.load(made_default["text"])["default-runtime"] == "nvidia"
    assert {"path": dc.DEFAULT_PATH, "action": "updated", "setting": "default-runtime", "reason": '"runc" -> "nvidia"'} in made_default["changes"]
    undone = present(made_default["text"], made_default["journal_text"])
    assert dc.load(undone["text"])["default-runtime"] == "runc"
    assert {"path": dc.DEFAULT_PATH, "action": "updated", "setting": "default-runtime",
            "reason": '"nvidia" -> "runc" (restored: set_as_default is false)'} in undone["changes"]
    assert [e["key"] for e in json.loads(undone["journal_text"])["edits"]] == [
        ["runtimes", "nvidia"],
        ["runtimes", "nvidia-cdi"],
        ["runtimes", "nvidia-legacy"],
    ]
    assert absent(undone["text"], undone["journal_text"])["text"] == original


def test_enable_cdi_false_and_back():
    original = '{\n  "features": {\n    "cdi": true,\n    "buildkit": true\n  }\n}\n'
    off = present(original, enable_cdi=False)
    assert dc.load(off["text"])["features"] == {"cdi": False, "buildkit": True}
    assert {"path": dc.DEFAULT_PATH, "action": "updated", "setting": "features.cdi", "reason": "true -> false"} in off["changes"]
    untouched = present(off["text"], off["journal_text"])
    assert untouched["changes"] == []
    assert absent(off["text"], off["journal_text"])["text"] == original


def test_changed_since_absent_undoes_only_what_is_still_ours():
    original = fixture("docker-docs-logging.json")
    first = present(original, set_as_default=True, enable_cdi=True)
    # Someone adds a key and points nvidia-legacy elsewhere.
    user = json_edit.set_value(first["text"], ("debug",), True, "daemon.json")
    user = json_edit.set_value(user, ("runtimes", "nvidia-legacy", "path"), "/opt/legacy", "daemon.json")
    removed = absent(user, first["journal_text"])
    data = dc.load(removed["text"])
    assert data["debug"] is True
    assert data["runtimes"] == {"nvidia-legacy": {"path": "/opt/legacy", "args": []}}
    assert "default-runtime" not in data and "features" not in data
    assert data["log-opts"] == {"max-size": "10m", "max-file": "3"}
    assert removed["warnings"] == ["%s: runtimes.nvidia-legacy was changed since this module set it; kept as it is now" % dc.DEFAULT_PATH]
    assert removed["journal_text"] is None
    assert {"path": dc.DEFAULT_PATH, "action": "updated", "setting": "runtime nvidia", "reason": "added by this module (removed)"} in removed["changes"]


def test_changed_since_on_a_created_file_removes_it_only_when_empty():
    first = present(None, created_dirs=["/etc/docker"])
    bare = absent(json_edit.set_value(first["text"], ("debug",), True, "daemon.json"), first["journal_text"])
    assert dc.load(bare["text"]) == {"debug": True} and bare["remove_dirs"] == []
    # Reformatted by someone (same content, other bytes): nothing of anyone else's, so it goes.
    reformatted = json.dumps(json.loads(first["text"]), indent=1)
    gone = absent(reformatted, first["journal_text"])
    assert gone["text"] is None and gone["remove_dirs"] == [("/etc/docker/daemon.json", ["/etc/docker"])]


def test_absent_refuses_to_leave_a_default_runtime_that_does_not_exist():
    first = present(fixture("docker-docs-logging.json"))
    user = json_edit.set_value(first["text"], ("default-runtime",), "nvidia", "daemon.json")
    with pytest.raises(dc.ConfigError, match=r"default-runtime is 'nvidia'.*does not exist"):
        absent(user, first["journal_text"])


def test_rewritten_file_rebases_the_journal():
    """The file was replaced by someone else (our runtimes gone): present starts afresh from it, and
    absent then gives back that file, not the one of the first run."""
    first = present(fixture("docker-docs-logging.json"), set_as_default=True)
    replaced = fixture("registry-mirror-tabs.json")
    second = present(replaced, first["journal_text"], set_as_default=True)
    journal = json.loads(second["journal_text"])
    assert journal["original"] == replaced
    assert absent(second["text"], second["journal_text"])["text"] == replaced


def test_partly_changed_file_rebases_to_the_file_without_our_members():
    original = fixture("docker-docs-logging.json")
    first = present(original)
    user = json_edit.delete_member(first["text"], ("runtimes", "nvidia-cdi"), "daemon.json")
    user = json_edit.set_value(user, ("debug",), True, "daemon.json")
    second = present(user, first["journal_text"])
    assert sorted(dc.load(second["text"])["runtimes"]) == sorted(NVIDIA)
    expected = dict(json.loads(original), debug=True)
    assert json.loads(json.loads(second["journal_text"])["original"]) == expected
    assert json.loads(absent(second["text"], second["journal_text"])["text"]) == expected


def test_a_stale_journal_of_a_missing_file_is_dropped():
    first = present(None, created_dirs=["/etc/docker"])
    again = present(None, first["journal_text"], created_dirs=[])
    assert json.loads(again["journal_text"])["created_dirs"] == []
    gone = absent(None, first["journal_text"])
    assert gone["text"] is None and gone["journal_text"] is None
    assert gone["changes"] == [{"path": dc.journal_path(dc.DEFAULT_PATH), "action": "removed",
                                "reason": "this module's journal, stale: it describes edits no longer in the file"}]


@pytest.mark.parametrize("journal", ["not json", "[]", '{"format": 99, "edits": []}', '{"format": 1, "edits": [{"key": []}]}'])
def test_damaged_journal_is_refused_naming_it(journal):
    with pytest.raises(dc.ConfigError) as caught:
        present(fixture("docker-docs-logging.json"), journal)
    assert str(caught.value).startswith(dc.journal_path(dc.DEFAULT_PATH) + " is not a journal")


# --- the text edits themselves ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path", "value", "expected"),
    [
        ("{}", ("a",), 1, '{\n    "a": 1\n}'),
        ('{"x": {}}', ("x", "a"), 1, '{"x": {"a": 1}}'),
        ('{\n  "x": {}\n}', ("x", "a"), [], '{\n  "x": {\n    "a": []\n  }\n}'),
        ('{\n  "x": 1\n}', ("x",), {"k": "v"}, '{\n  "x": {\n    "k": "v"\n  }\n}'),
        ('{ "x" : 1 , "y" : 2 }', ("z",), True, '{ "x" : 1 , "y" : 2 , "z" : true }'),
        ('{\n\t"x": 1\n}', ("y", "z"), "w", '{\n\t"x": 1,\n\t"y": {\n\t\t"z": "w"\n\t}\n}'),
    ],
)
def test_set_value(text, path, value, expected):
    assert json_edit.set_value(text, path, value, "daemon.json") == expected


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        ('{\n  "a": 1,\n  "b": 2\n}', ("a",), '{\n  "b": 2\n}'),
        ('{\n  "a": 1,\n  "b": 2\n}', ("b",), '{\n  "a": 1\n}'),
        ('{\n  "a": 1\n}', ("a",), "{}"),
        ('{"a": {"b": 1, "c": 2}}', ("a", "c"), '{"a": {"b": 1}}'),
        ('{"a": 1}', ("missing",), '{"a": 1}'),
    ],
)
def test_delete_member(text, path, expected):
    assert json_edit.delete_member(text, path, "daemon.json") == expected


def test_set_value_refuses_to_descend_into_a_scalar():
    with pytest.raises(dc.ConfigError, match="log-opts is a string, not an object"):
        json_edit.set_value('{"log-opts": "x"}', ("log-opts", "max-size"), "1m", "daemon.json")


def test_argument_spec_matches_the_documented_options():
    spec = argument_specs.docker_runtime()
    assert sorted(spec) == ["backup", "enable_cdi", "host_root", "install_dir", "path", "read_ahead", "remove_backups", "runtimes",
                            "set_as_default", "state"]
    assert spec["path"]["default"] == "/etc/docker/daemon.json"


def test_backup_pattern_matches_the_copies_of_the_file_and_its_journal_only():
    pattern = re.compile(dc.backup_pattern("/etc/docker/daemon.json"))
    assert pattern.match("daemon.json.123.2024-01-01@10:00:00~")
    assert pattern.match(".daemon.json.gpu_node.container_toolkit.json.9.2024-01-01@10:00:00~")
    assert not pattern.match("daemon.json")
    assert not pattern.match("daemon.json.bak")
    assert not pattern.match("other.json.123.2024-01-01@10:00:00~")
    assert not pattern.match("daemon-json.123.2024-01-01@10:00:00~")


def test_own_backups_are_journal_copies_and_texts_this_module_wrote():
    original = '{"log-level": "warn"}\n'
    first = present(original)
    second = present(first["text"], first["journal_text"], set_as_default=True)
    d = "/etc/docker/"
    backups = {
        d + "daemon.json.1.2024-01-01@10:00:00~": original,
        d + "daemon.json.2.2024-01-01@10:00:01~": first["text"],
        d + ".daemon.json.gpu_node.container_toolkit.json.2.2024-01-01@10:00:01~": first["journal_text"],
        d + "daemon.json.3.2024-01-01@10:00:02~": second["text"],
        d + ".daemon.json.gpu_node.container_toolkit.json.3.2024-01-01@10:00:02~": second["journal_text"],
        d + "daemon.json.4.2020-01-01@00:00:00~": '{"debug": true}\n',  # someone else's
        d + "daemon.json.5.2020-01-01@00:00:00~": None,  # unreadable: not ours to judge
    }
    ours, dirs = dc.own_backups("/etc/docker/daemon.json", backups, original)
    assert ours == sorted(list(backups)[:5]) and dirs == []
    # Without the journal copies, only the original's copy is recognised.
    only_files = {k: v for k, v in backups.items() if "gpu_node" not in k}
    assert dc.own_backups("/etc/docker/daemon.json", only_files, original)[0] == [d + "daemon.json.1.2024-01-01@10:00:00~"]


def test_own_backups_name_the_directories_a_created_file_needed():
    created = dc.plan(None, params(created_dirs=["/etc", "/etc/docker"]))
    copy = "/etc/docker/.daemon.json.gpu_node.container_toolkit.json.1.2024-01-01@10:00:00~"
    ours, dirs = dc.own_backups("/etc/docker/daemon.json", {copy: created["journal_text"]}, None)
    assert ours == [copy] and dirs == ["/etc", "/etc/docker"]
    # A damaged journal copy is still a copy of the journal, and names no directory.
    assert dc.own_backups("/etc/docker/daemon.json", {copy: "{"}, None) == ([copy], [])
