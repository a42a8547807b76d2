# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit a containerd ``config.toml`` in place (controller side).

What changes is decided on the parsed file by ``module_utils/containerd_config.py``
(:func:`plan_present`); ``plugin_utils/toml_edit.py`` applies it line by line with a journal, so
``state: absent`` gives back the original bytes of every line ``present`` replaced, and removes
every line it added.
"""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import containerd_config as cc
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import DifferenceTracker
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import toml_edit
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.toml_edit import TomlDocument, TomlEditError


def _name_of(path, version):
    """``runtime nvidia BinaryName``, ``enable_cdi``, ``default_runtime_name`` for messages."""
    runtimes = cc.runtimes_table(version)
    if tuple(path[:len(runtimes)]) == runtimes:
        rest = path[len(runtimes):]
        keys = rest[2:] if rest[1:2] == ("options",) and len(rest) > 2 else rest[1:]
        return "runtime %s %s" % (rest[0], ".".join(keys))
    for table in (cc.containerd_table(version), cc.cri_table(version)):
        if tuple(path[:len(table)]) == table:
            return ".".join(path[len(table):])
    return ".".join(path)


def _regenerated(text, name):
    head = "\n".join((text or "").splitlines()[:5])
    for marker in cc.REGENERATED_MARKERS:
        if marker in head:
            return ("%s says %r: its owner (k3s, RKE2) writes it anew at every start, so an edit would be lost. "
                    "Use gpu_node.container_toolkit.k3s_runtime, which gives them the runtimes their way (the gpu_node "
                    "and containerd roles do where the look at the node finds them)" % (name, marker))
    return None


def _apply(doc, ops, version, tracker):
    pending = []

    def add_pending():
        if pending:
            doc.add_tables([(op[1], op[2]) for op in pending], after=pending[0][3])
            del pending[:]

    for op in ops:
        if op[0] == "table":
            if pending and op[3] != pending[-1][1]:
                add_pending()
            pending.append(op)  # runtimes that follow each other go in together
            name = op[1][-1]
            summary = {"runtime_type": op[2].get("runtime_type"),
                       "BinaryName": (op[2].get("options") or {}).get("BinaryName")}
            if name == "runc" and op[4] is None:
                reason = ("missing next to default_runtime_name 'runc' (added: a runtimes table replaces "
                          "containerd's built-in one)")
            else:
                reason = "missing (added%s)" % (", copied from %s" % op[4] if op[4] else "")
            tracker.add("runtime %s" % name, None, summary, reason=reason)
            continue
        add_pending()
        before = toml_edit.get_path(doc.data, op[1])
        doc.set(op[1], op[2])
        shown = "unset" if before is None else repr(before)
        tracker.add(_name_of(op[1], version), before, op[2], reason="%s -> %r" % (shown, op[2]))
    add_pending()


def edit(text, params, containerd_output=None, drop_in_text=None, name="config.toml", containerd_not_asked=None):
    """Plan the edit of a containerd config. Pure: text in, text out.

    ``text``: the root config (None when the file is missing). ``params``: the module options
    (``state``, ``runtimes`` normalised, ``runtime_type``, ``set_as_default``, ``enable_cdi``,
    ``cdi_spec_dirs``, ``container_annotations``, ``config_version``, ``drop_in``, ``path``).
    ``drop_in_text``: the drop-in's current content (None when missing). With ``state: present``,
    ``params["created_dirs"]`` and ``params["drop_in_created_dirs"]`` name the directories that
    writing a missing root or drop-in creates: a file made from nothing opens with the journal's
    ``created`` line recording them.

    Returns a dict: ``text`` (new root; None when it is missing and stays so, or, with ``state:
    absent``, when the file is to be removed: this module created it and nothing else is left in
    it), ``drop_in_text`` (new drop-in, None to remove it or when not in drop-in mode),
    ``remove_dirs`` (``state: absent``: ``(host path, directories)`` for each removed file whose
    ownership record lists the directories its write created), ``version``, ``version_source``, ``changes``, ``warnings``,
    ``restart_required``, ``cri_disabled_by`` (what in ``disabled_plugins`` still turns CRI off:
    :func:`containerd_config.cri_disabled_by`). Raises ConfigError or TomlEditError, naming the
    file, when the file cannot be edited safely.
    """
    state = params.get("state", "present")
    refusal = _regenerated(text, name)
    if refusal and state == "present":
        raise cc.ConfigError(refusal)
    doc = TomlDocument(text or "", name, journal=True)
    before_root = doc.data
    empty = not doc.data
    version, source = cc.choose_version(params.get("config_version"), doc.data.get("version"), empty,
                                        containerd_output, containerd_not_asked)
    tracker = DifferenceTracker()
    warnings = []
    drop_in = params.get("drop_in")
    new_drop_in = None
    remove_root = False
    remove_dirs = []
    cri_disabled_by = []
    if state == "absent":
        created = ownership.record_in_text(text)
        _absent(doc, version, params, tracker, warnings)
        if created is not None and not doc.text.strip():
            # Made from nothing by this module, and nothing of anyone else's in it: it goes.
            remove_root = True
            remove_dirs.append((name, created[1]))
            tracker.add("file %s" % name, "created by this module", None, reason="created by this module",
                        path=name, action="removed")
        if drop_in and drop_in_text is not None:
            tracker.add("drop_in %s" % drop_in, "present", None, path=drop_in, action="removed")
            drop_created = ownership.record_in_text(drop_in_text)
            if drop_created is not None:
                remove_dirs.append((drop_in, drop_created[1]))
    else:
        if empty and (version != 1 or params.get("config_version") not in (None, "auto")):
            doc.set(("version",), version)
            tracker.add("version", None, version, reason="unset -> %d (%s)" % (version, source))
        ignored = cc.ignored_cri_tables(doc.data, version)
        if ignored:
            warnings.append("%s declares version %s%s, so containerd reads %s and ignores %s; the runtimes go to %s"
                            % (name, version, "" if "version" in doc.data else " (no version key means 1)",
                               cc.dotted(cc.cri_table(version)), ", ".join(cc.dotted(t) for t in ignored),
                               cc.dotted(cc.cri_table(version))))
        cri_disabled_by = _enable_cri(doc, version, params, tracker, warnings, name)
        if drop_in:
            new_drop_in = _present_drop_in(doc, version, params, tracker, drop_in, drop_in_text)
        else:
            _apply(doc, cc.plan_present(doc.data, version, params), version, tracker)
            if not params.get("set_as_default"):
                _give_back(doc, cc.containerd_table(version) + ("default_runtime_name",), tracker, version)
    restart = doc.data != before_root
    if drop_in:
        before = toml_edit.load(drop_in_text, drop_in) if drop_in_text is not None else None
        after = toml_edit.load(new_drop_in, drop_in) if new_drop_in is not None else None
        restart = restart or before != after
    new_text = doc.text if (text is not None or doc.changed) else None
    if remove_root:
        new_text = None
    elif text is None and new_text is not None and state == "present":
        new_text = ownership.created_line(params.get("created_dirs") or []) + doc.newline + new_text
    return {
        "text": new_text,
        "drop_in_text": new_drop_in,
        "remove_dirs": remove_dirs,
        "version": version,
        "version_source": source,
        "changes": tracker.changes(name, created=text is None),
        "warnings": warnings,
        "cri_disabled_by": cri_disabled_by,
        "restart_required": bool(restart) and (doc.changed or new_drop_in != drop_in_text),
    }


def _enable_cri(doc, version, params, tracker, warnings, name):
    """With ``enable_cri``, take the entries that turn CRI off out of ``disabled_plugins`` (the
    journal gives the line back on ``state: absent``); without it, warn. What still turns CRI off."""
    disabled_by = cc.cri_disabled_by(doc.data, version)
    if not disabled_by:
        return []
    if not params.get("enable_cri"):
        warnings.append(cc.cri_disabled_message(name, disabled_by))
        return disabled_by
    before = list(doc.data["disabled_plugins"])
    after = [plugin for plugin in before if plugin not in disabled_by]
    doc.set(("disabled_plugins",), after)
    tracker.add("disabled_plugins", before, after, reason="%r -> %r (enable_cri)" % (before, after))
    return []


def _give_back(doc, path, tracker, version):
    before = toml_edit.get_path(doc.data, path)
    if doc.restore(path):
        after = toml_edit.get_path(doc.data, path)
        tracker.add(_name_of(path, version), before, after, reason="%r -> %s (restored)" % (
            before, "unset" if after is None else repr(after)))


def _absent(doc, version, params, tracker, warnings):
    """Give back every line a journaled ``present`` replaced and drop every line it added."""
    before = doc.data
    runtimes_before = cc.runtimes_table(version)
    # Whose each runtime table is, told before undo changes the lines.
    mine = {name for name in toml_edit.get_path(before, runtimes_before) or {}
            if doc.written_here(runtimes_before + (name,))}
    marks_headers = doc.marks_its_headers()
    kept = []
    if doc.marked():
        doc.undo(kept)
    after = doc.data
    lost = set(toml_edit.get_path(before, runtimes_before) or {}) - set(toml_edit.get_path(after, runtimes_before) or {})
    foreign = sorted(lost - mine)
    if foreign and marks_headers:
        raise TomlEditError(
            "%s: runtime %s sits inside the lines this module added (between its begin and end markers), put there "
            "after it wrote them; state=absent would remove it with them. Move it out of that block, then run again; "
            "the file was left as it was" % (doc.name, ", ".join(foreign)))
    for line, text in kept:
        warnings.append("%s, line %d: %s was changed by hand since this module wrote it; it was left as it is"
                        % (doc.name, line, text))
    for key in ("version", "imports", "disabled_plugins"):
        tracker.add(key, before.get(key), after.get(key), reason="%r -> %s (restored)" % (
            before.get(key), "unset" if after.get(key) is None else repr(after.get(key))))
    for path in (cc.containerd_table(version) + ("default_runtime_name",), cc.cri_table(version) + ("enable_cdi",),
                 cc.cri_table(version) + ("cdi_spec_dirs",)):
        was, now = toml_edit.get_path(before, path), toml_edit.get_path(after, path)
        tracker.add(_name_of(path, version), was, now, reason="%r -> %s (restored)" % (
            was, "unset" if now is None else repr(now)))
    old = toml_edit.get_path(before, runtimes_before) or {}
    new = toml_edit.get_path(after, runtimes_before) or {}
    for name in old:
        if name not in new:
            tracker.add("runtime %s" % name, "present", None, reason="added by this module (removed)")
        elif old[name] != new[name]:
            tracker.add("runtime %s" % name, old[name], new[name], reason="changed by this module (restored)")
    for entry in params["runtimes"]:
        if entry["name"] in new and entry["name"] in old and old[entry["name"]] == new[entry["name"]]:
            warnings.append("%s: runtime %s was not added by this module; it was left as it is"
                            % (doc.name, entry["name"]))


def _present_drop_in(doc, version, params, tracker, drop_in, drop_in_text):
    """Drop-in mode: the root only gets ``imports``; the runtimes go to the drop-in file."""
    cc.check_drop_in(params.get("path") or cc.DEFAULT_PATH, drop_in)
    imports = doc.data.get("imports")
    if imports is not None and not (isinstance(imports, list) and all(isinstance(x, str) for x in imports)):
        raise cc.ConfigError("%s: imports must be a list of paths, but it is %r" % (doc.name, imports))
    current = list(imports or [])
    if not cc.import_covered(current, drop_in):
        doc.set(("imports",), current + [drop_in])
        tracker.add("imports", current, current + [drop_in], reason="%s missing (added)" % drop_in)
    existing = toml_edit.load(drop_in_text, drop_in) if drop_in_text is not None else None
    data = {"version": version}
    if cc.drop_in_carries_cri_table(version):
        # containerd before 2.1 replaces a plugin's table from imports instead of merging it:
        # the drop-in carries the root's whole CRI table, runtimes included.
        cri = toml_edit.get_path(doc.data, cc.cri_table(version))
        if isinstance(cri, dict):
            data = cc.apply_ops(data, [("set", cc.cri_table(version), cri)])
    sub = DifferenceTracker()
    ops = cc.plan_present(data, version, params, source=doc.data if not cc.drop_in_carries_cri_table(version) else data)
    data = cc.apply_ops(data, [op if op[0] == "set" else ("set", op[1], op[2]) for op in ops])
    for op in ops:
        sub.add("runtime %s" % op[1][-1] if op[0] == "table" else _name_of(op[1], version), None, op[2])
    if existing == data:
        return drop_in_text
    new_text = toml_edit.document_text(data, layout=doc.layout, literal=doc.literal)
    if drop_in_text is None:
        new_text = ownership.created_line(params.get("drop_in_created_dirs") or []) + "\n" + new_text
    elif ownership.record_in_text(drop_in_text) is not None:
        # Rewritten: it stays the file this module created, with the directories it made for it.
        new_text = ownership.record_in_text(drop_in_text)[0] + "\n" + new_text
    tracker.add("drop_in %s" % drop_in, drop_in_text, new_text, reason=None if drop_in_text is None else "differs",
                path=drop_in)
    return new_text
