# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the installed toolkit looks like. Pure functions, no I/O.

An install directory holds, like the upstream installer leaves it:

- ``<name>.real`` plus a ``/bin/sh`` wrapper ``<name>`` for the runtime (and its ``.cdi`` and
  ``.legacy`` variants), the hook, ``nvidia-ctk`` and ``nvidia-container-cli``;
- ``nvidia-cdi-hook`` as it comes;
- ``nvidia-container-toolkit`` -> ``nvidia-container-runtime-hook``;
- ``libnvidia-container.so.<version>`` and ``libnvidia-container-go.so.<version>`` with their
  ``.so.1`` links;
- a manifest of all of the above, so that removal takes exactly what was installed.

A *source tree* is what :mod:`toolkit_source` reads: relative paths mapped to ``{"type": "file"
| "symlink" | "directory", "target": ...}`` (:mod:`node_fs`'s words), shaped like the unpacked
packages (``usr/bin/...``, ``usr/lib/x86_64-linux-gnu/...``). What ``install_dir`` holds is
compared in the same words, as :meth:`node_fs.NodeRoot.observe` gives them.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import MAX_LINK_HOPS

# name -> wrapper kind
WRAPPED = (
    ("nvidia-container-runtime", "runtime"),
    ("nvidia-container-runtime.cdi", "runtime"),
    ("nvidia-container-runtime.legacy", "runtime"),
    ("nvidia-container-runtime-hook", "hook"),
    ("nvidia-ctk", "ctk"),
    ("nvidia-container-cli", "cli"),
)
PLAIN = ("nvidia-cdi-hook",)
LIBRARIES = ("libnvidia-container", "libnvidia-container-go")
LIBRARY_SONAME_SUFFIX = ".so.1"
TOOLKIT_LINK = ("nvidia-container-toolkit", "nvidia-container-runtime-hook")

BIN_DIRS = ("usr/bin", "bin", "usr/sbin", "sbin", "usr/local/bin", "")
LIB_DIRS = (
    "usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "lib64",
    "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", "usr/lib", "lib", "usr/local/lib", "",
)
MANIFEST_NAME = ".toolkit-manifest.json"
STAGING_PREFIX = ".toolkit-staging-"
MANIFEST_FORMAT = 1
EXEC_MODE = 0o755
LIBRARY_MODE = 0o644
DEFAULT_CONFIG_RELPATH = ".config/nvidia-container-runtime/config.toml"
WRITER = "gpu_node.container_toolkit.toolkit_install"

_VERSIONED_LIB = re.compile(r"^(libnvidia-container(?:-go)?)\.so\.(\d+(?:\.\d+)+)$")


class LayoutError(Exception):
    """The source tree cannot be turned into an install (a link loops, nothing usable)."""


def quote(text):
    """Single-quote ``text`` for ``/bin/sh``, always (every path in a wrapper is quoted)."""
    return "'" + str(text).replace("'", "'\\''") + "'"


def default_config_path(install_dir):
    return posixpath.join(install_dir, DEFAULT_CONFIG_RELPATH)


def resolve(tree, relpath):
    """Follow links inside ``tree`` (a dict, not the filesystem) from ``relpath``; the relative
    path of a file, or None.

    Absolute link targets are taken relative to the tree's root; a target leaving the tree
    resolves to None (the archive checks refuse such links before this is reached). The hop
    limit is node_fs's, the kernel's.
    """
    path = relpath
    for _hop in range(MAX_LINK_HOPS + 1):  # the file itself, after at most MAX_LINK_HOPS links
        entry = tree.get(path)
        if entry is None:
            return None
        if entry["type"] == "file":
            return path
        if entry["type"] != "symlink":
            return None
        target = entry["target"]
        joined = target.lstrip("/") if target.startswith("/") else posixpath.join(posixpath.dirname(path), target)
        path = posixpath.normpath(joined) if joined else "."
        if path == ".." or path.startswith("../"):
            return None
    raise LayoutError("too many levels of symbolic links from %s" % relpath)


def _version_key(version):
    return tuple(int(part) for part in version.split("."))


def select_sources(tree):
    """Pick the toolkit's files from a source tree.

    Returns ``(sources, missing)``: ``sources`` maps an install name (``nvidia-ctk``,
    ``libnvidia-container.so.1.14.3``) to the tree path of a regular file; ``missing`` lists
    expected names that the tree lacks.
    """
    sources = {}
    missing = []
    for name in [n for n, _kind in WRAPPED] + list(PLAIN):
        for directory in BIN_DIRS:
            found = resolve(tree, posixpath.join(directory, name) if directory else name)
            if found:
                sources[name] = found
                break
        else:
            missing.append(name)
    for library in LIBRARIES:
        best = None
        for directory in LIB_DIRS:
            for path in sorted(tree):
                if posixpath.dirname(path) != directory:
                    continue
                match = _VERSIONED_LIB.match(posixpath.basename(path))
                if not match or match.group(1) != library:
                    continue
                real = resolve(tree, path)
                if real and (best is None or _version_key(match.group(2)) > _version_key(best[0])):
                    best = (match.group(2), real)
            if best:
                break
        if best:
            sources["%s.so.%s" % (library, best[0])] = best[1]
        else:
            missing.append(library + ".so.*")
    return sources, missing


def render_wrapper(kind, install_dir, real_path, low_level_runtime="runc", config_path=None):
    """The ``/bin/sh`` wrapper that runs ``real_path`` with the toolkit's environment."""
    config_path = config_path or default_config_path(install_dir)
    lines = [
        "#!/bin/sh",
        "# Written by %s; changes are overwritten." % WRITER,
    ]
    if kind == "runtime":
        lines += [
            "if ! grep -q '^nvidia ' /proc/modules 2>/dev/null; then",
            "\techo \"nvidia driver modules are not loaded, invoking \"%s\" directly\" >&2" % quote(low_level_runtime),
            "\texec %s \"$@\"" % quote(low_level_runtime),
            "fi",
        ]
    exported = ["PATH"]
    lines.append("PATH=%s:\"${PATH}\"" % quote(install_dir))
    if kind in ("runtime", "hook"):
        lines.append("NVIDIA_CTK_CONFIG_FILE_PATH=%s" % quote(config_path))
        exported.append("NVIDIA_CTK_CONFIG_FILE_PATH")
    if kind == "cli":
        lines.append("LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+\":${LD_LIBRARY_PATH}\"}" % quote(install_dir))
        exported.append("LD_LIBRARY_PATH")
    lines.append("export %s" % " ".join(exported))
    lines.append("exec %s \"$@\"" % quote(real_path))
    return "\n".join(lines) + "\n"


def desired_entries(sources, install_dir, low_level_runtime="runc", config_path=None):
    """What ``install_dir`` should hold, by name.

    Values: ``{"type": "file", "source": tree path, "mode"}`` (content from the source tree),
    ``{"type": "file", "content": bytes, "mode"}`` (a wrapper) or ``{"type": "symlink", "target"}``.
    """
    entries = {}
    kinds = dict(WRAPPED)
    for name, source in sources.items():
        if name in kinds:
            real = name + ".real"
            entries[real] = {"type": "file", "source": source, "mode": EXEC_MODE}
            text = render_wrapper(kinds[name], install_dir, posixpath.join(install_dir, real),
                                  low_level_runtime, config_path)
            entries[name] = {"type": "file", "content": text.encode("utf-8"), "mode": EXEC_MODE}
        elif name in PLAIN:
            entries[name] = {"type": "file", "source": source, "mode": EXEC_MODE}
        else:
            entries[name] = {"type": "file", "source": source, "mode": LIBRARY_MODE}
            library = _VERSIONED_LIB.match(name).group(1)
            entries[library + LIBRARY_SONAME_SUFFIX] = {"type": "symlink", "target": name}
    if TOOLKIT_LINK[1] in sources:
        entries[TOOLKIT_LINK[0]] = {"type": "symlink", "target": TOOLKIT_LINK[1]}
    return entries


def fill_contents(entries, read):
    """Give every file entry its ``content`` (``read(source path)`` for those from the source
    tree) and ``sha256``; ``entries`` is changed in place and returned."""
    for entry in entries.values():
        if entry["type"] == "file":
            if "content" not in entry:
                entry["content"] = read(entry["source"])
            entry["sha256"] = hashlib.sha256(entry["content"]).hexdigest()
    return entries


def wanted_install(tree, install_dir, low_level_runtime, config_path, read):
    """``(entries, missing)`` for a source tree: ``desired_entries`` with their contents
    (``read(tree entry)`` gives a member's bytes), None when the tree has none of the toolkit's
    files; and the names the tree lacks. The module and its action plugin both start here."""
    sources, missing = select_sources(tree)
    if not sources:
        return None, missing
    entries = desired_entries(sources, install_dir, low_level_runtime, config_path)
    return fill_contents(entries, lambda source: read(tree[source])), missing


def missing_warning(missing):
    return "not in src, so not installed: %s" % ", ".join(missing)


def _same(want, have, owner):
    if have is None or have["type"] != want["type"]:
        return False
    if want["type"] == "symlink":
        return have["target"] == want["target"] and (owner is None or have.get("uid") == owner[0])
    return have["sha256"] == want["sha256"]


def plan(desired, current, previous_names, owner=None):
    """Compare the wanted entries with what ``install_dir`` holds.

    ``desired``: name -> ``{"type": "file", "sha256", "mode"}`` or ``{"type": "symlink", "target"}``.
    ``current``: name -> ``None`` or what :meth:`node_fs.NodeRoot.observe` says (``type``,
    ``sha256``, ``mode``, ``uid``, ``gid``, ``target``) for every desired or previously installed name.
    ``previous_names``: names in the old manifest. ``owner``: ``(uid, gid)`` files must have, or None.

    Returns ``{"add", "update", "metadata", "remove", "unchanged", "conflicts"}``, lists of names.
    ``metadata`` files have the right bytes but the wrong mode or owner.
    """
    result = {key: [] for key in ("add", "update", "metadata", "remove", "unchanged", "conflicts")}
    for name in sorted(desired):
        want = desired[name]
        have = current.get(name)
        if have is None:
            result["add"].append(name)
        elif have["type"] not in ("file", "symlink"):
            result["conflicts"].append(name)
        elif not _same(want, have, owner):
            result["update"].append(name)
        elif want["type"] == "file" and (have["mode"] != want["mode"] or (
                owner is not None and (have.get("uid"), have.get("gid")) != tuple(owner))):
            result["metadata"].append(name)
        else:
            result["unchanged"].append(name)
    for name in sorted(set(previous_names) - set(desired)):
        have = current.get(name)
        if have is not None and have["type"] in ("file", "symlink"):
            result["remove"].append(name)
    return result


def present_plan(entries, current, manifest, manifest_text, install_dir, target, new_dirs, owner=None):
    """What ``state=present`` does to an install, decided from what was observed of it.

    ``current``: name -> what :meth:`node_fs.NodeRoot.observe` says (with ``sha256``) or None, for
    every wanted name and every name of ``manifest`` (its parsed form, or None) read as
    ``manifest_text``; ``new_dirs``: the directories above ``target`` to create. The toolkit_install
    module decides from it on the node, and its action plugin on the controller from the look's
    read-ahead, when that shows nothing to do (then no module runs).

    Returns ``{"steps", "new_manifest", "manifest_action", "changes", "before"}``; ``steps`` as
    :func:`plan` returns them (``conflicts`` included), ``before`` the observed entries that exist.
    """
    steps = plan(entries, current, manifest["files"] if manifest else {}, owner)
    created_dirs = (manifest["created_dirs"] if manifest else []) + list(new_dirs)
    new_manifest = render_manifest(install_dir, entries, created_dirs)
    manifest_action = None if manifest_text == new_manifest else "updated" if manifest_text else "created"
    return {"steps": steps, "new_manifest": new_manifest, "manifest_action": manifest_action,
            "changes": changes(target, steps, new_dirs, manifest_action),
            "before": {name: found for name, found in current.items() if found}}


def install_diff(install_dir, before, after):
    """The ``diff`` of a result: the listings (:func:`summary`) before and after, None for absent."""
    return {"before": before or "", "after": after or "",
            "before_header": install_dir if before is not None else "%s (absent)" % install_dir,
            "after_header": install_dir if after is not None else "%s (absent)" % install_dir}


def present_result(install_dir, target, entries, decided, had_install, remounted=False):
    """The result fields of ``state=present`` for a :func:`present_plan` (``had_install``: a
    manifest was read), whoever decided it."""
    steps, changes_made = decided["steps"], list(decided["changes"])
    if remounted:
        changes_made.append(change(target, "remounted exec"))
    before = decided["before"]
    return {"changed": bool(changes_made), "changes": changes_made, "exec_mount": bool(remounted),
            "files": [posixpath.join(target, name) for name in sorted(entries)],
            "added": steps["add"], "updated": steps["update"] + steps["metadata"], "removed": steps["remove"],
            # Always returned; Ansible shows it only with --diff.
            "diff": install_diff(install_dir, summary(before) if had_install or before else None, summary(entries))}


def writable_warning(install_dir, mode):
    """The warning for an install directory others can write to, or None."""
    if mode & 0o022:
        return ("install_dir %s is group- or world-writable (mode %04o): anyone who can write to it "
                "can replace the runtime" % (install_dir, mode))
    return None


def swap_set(entries, steps, manifest_text=None):
    """What :meth:`node_fs.NodeRoot.swap_in` gets for a ``plan``: the new and changed entries,
    then the names to remove, then the manifest (when it changes). The manifest comes last: a run
    killed half-way leaves the old one, which still lists every file that run may have left."""
    wanted = {}
    for name in steps["add"] + steps["update"] + steps["metadata"]:
        entry = entries[name]
        wanted[name] = ({"type": "symlink", "target": entry["target"]} if entry["type"] == "symlink"
                        else {"type": "file", "data": entry["content"], "mode": entry["mode"]})
    wanted.update((name, None) for name in steps["remove"])
    if manifest_text is not None:
        wanted[MANIFEST_NAME] = {"type": "file", "data": manifest_text.encode("utf-8"), "mode": LIBRARY_MODE}
    return wanted


def changes(install_dir, steps, dirs_created=(), manifest_action=None):
    """The result's ``changes``: ``{"path": host path, "action"}`` for each directory created,
    entry created, updated or removed, and the manifest."""
    out = [change(d, "created") for d in dirs_created]
    for key, action in (("add", "created"), ("update", "updated"), ("metadata", "updated"), ("remove", "removed")):
        out += [change(posixpath.join(install_dir, name), action) for name in steps.get(key, ())]
    if manifest_action:
        out.append(change(posixpath.join(install_dir, MANIFEST_NAME), manifest_action))
    return out


def describe(entry):
    """One line for the diff: ``file 0755 sha256:0123456789ab`` or ``link -> target``."""
    if entry is None:
        return "absent"
    if entry["type"] == "symlink":
        return "link -> %s" % entry["target"]
    if entry["type"] == "file":
        return "file %04o sha256:%s" % (entry["mode"], entry["sha256"][:12])
    return entry["type"]


def summary(entries):
    """Text listing of ``entries`` (name -> entry), one line each, for ``--diff``."""
    return "".join("%s: %s\n" % (name, describe(entries[name])) for name in sorted(entries) if entries[name])


def manifest_files(entries):
    """The manifest's ``files`` table for ``entries`` (each file with its ``sha256``)."""
    files = {}
    for name in sorted(entries):
        entry = entries[name]
        if entry["type"] == "symlink":
            files[name] = {"type": "link", "target": entry["target"]}  # format 1's word for a symlink
        else:
            files[name] = {"type": "file", "sha256": entry["sha256"], "mode": "%04o" % entry["mode"]}
    return files


def render_manifest(install_dir, entries, created_dirs=()):
    """The manifest's text: every installed entry, and the directories the install created."""
    document = {
        "format": MANIFEST_FORMAT,
        "written_by": WRITER,
        "install_dir": install_dir,
        ownership.KEY: ownership.outermost_first(created_dirs),
        "files": manifest_files(entries),
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def expected(entries):
    """``entries`` without their contents: what the node needs to check an install (``plan``
    compares checksums, modes and link targets), a fraction of the bytes of the files."""
    return {name: ({"type": "symlink", "target": entry["target"]} if entry["type"] == "symlink"
                   else {"type": "file", "sha256": entry["sha256"], "mode": entry["mode"]})
            for name, entry in entries.items()}


def parse_expected(value):
    """``expected`` entries as the module gets them back (JSON: modes may come as strings);
    raises ValueError on anything else."""
    if not isinstance(value, dict) or not value:
        raise ValueError("expected must name at least one entry")
    entries = {}
    for name, entry in value.items():
        if not name or "/" in name or name in (".", "..") or not isinstance(entry, dict):
            raise ValueError("bad entry %r" % name)
        if entry.get("type") == "symlink" and isinstance(entry.get("target"), str):
            entries[name] = {"type": "symlink", "target": entry["target"]}
        elif entry.get("type") == "file" and re.match(r"^[0-9a-f]{64}$", str(entry.get("sha256"))):
            mode = entry.get("mode")
            entries[name] = {"type": "file", "sha256": entry["sha256"],
                             "mode": int(mode, 8) if isinstance(mode, str) else int(mode)}
        else:
            raise ValueError("bad entry %r" % name)
    return entries


def installed_as_listed(manifest_text, entries):
    """Whether a manifest read from the node lists exactly ``entries``: then the install is
    probably in place, and the node can check it from ``expected(entries)`` alone."""
    try:
        return parse_manifest(manifest_text)["files"] == manifest_files(entries)
    except ValueError:
        return False


def parse_manifest(text):
    """``{"files": {name: entry}, "created_dirs": [...]}`` from a manifest's text.

    Raises ValueError on anything that is not a manifest this module wrote; names that are
    not plain file names (``a/b``, ``..``) are refused so removal cannot leave ``install_dir``.
    """
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ValueError("not JSON: %s" % exc) from None
    if not isinstance(document, dict) or document.get("format") != MANIFEST_FORMAT:
        raise ValueError("not a format %d toolkit manifest" % MANIFEST_FORMAT)
    files = document.get("files")
    if not isinstance(files, dict):
        raise ValueError("no 'files' table")
    for name in files:
        if not name or "/" in name or name in (".", "..") or "\0" in name:
            raise ValueError("bad file name %r" % name)
    return {"files": files, "created_dirs": ownership.dirs_in_document(document)}
