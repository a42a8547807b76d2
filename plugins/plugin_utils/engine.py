# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one transaction behind ``containerd_runtime``, ``docker_runtime`` and ``crio_runtime``.

An engine's action plugin reads what its rules need from the node, asks them (pure functions:
``plugin_utils.containerd_toml``, ``module_utils.docker_config``, ``module_utils.crio_config``)
for an :class:`EnginePlan`, and hands the plan to :meth:`EngineAction.carry_out`, which does the
rest the same way for every engine:

- the plan's files are written or removed in its order (a journal before the file it describes,
  the other way round on removal), each atomically, as a compare-and-swap on what was read;
- with ``backup``, each file's previous text is kept first, as Ansible names backups;
  ``backup_files`` maps each file to its copy, or to None for a file the run created (a rollback
  removes it);
- the directories that the removed files' ownership records list go, each only when it is empty
  and only where :func:`...module_utils.ownership.removable` allows;
- with ``remove_backups``, the copies this module made earlier go, chosen before anything is
  written, so the copies this run makes are kept;
- one result: ``changes`` (``{"path", "action"}`` entries, built by ``module_utils.differences``),
  ``restart_required`` (only when what the engine reads changed),
  ``backup_files``, ``removed_dirs``, ``removed_backups``, one ``diff`` entry per file.
"""

from __future__ import annotations

import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import text_diff
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import NodeFile


class FileStep:
    """One file of a plan: ``text`` is what it is to hold, None to remove it.

    ``copy_dir``: keep the ``backup`` copy there, as a dot file, instead of beside the file (an
    engine reading every file of the file's directory would read a copy there too).
    ``copy_on_remove``: keep a copy before a removal too (a removed journal; a removed drop-in that
    may hold hand edits); a file this module created and nothing else is in needs none.
    ``keep_copy_because``: a copy is kept whatever ``backup`` says, and a warning names it with this
    reason (a file of this module's changed by hand since: the edits are not lost).
    ``read_by_engine``: whether the engine reads the file (a change means a restart), or only this
    module does (a journal). ``diff``: whether ``--diff`` shows it."""

    def __init__(self, node_file, text, mode=None, validate=None, copy_dir=None, copy_mode=None,
                 copy_on_remove=False, keep_copy_because=None, read_by_engine=True, diff=True):
        self.node_file = node_file
        self.text = text
        self.mode = mode
        self.validate = validate
        self.copy_dir = copy_dir
        self.copy_mode = copy_mode or mode
        self.copy_on_remove = copy_on_remove
        self.keep_copy_because = keep_copy_because
        self.read_by_engine = read_by_engine
        self.diff = diff

    @property
    def before(self):
        return self.node_file.text if self.node_file.exists else None

    @property
    def needed(self):
        return self.text != self.before


class BackupSet:
    """Where ``remove_backups`` looks for the copies made of one file, and which are this module's.

    ``owner``: the NodeFile the copies were made of (its ownership record owns the directories a
    copy records); ``pattern``: the copies' names (``ownership.backup_pattern``); ``directory``:
    where they are (default: beside ``owner``); ``judge(texts)`` (host path -> text, or None when
    unreadable) returns ``(ours, dirs)``: the copies to remove, and the directories their records
    list, removed when ``gone`` (the file is not there after this run)."""

    def __init__(self, owner, pattern, judge, gone, directory=None):
        self.owner = owner
        self.pattern = pattern
        self.judge = judge
        self.gone = gone
        self.directory = directory


class EnginePlan:
    """What an engine's rules decided: ``steps`` (FileStep, in order), ``remove_dirs`` (``(owner
    host path, recorded directories)`` of the removed files), ``changes`` (entries of
    :func:`...module_utils.differences.change`), ``warnings`` (lines),
    ``restart_required`` (the engine reads something new once the files are written), ``result``
    (keys of the task's result: ``path`` and the engine's own), ``backups`` (BackupSet, for
    ``remove_backups``), ``notes`` (symlink notes: the result's ``symlinks``)."""

    def __init__(self, steps=(), remove_dirs=(), changes=(), warnings=(), restart_required=False, result=None,
                 backups=(), notes=()):
        self.steps = list(steps)
        self.remove_dirs = list(remove_dirs)
        self.changes = list(changes)
        self.warnings = list(warnings)
        self.restart_required = restart_required
        self.result = dict(result or {})
        self.backups = list(backups)
        self.notes = [n for n in notes if n]


class EngineAction(NodeActionBase):
    """The base of the engine action plugins: :meth:`carry_out` runs an :class:`EnginePlan`."""

    def carry_out(self, files, host_root, plan, backup=False, remove_backups=False):
        check_mode = self.check_mode
        out = dict(plan.result)
        out["changes"] = list(plan.changes)
        if plan.warnings:
            out["warnings"] = list(plan.warnings)
        if plan.notes:
            out["symlinks"] = list(plan.notes)
        # Chosen before this run writes: the copies it makes itself are kept.
        old_copies, copy_records = self._own_copies(files, host_root, plan.backups) if remove_backups else ([], [])
        changed = engine_changed = False
        backup_files = {}  # host path -> its copy, or None for a file this run created
        diffs = []
        for step in plan.steps:
            if not step.needed:
                continue
            if step.keep_copy_because:
                copy_path = None if check_mode else self._keep_copy(files, step)
                out.setdefault("warnings", []).append("%s was %s; %s" % (
                    step.node_file.host_path, step.keep_copy_because,
                    "a copy would be kept" if check_mode else "a copy of it as it was is at %s" % copy_path))
                did = self._apply(files, step, False, backup_files)
                if backup and copy_path:
                    backup_files[step.node_file.host_path] = copy_path
            else:
                did = self._apply(files, step, backup and not check_mode, backup_files)
            changed = changed or did
            engine_changed = engine_changed or (did and step.read_by_engine)
            if did and step.diff:
                diffs.append(text_diff(step.node_file.host_path, step.before, step.node_file.host_path, step.text))
        removed_dirs = []
        if plan.remove_dirs:
            removed_dirs, dir_changes = files.remove_created_dirs(host_root, plan.remove_dirs, check_mode)
            out["changes"].extend(dir_changes)
        if remove_backups:
            out["removed_backups"] = [copy_path for copy_path, _text in old_copies]
        if old_copies:
            for copy_path, text in old_copies:
                files.remove(NodeFile(host_root, copy_path, copy_path, True, text, []), check_mode)
            out["changes"].extend(change(c, "removed", "a backup made by this module") for c in out["removed_backups"])
            removed, dir_changes = files.remove_created_dirs(host_root, copy_records, check_mode)
            removed_dirs.extend(removed)
            out["changes"].extend(dir_changes)
            changed = True
        if plan.remove_dirs or old_copies:
            out["removed_dirs"] = removed_dirs
        out["changed"] = changed
        out["restart_required"] = bool(engine_changed and plan.restart_required)
        if backup_files:
            # Each file named with its own copy: a rollback restores each file from its own.
            out["backup_files"] = backup_files
            if backup_files.get(out.get("path")):
                out["backup_file"] = backup_files[out["path"]]
        if self.diff_mode and diffs:
            out["diff"] = diffs
        return out

    def _apply(self, files, step, backup, backup_files):
        node_file = step.node_file
        if step.text is None:
            if backup and step.copy_on_remove:
                backup_files[node_file.host_path] = self._keep_copy(files, step)
            return files.remove(node_file, self.check_mode)
        if backup and step.copy_dir is not None and node_file.exists:
            backup_files[node_file.host_path] = self._keep_copy(files, step)
            did, _copy = files.write(node_file, step.text, self.check_mode, validate=step.validate, mode=step.mode)
            return did
        did, copy_path = files.write(node_file, step.text, self.check_mode, backup=backup and step.copy_dir is None,
                                     validate=step.validate, mode=step.mode)
        if did and backup:
            if copy_path or not node_file.exists:
                backup_files[node_file.host_path] = copy_path
        return did

    @staticmethod
    def _keep_copy(files, step):
        """Write a timestamped copy of the step's file as it is now; its host path."""
        node_file = step.node_file
        copy_path = ownership.backup_name(node_file.host_path, hidden_in=step.copy_dir)
        files.write(NodeFile(node_file.host_root, copy_path, copy_path, False, None, []), node_file.text, False,
                    mode=step.copy_mode)
        return copy_path

    @staticmethod
    def _own_copies(files, host_root, backup_sets):
        """``([(copy, text)], [ownership record])``: the earlier copies that are this module's, and
        the directories their records list for files that are gone."""
        found, records = [], []
        for backups in backup_sets:
            directory = backups.directory or posixpath.dirname(backups.owner.host_path)
            candidates = files.backups_of(host_root, directory, backups.pattern)
            if not candidates:
                continue
            _read, _existing, texts = files.read_many(host_root, [], texts=candidates)
            texts = dict(zip(candidates, texts))
            ours, dirs = backups.judge(texts)
            found.extend((copy_path, texts[copy_path]) for copy_path in sorted(ours))
            if ours and dirs and backups.gone:
                records.append((backups.owner.host_path, dirs))
        return found, records
