# -*- coding: utf-8 -*-
"""The in-place tomlkit edit of containerd configs, over containerd's own defaults and hand-made files."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest
import tomlkit

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import edit_journal, ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import runtimes as rt
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import containerd_toml as ct
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlEditError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "containerd"
DEFAULTS = {
    "1.6.20": ("containerd-1.6.20-default.toml", 2),
    "1.7.34": ("containerd-1.7.34-default.toml", 2),
    "2.0.11": ("containerd-2.0.11-default.toml", 3),
    "2.3.4": ("containerd-2.3.4-default.toml", 4),
}
HAND_MADE = {
    "gke-cos": ("gke-cos.toml", 2),
    "comments": ("comments-everywhere.toml", 2),
    "imports": ("imports.toml", 2),
    "v1": ("v1.toml", 1),
    # /etc/containerd/config.toml of Debian 12's containerd package: indented, no runtimes.
    "debian-12": ("debian-12-package.toml", 2),
}
ALL = dict(DEFAULTS, **HAND_MADE)


def fixture(name):
    return (FIXTURES / ALL[name][0]).read_text()


def params(**overrides):
    result = {
        "state": "present",
        "runtimes": rt.default_runtimes("/usr/local/nvidia/toolkit"),
        "runtime_type": cc.DEFAULT_RUNTIME_TYPE,
        "set_as_default": False,
        "enable_cdi": None,
        "cdi_spec_dirs": None,
        "config_version": "auto",
        "drop_in": None,
        "path": "/etc/containerd/config.toml",
    }
    result.update(overrides)
    return result


def runtimes_of(text, version):
    data = tomlkit.parse(text).unwrap()
    for key in cc.runtimes_table(version):
        data = data.get(key, {})
    return data


def containerd_of(text, version):
    data = tomlkit.parse(text).unwrap()
    for key in cc.containerd_table(version):
        data = data.get(key, {})
    return data


def changed_lines(before, after):
    return [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:2] in ("- ", "+ ")]


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("set_as_default", [False, True])
def test_present_then_absent_round_trip(name, set_as_default):
    text = fixture(name)
    version = ALL[name][1]
    wanted = params(set_as_default=set_as_default, enable_cdi=True, cdi_spec_dirs=["/etc/cdi", "/var/run/cdi"])
    first = ct.edit(text, wanted)
    assert first["version"] == version
    assert first["restart_required"] is True
    runtimes = runtimes_of(first["text"], version)
    for entry in rt.default_runtimes("/usr/local/nvidia/toolkit"):
        assert runtimes[entry["name"]]["runtime_type"] == "io.containerd.runc.v2"
        assert runtimes[entry["name"]]["options"]["BinaryName"] == entry["binary"]
        if version == 1:
            assert runtimes[entry["name"]]["options"]["Runtime"] == entry["binary"]
    default = containerd_of(first["text"], version).get("default_runtime_name")
    assert default == ("nvidia" if set_as_default else containerd_of(text, version).get("default_runtime_name"))
    # Nothing removed: every line of the original is still there.
    assert not [line for line in changed_lines(text, first["text"]) if line.startswith("- ")
                and "default_runtime_name" not in line and "enable_cdi" not in line]
    again = ct.edit(first["text"], wanted)
    assert again["text"] == first["text"]
    assert again["changes"] == [] and again["restart_required"] is False
    back = ct.edit(first["text"], params(state="absent"))
    assert back["text"] == text
    assert back["restart_required"] is True


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_inherits_template_options(name):
    text = fixture(name)
    version = ALL[name][1]
    runc = runtimes_of(text, version)["runc"]
    result = ct.edit(text, params())
    nvidia = runtimes_of(result["text"], version)["nvidia"]
    expected = dict(runc, runtime_type="io.containerd.runc.v2")
    expected["options"] = dict(runc["options"], BinaryName="/usr/local/nvidia/toolkit/nvidia-container-runtime")
    assert nvidia == expected
    assert {"path": "config.toml", "action": "updated", "setting": "runtime nvidia",
            "reason": "missing (added, copied from runc)"} in result["changes"]


def test_gke_cos_done_when():
    """The issue's "done when": comments kept, SystemdCgroup inherited, default untouched, CDI on."""
    text = fixture("gke-cos")
    install_dir = "/home/kubernetes/bin/nvidia/toolkit"
    result = ct.edit(text, params(runtimes=rt.default_runtimes(install_dir), enable_cdi=True))
    data = tomlkit.parse(result["text"]).unwrap()
    cri = data["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["enable_cdi"] is True
    assert cri["containerd"]["default_runtime_name"] == "runc"
    assert cri["cni"]["bin_dir"] == "/home/kubernetes/bin"
    for name in ("nvidia", "nvidia-cdi", "nvidia-legacy"):
        assert cri["containerd"]["runtimes"][name]["options"]["SystemdCgroup"] is True
        assert cri["containerd"]["runtimes"][name]["options"]["BinaryName"].startswith(install_dir + "/")
    for line in text.splitlines():
        if line.strip().startswith("#"):
            assert line in result["text"].splitlines()
    assert ct.edit(result["text"], params(runtimes=rt.default_runtimes(install_dir), enable_cdi=True))["changes"] == []
    assert ct.edit(result["text"], params(runtimes=rt.default_runtimes(install_dir), state="absent"))["text"] == text


def test_comments_everywhere_kept_and_diff_small():
    text = fixture("comments")
    result = ct.edit(text, params(runtimes=[{"name": "nvidia", "binary": "/x/nvidia-container-runtime"}]))
    diff = changed_lines(text, result["text"])
    assert all(line.startswith("+ ") for line in diff)
    for line in text.splitlines():
        assert line in result["text"].splitlines()
    assert runtimes_of(result["text"], 2)["nvidia"]["options"]["SystemdCgroup"] is True


def test_literal_strings_stay_literal_in_2x_files():
    text = fixture("2.0.11")
    result = ct.edit(text, params(set_as_default=True))
    assert "default_runtime_name = 'nvidia'" in result["text"]
    assert "runtime_type = 'io.containerd.runc.v2'" in result["text"].split("runtimes.nvidia]")[1]


def test_version_1_uses_plugins_cri():
    result = ct.edit(fixture("v1"), params())
    assert "[plugins.cri.containerd.runtimes.nvidia]" in result["text"]
    assert result["version"] == 1
    assert "version" not in tomlkit.parse(result["text"])


@pytest.mark.parametrize("text", [None, "", "\n\n", "# only a comment\n"])
def test_missing_or_empty_file(text):
    result = ct.edit(text, params(set_as_default=True))
    data = tomlkit.parse(result["text"]).unwrap()
    assert data["version"] == 2
    runtimes = data["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    # The runtimes table replaces containerd's built-in one: runc is kept, deliberately.
    assert runtimes["runc"] == {"runtime_type": "io.containerd.runc.v2"}
    assert any(c["setting"] == "runtime runc" and c["reason"].startswith("missing next to default_runtime_name")
               for c in result["changes"])
    back = ct.edit(result["text"], params(state="absent"))
    # The original bytes come back; a file created from nothing goes again (text None: remove it).
    assert back["text"] == text


@pytest.mark.parametrize("output, version, table", [
    ("containerd github.com/containerd/containerd/v2 v2.0.11 x", 3, "io.containerd.cri.v1.runtime"),
    ("containerd github.com/containerd/containerd/v2 v2.3.4 x", 4, "io.containerd.cri.v1.runtime"),
    ("containerd github.com/containerd/containerd 1.6.20~ds1 x", 2, "io.containerd.grpc.v1.cri"),
])
def test_empty_file_version_from_containerd(output, version, table):
    result = ct.edit("", params(), containerd_output=output)
    assert result["version"] == version
    assert tomlkit.parse(result["text"])["version"] == version
    assert table in tomlkit.parse(result["text"])["plugins"]


def test_no_runc_created_next_to_other_default():
    text = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "kata"\n'
    result = ct.edit(text, params())
    runtimes = runtimes_of(result["text"], 2)
    assert "runc" not in runtimes
    assert sorted(runtimes) == ["nvidia", "nvidia-cdi", "nvidia-legacy"]


def test_no_runc_created_when_only_binary_differs():
    text = fixture("1.6.20")
    first = ct.edit(text, params())
    moved = ct.edit(first["text"], params(runtimes=rt.default_runtimes("/opt/toolkit")))
    assert sorted(runtimes_of(moved["text"], 2)) == ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
    assert {"path": "config.toml", "action": "updated", "setting": "runtime nvidia BinaryName",
            "reason": "'/usr/local/nvidia/toolkit/nvidia-container-runtime' -> '/opt/toolkit/nvidia-container-runtime'"
            } in moved["changes"]


def test_existing_runtime_fixed_not_recopied():
    text = fixture("gke-cos")
    first = ct.edit(text, params())
    doc = tomlkit.parse(first["text"])
    runtimes = doc["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    runtimes["nvidia"]["runtime_type"] = "io.containerd.runc.v1"
    runtimes["nvidia"]["options"]["Extra"] = "kept"
    fixed = ct.edit(doc.as_string(), params())
    nvidia = runtimes_of(fixed["text"], 2)["nvidia"]
    assert nvidia["runtime_type"] == "io.containerd.runc.v2" and nvidia["options"]["Extra"] == "kept"
    assert fixed["changes"] == [{"path": "config.toml", "action": "updated", "setting": "runtime nvidia runtime_type",
                                 "reason": "'io.containerd.runc.v1' -> 'io.containerd.runc.v2'"}]


def test_set_as_default_recorded_and_restored():
    text = fixture("gke-cos")
    first = ct.edit(text, params(set_as_default=True))
    assert 'default_runtime_name = "nvidia"  # gpu_node.container_toolkit: was "  default_runtime_name = \\"runc\\""' \
        in first["text"]
    # A later run without set_as_default puts the recorded default back.
    second = ct.edit(first["text"], params(set_as_default=False))
    assert containerd_of(second["text"], 2)["default_runtime_name"] == "runc"
    assert {"path": "config.toml", "action": "updated", "setting": "default_runtime_name",
            "reason": "'nvidia' -> 'runc' (restored)"} in second["changes"]
    assert ct.edit(second["text"], params(state="absent"))["text"] == text


def test_set_as_default_keeps_first_record():
    text = fixture("gke-cos")
    first = ct.edit(text, params(set_as_default=True))
    other = ct.edit(first["text"], params(set_as_default=True, runtimes=[{"name": "gpu", "binary": "/b"}]))
    assert 'was "  default_runtime_name = \\"runc\\""' in other["text"]
    assert ct.edit(other["text"], params(state="absent"))["text"] == text
    assert containerd_of(other["text"], 2)["default_runtime_name"] == "gpu"


def test_cdi_spec_dirs_recorded():
    text = fixture("1.7.34")
    result = ct.edit(text, params(cdi_spec_dirs=["/var/run/cdi"], enable_cdi=True))
    cri = tomlkit.parse(result["text"]).unwrap()["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["cdi_spec_dirs"] == ["/var/run/cdi"] and cri["enable_cdi"] is True
    assert ct.edit(result["text"], params(state="absent"))["text"] == text


def test_comment_only_change_does_not_require_restart():
    text = fixture("gke-cos")
    first = ct.edit(text, params(set_as_default=True))
    hand_edited = first["text"].replace('discard_unpacked_layers = true', 'discard_unpacked_layers = true # mine', 1)
    assert hand_edited != first["text"]
    assert ct.edit(hand_edited, params(set_as_default=True))["restart_required"] is False


def test_absent_on_untouched_file_changes_nothing():
    text = fixture("1.6.20")
    result = ct.edit(text, params(state="absent"))
    assert result["text"] == text and result["changes"] == [] and result["restart_required"] is False


def test_absent_on_file_without_cri_table():
    text = 'version = 2\n[debug]\n  level = "info"\n'
    assert ct.edit(text, params(state="absent"))["text"] == text


@pytest.mark.parametrize("text, message", [
    ('version = 2\n[plugins\n', "is not valid TOML"),
    ('version = 5\n', "version 5 is not supported"),
    ('version = "2"\n', "must be an integer"),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\nruntimes = 3\n',
     'plugins."io.containerd.grpc.v1.cri".containerd.runtimes must be a table, but it is a int'),
    ('version = 2\nplugins = "x"\n', "plugins must be a table"),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\nnvidia = "x"\n',
     'containerd.runtimes.nvidia must be a table'),
])
def test_bad_input(text, message):
    with pytest.raises((cc.ConfigError, TomlEditError), match=message.replace(".", r"\.").replace('"', '"')):
        ct.edit(text, params())


def test_config_version_mismatch():
    with pytest.raises(cc.ConfigError, match="does not migrate"):
        ct.edit(fixture("1.6.20"), params(config_version="3"))


# --- drop-in mode ---------------------------------------------------------------------------

DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"


@pytest.mark.parametrize("name", ["1.6.20", "gke-cos", "2.0.11"])
def test_drop_in_carries_whole_cri_table_before_2_1(name):
    text = fixture(name)
    version = ALL[name][1]
    result = ct.edit(text, params(drop_in=DROP_IN, set_as_default=True))
    root = tomlkit.parse(result["text"]).unwrap()
    assert root["imports"][-1] == DROP_IN
    assert changed_lines(text, result["text"]) and all(
        "imports" in line for line in changed_lines(text, result["text"]))
    drop = tomlkit.parse(result["drop_in_text"]).unwrap()
    assert drop["version"] == version
    root_cri = root
    drop_cri = drop
    for key in cc.cri_table(version):
        root_cri, drop_cri = root_cri[key], drop_cri[key]
    # Everything of the root's CRI table is there (runc, sandbox image, CNI), plus ours.
    for key, value in root_cri.items():
        if key != "containerd":
            assert drop_cri[key] == value
    assert "runc" in drop_cri["containerd"]["runtimes"]
    assert drop_cri["containerd"]["default_runtime_name"] == "nvidia"
    assert drop_cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"].endswith("nvidia-container-runtime")
    again = ct.edit(result["text"], params(drop_in=DROP_IN, set_as_default=True), drop_in_text=result["drop_in_text"])
    assert again["text"] == result["text"] and again["drop_in_text"] == result["drop_in_text"]
    assert again["changes"] == [] and again["restart_required"] is False
    back = ct.edit(result["text"], params(drop_in=DROP_IN, state="absent"), drop_in_text=result["drop_in_text"])
    assert back["text"] == text and back["drop_in_text"] is None
    assert {"path": DROP_IN, "action": "removed"} in back["changes"]


def test_drop_in_version_4_holds_only_runtimes():
    text = fixture("2.3.4")
    result = ct.edit(text, params(drop_in=DROP_IN))
    drop = tomlkit.parse(result["drop_in_text"]).unwrap()
    cri = drop["plugins"]["io.containerd.cri.v1.runtime"]
    assert list(cri) == ["containerd"]
    assert sorted(cri["containerd"]["runtimes"]) == ["nvidia", "nvidia-cdi", "nvidia-legacy"]
    # Copied from the root's runc.
    assert cri["containerd"]["runtimes"]["nvidia"]["sandboxer"] == "podsandbox"
    assert drop["version"] == 4


def test_drop_in_import_glob_already_covers():
    text = fixture("imports")
    result = ct.edit(text, params(drop_in=DROP_IN))
    assert result["text"] == text
    assert result["drop_in_text"]
    back = ct.edit(text, params(drop_in=DROP_IN, state="absent"), drop_in_text=result["drop_in_text"])
    assert back["text"] == text and back["drop_in_text"] is None


def test_drop_in_missing_root():
    result = ct.edit(None, params(drop_in=DROP_IN))
    root = tomlkit.parse(result["text"]).unwrap()
    assert root == {"version": 2, "imports": [DROP_IN]}
    drop = tomlkit.parse(result["drop_in_text"]).unwrap()
    assert "runc" in drop["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    back = ct.edit(result["text"], params(drop_in=DROP_IN, state="absent"), drop_in_text=result["drop_in_text"])
    # Both were made from nothing: both go (None: remove the root; the drop-in goes in drop-in mode).
    assert back["text"] is None and back["drop_in_text"] is None


def test_drop_in_is_root():
    with pytest.raises(cc.ConfigError, match="root config itself"):
        ct.edit("", params(drop_in="/etc/containerd/config.toml"))


def test_drop_in_imports_not_a_list():
    with pytest.raises(cc.ConfigError, match="imports"):
        ct.edit('version = 2\nimports = "x"\n', params(drop_in=DROP_IN))


def test_drop_in_rewritten_when_hand_edited():
    text = fixture("gke-cos")
    result = ct.edit(text, params(drop_in=DROP_IN))
    edited = result["drop_in_text"].replace("/usr/local/nvidia/toolkit/nvidia-container-runtime\"", "/wrong\"")
    again = ct.edit(result["text"], params(drop_in=DROP_IN), drop_in_text=edited)
    assert again["drop_in_text"] == result["drop_in_text"]
    assert again["restart_required"] is True
    assert {"path": DROP_IN, "action": "updated", "reason": "differs"} in again["changes"]


def test_new_tables_and_keys_follow_the_files_indentation():
    text = fixture("debian-12")
    result = ct.edit(text, params(enable_cdi=True))
    lines = result["text"].splitlines()
    assert edit_journal.added_mark('        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]') in lines
    assert '          runtime_type = "io.containerd.runc.v2"' in lines
    assert edit_journal.added_mark('    enable_cdi = true') in lines
    flat = ct.edit(fixture("gke-cos"), params())["text"].splitlines()
    assert edit_journal.added_mark('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]') in flat
    assert '  BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"' in flat


# --- a file made from nothing: recorded as created, removed again with its directories -------

def test_created_file_records_the_directories_and_absent_removes_both():
    made = ct.edit(None, params(created_dirs=["/etc", "/etc/containerd"]))
    first = made["text"].splitlines()[0]
    assert first.startswith("# gpu_node.container_toolkit: created")
    assert first.endswith('["/etc", "/etc/containerd"]')
    assert ownership.record_in_text(made["text"])[1] == ["/etc", "/etc/containerd"]
    # A re-run changes nothing, the record included.
    assert ct.edit(made["text"], params())["text"] == made["text"]
    back = ct.edit(made["text"], params(state="absent"), name="/etc/containerd/config.toml")
    assert back["text"] is None
    assert back["remove_dirs"] == [("/etc/containerd/config.toml", ["/etc", "/etc/containerd"])]
    assert {"path": "/etc/containerd/config.toml", "action": "removed", "reason": "created by this module"} in back["changes"]
    assert back["restart_required"]


def test_created_file_with_the_users_own_lines_stays():
    made = ct.edit(None, params(created_dirs=["/etc/containerd"]))
    own = made["text"] + "# kept by the operator\noom_score = -999\n"
    back = ct.edit(own, params(state="absent"))
    # Only this module's lines go (the created record too); the file and its directory stay.
    assert back["text"] == "# kept by the operator\noom_score = -999\n"
    assert back["remove_dirs"] == []


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n"])
def test_existing_blank_file_is_given_back_not_removed(text):
    made = ct.edit(text, params(created_dirs=["/etc/containerd"]))
    assert ownership.record_in_text(made["text"]) is None  # it existed: not ours to remove
    back = ct.edit(made["text"], params(state="absent"))
    assert back["text"] == text and back["remove_dirs"] == []


def test_created_drop_in_records_its_directory_and_keeps_it_when_rewritten():
    made = ct.edit(fixture("gke-cos"), params(drop_in=DROP_IN, drop_in_created_dirs=["/etc/containerd/conf.d"]))
    assert ownership.record_in_text(made["drop_in_text"])[1] == ["/etc/containerd/conf.d"]
    assert ownership.record_in_text(made["text"]) is None
    edited = made["drop_in_text"].replace('/usr/local/nvidia/toolkit/nvidia-container-runtime"', '/wrong"')
    again = ct.edit(made["text"], params(drop_in=DROP_IN), drop_in_text=edited)
    assert again["drop_in_text"] != edited
    assert ownership.record_in_text(again["drop_in_text"])[1] == ["/etc/containerd/conf.d"]
    back = ct.edit(made["text"], params(drop_in=DROP_IN, state="absent"), drop_in_text=again["drop_in_text"])
    assert back["text"] == fixture("gke-cos") and back["drop_in_text"] is None
    assert back["remove_dirs"] == [(DROP_IN, ["/etc/containerd/conf.d"])]


def test_journal_undo_drops_the_created_record():
    made = ct.edit(None, params(created_dirs=["/etc/containerd"]))
    assert edit_journal.undo_text(made["text"], "config.toml") == ""


@pytest.mark.parametrize("text", [
    "# gpu_node.container_toolkit: created; then these directories when empty: not json\n",
    '# gpu_node.container_toolkit: created; then these directories when empty: ["relative/dir"]\n',
    '# someone wrote: ["/etc/containerd"]\n',
])
def test_a_damaged_or_foreign_created_record_counts_as_none(text):
    assert ownership.record_in_text(text) is None
    back = ct.edit(text + "version = 2\n", params(state="absent"))
    assert back["text"] is not None and back["remove_dirs"] == []


KATA = ('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
        '  runtime_type = "io.containerd.kata.v2"\n')


@pytest.mark.parametrize("where", ["after our first table", "at the end of our block"])
def test_absent_refuses_to_take_away_a_runtime_someone_put_inside_its_block(where):
    """Another tool inserted kata between this module's begin and end markers: undo would lose it."""
    original = fixture("gke-cos")
    present = ct.edit(original, params(set_as_default=True))["text"]
    lines = present.splitlines(True)
    if where == "after our first table":
        at = next(i for i, line in enumerate(lines) if "runtimes.nvidia-cdi]" in line)
    else:
        at = next(i for i, line in enumerate(lines) if line.strip() == edit_journal.END)
    hand = "".join(lines[:at] + [KATA] + lines[at:])
    with pytest.raises(TomlEditError, match=r"runtime kata sits inside the lines this module added .* the file was "
                                            r"left as it was"):
        ct.edit(hand, params(state="absent"))
    # Moved out of the block, it stays, and everything of this module goes.
    moved = present + "\n" + KATA
    assert ct.edit(moved, params(state="absent"))["text"] == original + "\n" + KATA


@pytest.mark.parametrize("value", ['"kata"', '"runc"  # set back by hand'])
def test_absent_leaves_a_default_runtime_changed_by_hand_and_says_so(value):
    original = fixture("gke-cos")
    present = ct.edit(original, params(set_as_default=True))["text"]
    line = next(line for line in present.splitlines() if "default_runtime_name" in line)
    assert 'default_runtime_name = "nvidia"' in line and "(wrote " in line
    hand = present.replace(line, line.replace('"nvidia"', value, 1))
    result = ct.edit(hand, params(state="absent"))
    assert "default_runtime_name = %s" % value in result["text"] and "gpu_node.container_toolkit" not in result["text"]
    assert any("was changed by hand since this module wrote it; it was left as it is" in w for w in result["warnings"])
    # Everything else this module wrote is given back.
    assert result["text"] == original.replace('default_runtime_name = "runc"', "default_runtime_name = %s" % value, 1)


def test_a_file_written_before_marks_had_digests_is_still_given_back():
    original = fixture("gke-cos")
    present = ct.edit(original, params(set_as_default=True))["text"]
    old_style = re.sub(r" \(wrote [0-9a-f]{8}\)", "", present)
    old_style = re.sub(r"(\])  # gpu_node\.container_toolkit: added", r"\1", old_style)
    assert "(wrote" not in old_style
    assert ct.edit(old_style, params(state="absent"))["text"] == original
