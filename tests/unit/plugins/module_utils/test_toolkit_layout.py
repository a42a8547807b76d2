from __future__ import annotations

import hashlib
import json
import shutil
import subprocess

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_fs
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_layout as tl

INSTALL = "/home/kubernetes/bin/nvidia/toolkit"
BINS = [name for name, _kind in tl.WRAPPED] + list(tl.PLAIN)


def f():
    return {"type": "file"}


def link(target):
    return {"type": "symlink", "target": target}


def deb_tree(lib_dir="usr/lib/x86_64-linux-gnu", version="1.14.3", bins=BINS):
    tree = {"usr": {"type": "dir"}, "usr/bin": {"type": "dir"}}
    for name in bins:
        tree["usr/bin/" + name] = f()
    for lib in tl.LIBRARIES:
        tree["%s/%s.so.%s" % (lib_dir, lib, version)] = f()
        tree["%s/%s.so.1" % (lib_dir, lib)] = link("%s.so.%s" % (lib, version))
    return tree


@pytest.mark.parametrize("tree, path, expected", [
    ({"a": f()}, "a", "a"),
    ({"a": link("b"), "b": f()}, "a", "b"),
    ({"d/a": link("../e/b"), "e/b": f()}, "d/a", "e/b"),
    ({"d/a": link("/e/b"), "e/b": f()}, "d/a", "e/b"),
    ({"a": link("../../x")}, "a", None),
    ({"a": link("missing")}, "a", None),
    ({"a": {"type": "directory"}}, "a", None),
    ({}, "a", None),
    ({"d/a": link("")}, "d/a", None),
])
def test_resolve(tree, path, expected):
    assert tl.resolve(tree, path) == expected


def test_resolve_loop():
    with pytest.raises(tl.LayoutError, match="too many levels"):
        tl.resolve({"a": link("b"), "b": link("a")}, "a")


def test_resolve_has_node_fs_hop_limit():
    assert tl.MAX_LINK_HOPS is node_fs.MAX_LINK_HOPS

    def chain(hops):
        tree = {"l%d" % i: link("l%d" % (i + 1)) for i in range(hops)}
        tree["l%d" % hops] = f()
        return tree

    # As node_fs.NodeRoot.resolve: MAX_LINK_HOPS links are followed, one more is an error.
    assert tl.resolve(chain(node_fs.MAX_LINK_HOPS), "l0") == "l%d" % node_fs.MAX_LINK_HOPS
    with pytest.raises(tl.LayoutError, match="too many levels"):
        tl.resolve(chain(node_fs.MAX_LINK_HOPS + 1), "l0")


@pytest.mark.parametrize("tree, lib_dir", [
    (deb_tree(), "usr/lib/x86_64-linux-gnu"),
    (deb_tree("usr/lib64"), "usr/lib64"),
    (deb_tree("lib64"), "lib64"),
])
def test_select_sources_package_layouts(tree, lib_dir):
    sources, missing = tl.select_sources(tree)
    assert missing == []
    assert sources["nvidia-ctk"] == "usr/bin/nvidia-ctk"
    assert sources["libnvidia-container.so.1.14.3"] == lib_dir + "/libnvidia-container.so.1.14.3"
    assert sources["libnvidia-container-go.so.1.14.3"] == lib_dir + "/libnvidia-container-go.so.1.14.3"


def test_select_sources_flat_newest_and_missing():
    tree = {"nvidia-ctk": f(), "libnvidia-container.so.1.9.0": f(), "libnvidia-container.so.1.10.0": f(),
            "libnvidia-container.so.1": link("libnvidia-container.so.1.10.0"), "README": f()}
    sources, missing = tl.select_sources(tree)
    assert sources == {"nvidia-ctk": "nvidia-ctk", "libnvidia-container.so.1.10.0": "libnvidia-container.so.1.10.0"}
    assert "nvidia-container-runtime" in missing and "libnvidia-container-go.so.*" in missing


def test_select_sources_follows_links():
    tree = {"usr/bin/nvidia-ctk": link("../libexec/ctk"), "usr/libexec/ctk": f(),
            "usr/bin/nvidia-cdi-hook": link("/opt/x")}
    sources, _missing = tl.select_sources(tree)
    assert sources["nvidia-ctk"] == "usr/libexec/ctk"
    assert "nvidia-cdi-hook" not in sources


@pytest.mark.parametrize("text, quoted", [
    ("/a b", "'/a b'"),
    ("it's", "'it'\\''s'"),
    ("$HOME", "'$HOME'"),
])
def test_quote(text, quoted):
    assert tl.quote(text) == quoted


def wrappers(install_dir=INSTALL, fallback="runc", config=None):
    return {kind: tl.render_wrapper(kind, install_dir, install_dir + "/x.real", fallback, config)
            for kind in ("runtime", "hook", "ctk", "cli")}


def test_wrapper_contents():
    w = wrappers()
    assert w["runtime"].startswith("#!/bin/sh\n")
    assert "exec 'runc' \"$@\"" in w["runtime"]
    assert "grep -q '^nvidia ' /proc/modules" in w["runtime"]
    config = "NVIDIA_CTK_CONFIG_FILE_PATH='%s/.config/nvidia-container-runtime/config.toml'" % INSTALL
    assert config in w["runtime"] and config in w["hook"]
    assert "NVIDIA_CTK" not in w["ctk"] and "NVIDIA_CTK" not in w["cli"]
    assert "LD_LIBRARY_PATH='%s'" % INSTALL in w["cli"] and "LD_LIBRARY_PATH" not in w["runtime"]
    for text in w.values():
        assert "\nPATH='%s':\"${PATH}\"\n" % INSTALL in text
        assert text.rstrip().endswith("exec '%s/x.real' \"$@\"" % INSTALL)
    assert "modules" not in w["hook"]


def test_wrapper_custom_config_and_fallback():
    w = wrappers(fallback="/usr/bin/crun", config="/etc/nvidia/config.toml")
    assert "exec '/usr/bin/crun'" in w["runtime"]
    assert "NVIDIA_CTK_CONFIG_FILE_PATH='/etc/nvidia/config.toml'" in w["hook"]


@pytest.mark.skipif(not shutil.which("shellcheck"), reason="shellcheck not installed")
@pytest.mark.parametrize("install_dir, fallback, excluded", [
    (INSTALL, "runc", []),
    ("/usr/local/nvidia/toolkit", "/usr/bin/crun", []),
    # Only shellcheck's hints that a value holds literal quotes and dollars, which it must here.
    ("/opt/odd dir/it's $here", 'run"c`x`$y', ["-e", "SC2016,SC2089,SC2090,SC2123"]),
])
def test_wrappers_pass_shellcheck(tmp_path, install_dir, fallback, excluded):
    for kind, text in wrappers(install_dir, fallback).items():
        path = tmp_path / kind
        path.write_text(text)
        proc = subprocess.run(["shellcheck", "-s", "sh", *excluded, str(path)], capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, proc.stdout


def test_runtime_wrapper_falls_back_with_odd_name(tmp_path):
    fallback = tmp_path / "my \"runc\" $x"
    fallback.write_text("#!/bin/sh\necho fallback \"$@\"\n")
    fallback.chmod(0o755)
    path = tmp_path / "w"
    path.write_text(tl.render_wrapper("runtime", str(tmp_path), "/nonexistent", str(fallback)))
    proc = subprocess.run(["sh", str(path), "create", "x y"], capture_output=True, text=True, check=False)
    # This test machine has no nvidia kernel module loaded.
    assert proc.stdout == "fallback create x y\n"
    assert "invoking %s directly" % fallback in proc.stderr


def test_wrapper_with_odd_paths_runs(tmp_path):
    install_dir = str(tmp_path / "it's a $dir")
    text = tl.render_wrapper("cli", install_dir, "/bin/echo")
    path = tmp_path / "w"
    path.write_text(text)
    out = subprocess.run(["sh", str(path), "a b", "$c"], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin"}).stdout
    assert out == "a b $c\n"
    env_out = subprocess.run(["sh", "-c", text.replace("exec '/bin/echo' \"$@\"", 'printf "%s|%s" "$PATH" "$LD_LIBRARY_PATH"')],
                             capture_output=True, text=True, check=True, env={"PATH": "/bin"}).stdout
    assert env_out == "%s:/bin|%s" % (install_dir, install_dir)


def test_desired_entries():
    sources, _missing = tl.select_sources(deb_tree())
    entries = tl.desired_entries(sources, INSTALL)
    for name, _kind in tl.WRAPPED:
        assert entries[name + ".real"] == {"type": "file", "source": "usr/bin/" + name, "mode": 0o755}
        assert entries[name]["content"].startswith(b"#!/bin/sh\n")
        assert entries[name]["mode"] == 0o755
    assert entries["nvidia-cdi-hook"]["source"] == "usr/bin/nvidia-cdi-hook"
    assert "nvidia-cdi-hook.real" not in entries
    assert entries["nvidia-container-toolkit"] == link("nvidia-container-runtime-hook")
    assert entries["libnvidia-container.so.1"] == link("libnvidia-container.so.1.14.3")
    assert entries["libnvidia-container-go.so.1.14.3"]["mode"] == 0o644
    assert len(entries) == 6 * 2 + 1 + 1 + 4


def test_desired_entries_without_hook_has_no_toolkit_link():
    sources, _missing = tl.select_sources(deb_tree(bins=["nvidia-ctk"]))
    assert "nvidia-container-toolkit" not in tl.desired_entries(sources, INSTALL)


def file_entry(sha, mode=0o755):
    return {"type": "file", "sha256": sha, "mode": mode}


def current_file(sha, mode=0o755, uid=0, gid=0):
    return {"type": "file", "sha256": sha, "mode": mode, "uid": uid, "gid": gid}


@pytest.mark.parametrize("have, owner, bucket", [
    (None, (0, 0), "add"),
    (current_file("a"), (0, 0), "unchanged"),
    (current_file("b"), (0, 0), "update"),
    (current_file("a", mode=0o775), (0, 0), "metadata"),
    (current_file("a", uid=1000), (0, 0), "metadata"),
    (current_file("a", uid=1000), None, "unchanged"),
    ({"type": "symlink", "target": "x", "uid": 0}, (0, 0), "update"),
    ({"type": "directory"}, (0, 0), "conflicts"),
    ({"type": "other"}, None, "conflicts"),
    ({"type": "char"}, None, "conflicts"),
])
def test_plan_files(have, owner, bucket):
    steps = tl.plan({"f": file_entry("a")}, {"f": have}, [], owner)
    assert steps[bucket] == ["f"]
    assert sum(len(v) for v in steps.values()) == 1


@pytest.mark.parametrize("have, owner, bucket", [
    (None, None, "add"),
    ({"type": "symlink", "target": "t", "uid": 0}, (0, 0), "unchanged"),
    ({"type": "symlink", "target": "t", "uid": 5}, (0, 0), "update"),
    ({"type": "symlink", "target": "u", "uid": 0}, None, "update"),
    (current_file("a"), None, "update"),
])
def test_plan_links(have, owner, bucket):
    steps = tl.plan({"l": link("t")}, {"l": have}, [], owner)
    assert steps[bucket] == ["l"]


def test_plan_removes_only_previous_files_still_there():
    current = {"old": current_file("x"), "gone": None, "olddir": {"type": "directory"}, "keep": current_file("a")}
    steps = tl.plan({"keep": file_entry("a")}, current, ["old", "gone", "olddir", "keep"], None)
    assert steps["remove"] == ["old"] and steps["unchanged"] == ["keep"]


def test_summary_and_describe():
    entries = {"b": file_entry("0123456789abcdef"), "a": link("b"), "c": None, "d": {"type": "directory"}}
    assert tl.summary(entries) == "a: link -> b\nb: file 0755 sha256:0123456789ab\nd: directory\n"
    assert tl.describe(None) == "absent"


def test_manifest_round_trip():
    entries = {"nvidia-ctk": file_entry("ab" * 32), "l.so.1": link("l.so.1.2")}
    text = tl.render_manifest(INSTALL, entries, ["/home/kubernetes/bin/nvidia/toolkit", "/home/kubernetes"])
    assert text.endswith("\n")
    doc = json.loads(text)
    assert doc["install_dir"] == INSTALL and doc["files"]["nvidia-ctk"]["mode"] == "0755"
    assert doc["created_dirs"] == ["/home/kubernetes", "/home/kubernetes/bin/nvidia/toolkit"]
    parsed = tl.parse_manifest(text)
    # Format 1 names a symlink "link" on disk, as manifests written by earlier releases do.
    assert parsed["files"]["l.so.1"] == {"type": "link", "target": "l.so.1.2"}
    assert tl.render_manifest(INSTALL, entries) == tl.render_manifest(INSTALL, dict(reversed(list(entries.items()))))


@pytest.mark.parametrize("text, message", [
    ("{", "not JSON"),
    ("[]", "not a format 1"),
    ('{"format": 2, "files": {}}', "not a format 1"),
    ('{"format": 1}', "no 'files'"),
    ('{"format": 1, "files": {"../etc/passwd": {}}}', "bad file name"),
    ('{"format": 1, "files": {"a/b": {}}}', "bad file name"),
    ('{"format": 1, "files": {}, "created_dirs": ["relative"]}', "bad 'created_dirs'"),
])
def test_parse_manifest_refuses(text, message):
    with pytest.raises(ValueError, match=message):
        tl.parse_manifest(text)


def test_default_config_path():
    assert tl.default_config_path("/x") == "/x/.config/nvidia-container-runtime/config.toml"


def test_fill_contents_swap_set_and_changes():
    entries = tl.desired_entries({"nvidia-ctk": "usr/bin/nvidia-ctk", "libnvidia-container.so.1.2.3": "lib/x"}, INSTALL)
    tl.fill_contents(entries, lambda source: b"bytes of " + source.encode())
    assert entries["nvidia-ctk.real"]["content"] == b"bytes of usr/bin/nvidia-ctk"
    assert entries["nvidia-ctk.real"]["sha256"] == hashlib.sha256(b"bytes of usr/bin/nvidia-ctk").hexdigest()
    assert entries["nvidia-ctk"]["content"].startswith(b"#!/bin/sh\n")
    steps = {"add": ["nvidia-ctk.real", "libnvidia-container.so.1"], "update": ["nvidia-ctk"],
             "metadata": ["libnvidia-container.so.1.2.3"], "remove": ["old"], "unchanged": [], "conflicts": []}
    wanted = tl.swap_set(entries, steps, "{}\n")
    assert list(wanted) == ["nvidia-ctk.real", "libnvidia-container.so.1", "nvidia-ctk",
                            "libnvidia-container.so.1.2.3", "old", tl.MANIFEST_NAME]
    assert wanted["libnvidia-container.so.1"] == {"type": "symlink", "target": "libnvidia-container.so.1.2.3"}
    assert wanted["libnvidia-container.so.1.2.3"] == {"type": "file", "data": b"bytes of lib/x", "mode": 0o644}
    assert wanted["old"] is None and wanted[tl.MANIFEST_NAME]["data"] == b"{}\n"
    assert tl.MANIFEST_NAME not in tl.swap_set(entries, steps)
    assert tl.changes(INSTALL, steps, [INSTALL], "created") == [
        {"path": INSTALL, "action": "created"},
        {"path": INSTALL + "/nvidia-ctk.real", "action": "created"},
        {"path": INSTALL + "/libnvidia-container.so.1", "action": "created"},
        {"path": INSTALL + "/nvidia-ctk", "action": "updated"},
        {"path": INSTALL + "/libnvidia-container.so.1.2.3", "action": "updated"},
        {"path": INSTALL + "/old", "action": "removed"},
        {"path": INSTALL + "/" + tl.MANIFEST_NAME, "action": "created"},
    ]


def _filled():
    entries = tl.desired_entries({"nvidia-ctk": "usr/bin/nvidia-ctk", "libnvidia-container.so.1.2.3": "lib/x"}, INSTALL)
    return tl.fill_contents(entries, lambda source: b"bytes of " + source.encode())


def test_expected_drops_the_bytes_and_comes_back_through_json():
    entries = _filled()
    expected = tl.expected(entries)
    assert all("content" not in entry and "source" not in entry for entry in expected.values())
    assert expected["libnvidia-container.so.1"] == {"type": "symlink", "target": "libnvidia-container.so.1.2.3"}
    assert expected["nvidia-ctk.real"] == {"type": "file", "sha256": entries["nvidia-ctk.real"]["sha256"], "mode": 0o755}
    assert tl.parse_expected(json.loads(json.dumps(expected))) == expected
    # Modes as the manifest writes them are read as octal.
    assert tl.parse_expected({"a": dict(expected["nvidia-ctk.real"], mode="0644")})["a"]["mode"] == 0o644
    # plan() gives the same answer from the checksums alone.
    current = {name: dict(entry, uid=0, gid=0) for name, entry in expected.items()}
    assert tl.plan(tl.parse_expected(expected), current, [], (0, 0))["unchanged"] == sorted(expected)


@pytest.mark.parametrize("value", [
    {}, [], {"../x": {"type": "file", "sha256": "ab" * 32, "mode": 0o755}},
    {"a": {"type": "file", "sha256": "not hex", "mode": 0o755}}, {"a": {"type": "symlink"}},
    {"a": {"type": "directory"}}, {"a": "file"},
])
def test_parse_expected_refuses(value):
    with pytest.raises(ValueError):
        tl.parse_expected(value)


def test_installed_as_listed_compares_the_files_not_the_created_dirs():
    entries = _filled()
    written = tl.render_manifest(INSTALL, entries, [INSTALL, "/home/kubernetes"])
    assert tl.installed_as_listed(written, entries)
    changed = dict(entries, **{"nvidia-ctk.real": dict(entries["nvidia-ctk.real"], sha256="cd" * 32)})
    assert not tl.installed_as_listed(written, changed)
    fewer = {name: entry for name, entry in entries.items() if name != "libnvidia-container.so.1"}
    assert not tl.installed_as_listed(written, fewer)
    assert not tl.installed_as_listed("not json", entries)
