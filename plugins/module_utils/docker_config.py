# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Docker's ``daemon.json`` becomes: parse it keeping the user's bytes, decide, render.

Standard library only, no I/O; the ``docker_runtime`` action plugin reads the files from the node,
calls :func:`plan` and writes what it returns.

The file is edited in place (``json_edit``): every key, value, space and line break outside the
edited members is kept byte for byte. After every edit the new text is parsed again and must mean
exactly what was asked.

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

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import json_edit, ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import DifferenceTracker, change
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.runtimes import ConfigError

DEFAULT_PATH = "/etc/docker/daemon.json"
# dockerd registers these itself and refuses a runtime of daemon.json named "runc" (20.10 and later).
RESERVED_RUNTIME_NAMES = {"runc": "dockerd refuses to start with \"runtime name 'runc' is reserved\""}
BUILTIN_RUNTIMES = ("runc", "io.containerd.runc.v2", "io.containerd.runtime.v1.linux")
TAG = "gpu_node.container_toolkit"
JOURNAL_FORMAT = 1
JOURNAL_SUFFIX = ".gpu_node.container_toolkit.json"


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


# --- reading --------------------------------------------------------------------------------------


def parse(text, name="daemon.json"):
    """``json_edit.parse`` of a ``daemon.json``, refusing also the keys this module edits holding a
    type dockerd refuses (:func:`check_types`)."""
    return json_edit.parse(text, name, "dockerd", check=lambda node: check_types(node, name, text))


def check_types(node, name, text=""):
    """Refuse ``runtimes``, its entries, ``features`` and ``default-runtime`` of a type dockerd refuses
    (it would not start): the error names the key and its line."""

    def wrong(member, key, wanted):
        raise ConfigError(
            "%s: %s must be %s, it is %s (%s); dockerd would not start with it. Fix it by hand, "
            "the file was left as it was" % (name, key, wanted, json_edit.kind(member.value.value), json_edit.position(text, member.key_start))
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
    now = json_edit.get(data, tuple(edit["key"]))
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
            if warnings is not None and json_edit.get(data, key) is not json_edit.MISSING:
                warnings.append("%s: %s was changed since this module set it; kept as it is now" % (name, json_edit.dotted(key)))
            continue
        before = edit.get("before", json_edit.MISSING)
        if before is json_edit.MISSING:
            text = json_edit.delete_member(text, key, name)
        else:
            text = json_edit.set_value(text, key, before, name)
        if tracker is not None:
            tracker.add(_label(key), _shown(edit["after"]), _shown(before), reason=_undo_reason(key, edit, before))
    for edit in reversed(edits):
        if edit.get("container"):
            key = tuple(edit["key"])
            if json_edit.get(load(text, name), key) == {}:
                text = json_edit.delete_member(text, key, name)
    return text


def _label(key):
    if len(key) >= 2 and key[0] == "runtimes":
        return "runtime %s%s" % (key[1], "" if len(key) == 2 else " " + json_edit.dotted(key[2:]))
    return json_edit.dotted(key)


def _undo_reason(key, edit, before):
    if before is json_edit.MISSING and len(key) == 2 and key[0] == "runtimes":
        return "added by this module (removed)"
    return "%s -> %s (restored)" % (_shown(edit.get("after")), _shown(before))


def _shown(value):
    if value is json_edit.MISSING:
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
        new_journal = journal_text if new_journal is json_edit.MISSING else new_journal
        remove_dirs = []
    changes = tracker.changes(name, created=text is None)
    if new_journal is None and journal_text is not None:
        changes.append(change(journal_name, "removed", "this module's journal" if tracker.changed
                              else "this module's journal, stale: it describes edits no longer in the file"))
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
    """(new text, new journal text, or json_edit.MISSING for the journal as it is)."""
    runtimes = params["runtimes"]
    original, created_dirs, edits = _base(text, data, params, journal, in_sync, name)
    state = {"text": "" if text is None else text, "expected": copy.deepcopy(data)}

    def current():
        return load(state["text"], name)

    def record(key, before, after, reason):
        existing = _edit_record(edits, key)
        if existing is None:
            entry = {"key": list(key)}
            if before is not json_edit.MISSING:
                entry["before"] = copy.deepcopy(before)
            entry["after"] = copy.deepcopy(after)
            edits.append(entry)
        elif "before" not in existing and before is not json_edit.MISSING and existing.get("after") != before:
            # Recorded as missing, but the file holds someone else's value now: that is what goes back.
            existing["before"] = copy.deepcopy(before)
            existing["after"] = copy.deepcopy(after)
        else:
            existing["after"] = copy.deepcopy(after)
        tracker.add(_label(key), _shown(before), _shown(after), reason=reason)

    def apply(key, value, reason):
        before = json_edit.get(current(), key)
        if before == value:
            return
        if len(key) > 1 and json_edit.get(current(), key[:1]) is json_edit.MISSING and _edit_record(edits, key[:1]) is None:
            edits.append({"key": [key[0]], "container": True})
        state["text"] = json_edit.set_value(state["text"], key, value, name)
        json_edit.put(state["expected"], key, value)
        record(key, before, value, reason % {"before": _shown(before), "after": _shown(value)})

    for entry in runtimes:
        key = ("runtimes", entry["name"])
        existing = json_edit.get(current(), key)
        if existing is json_edit.MISSING:
            apply(key, {"path": entry["binary"], "args": []}, "missing (added, path %s)" % entry["binary"])
        elif existing.get("path") != entry["binary"]:
            apply(key + ("path",), entry["binary"], "%(before)s -> %(after)s")
    if params.get("set_as_default"):
        apply(("default-runtime",), runtimes[0]["name"], "%(before)s -> %(after)s")
    else:
        ours = _edit_record(edits, ("default-runtime",))
        if ours is not None and _still_ours(current(), ours):
            before = ours.get("before", json_edit.MISSING)
            after = json_edit.get(current(), ("default-runtime",))
            if before is json_edit.MISSING:
                state["text"] = json_edit.delete_member(state["text"], ("default-runtime",), name)
                json_edit.drop(state["expected"], ("default-runtime",))
            else:
                state["text"] = json_edit.set_value(state["text"], ("default-runtime",), before, name)
                json_edit.put(state["expected"], ("default-runtime",), before)
            edits.remove(ours)
            tracker.add(
                "default-runtime", _shown(after), _shown(before), reason="%s -> %s (restored: set_as_default is false)" % (_shown(after), _shown(before))
            )
    if params.get("enable_cdi") is not None:
        apply(("features", "cdi"), bool(params["enable_cdi"]), "%(before)s -> %(after)s")
    if not tracker.changed:
        return text, json_edit.MISSING
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
                before = edit.get("before", json_edit.MISSING)
                key = tuple(edit["key"])
                tracker.add(_label(key), _shown(edit.get("after")), _shown(before), reason=_undo_reason(key, edit, before))
        if journal.get("original") is None:
            tracker.add("file %s" % name, "created by this module", None, reason="created by this module",
                        path=name, action="removed")
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
        tracker.add("file %s" % name, "created by this module", None, reason="created by this module",
                    path=name, action="removed")
        return None, None, _recorded_dirs(journal)
    return new_text, None, []
