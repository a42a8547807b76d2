# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write or remove one CDI spec file on a node: what ``cdi_spec`` does, without Ansible.

The module and the node's own generator (``cdi_refresh``, run at boot and after a driver
upgrade) both call :func:`converge`, so a spec written between playbook runs is byte for byte
the one the next run would write. Standard library only; every file operation goes through
:class:`~.node_fs.NodeRoot`. The caller holds the node's lock.
"""

from __future__ import annotations

import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi, discovery, node_fs, ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import DifferenceTracker, change
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import NodeError, node_argument_spec

FILE_MODE = 0o644
# How much of a sibling spec is read for its created_dirs record (it is in the header).
HEAD_SIZE = 4096


def argument_spec():
    """``cdi_spec``'s options; the generator fills in the same defaults."""
    return dict(
        node_argument_spec(driver=True, read_ahead=True),
        state={"type": "str", "choices": ["present", "absent"], "default": "present"},
        spec_mode={"type": "str", "choices": list(cdi.MODES), "default": "management", "aliases": ["mode"]},
        device_name_strategy={"type": "list", "elements": "str", "choices": list(cdi.NAME_STRATEGIES),
                              "default": ["index", "uuid"]},
        vendor={"type": "str"},
        device_class={"type": "str", "default": cdi.DEFAULT_CLASS, "aliases": ["class"]},
        devices={"type": "list", "elements": "str"},
        all_device={"type": "bool", "default": True},
        path={"type": "path"},
        format={"type": "str", "choices": ["yaml", "json"]},
        hook_path={"type": "path", "default": cdi.DEFAULT_HOOK_PATH},
        container_driver_root={"type": "str"},
        ldconfig_path={"type": "str"},
        disable_hooks={"type": "list", "elements": "str", "choices": list(cdi.HOOKS) + ["all"], "default": []},
    )


class CdiFileError(NodeError):
    """The spec cannot be written or removed; nothing was changed. ``details`` go into the result."""


class Run:
    """One spec's converge: the node, the options (``cdi_spec``'s, with their defaults), check mode,
    and the warnings raised on the way."""

    def __init__(self, node, params, check_mode=False):
        self.node = node
        self.params = params
        self.check_mode = check_mode
        self.warnings = []


def decoded(data):
    """A spec file's bytes as text, as the module and the controller read it (bad bytes replaced)."""
    return data.decode("utf-8", "replace")


def other_specs(node, own):
    """``{host path: text}`` of the other spec files in the directories CDI consumers read;
    ``own`` is the host path our spec resolves to."""
    found = {}
    seen_dirs = set()
    for directory in cdi.SPEC_DIRS:
        try:
            resolved = node.resolve(directory)
            names = node.list_dir(resolved)
        except (node_fs.NodeFsError, OSError):
            continue
        if resolved in seen_dirs:  # /var/run is usually a link to /run
            continue
        seen_dirs.add(resolved)
        for name in names:
            if not name.endswith(cdi.SPEC_SUFFIXES):
                continue
            try:
                real = node.resolve(posixpath.join(resolved, name))
                text = None if real == own else node.read_text(real)
            except node_fs.NodeFsError:
                continue
            if text is not None:
                found[posixpath.join(directory, name)] = text
    return found


def sibling_records(node, target):
    """What the other specs of this collection next to ``target`` record as created directories."""
    directory, own = posixpath.split(target)
    records = []
    try:
        names = node.list_dir(directory)
    except OSError:
        return records
    for name in names:
        if name == own or not name.endswith(cdi.SPEC_SUFFIXES):
            continue
        try:
            data = node.read_bytes(node.resolve(posixpath.join(directory, name)))
        except node_fs.NodeFsError:
            continue
        if data is not None:
            records.append(cdi.recorded_created_dirs(decoded(data[:HEAD_SIZE])))
    return records


def remove(run, path, target, before_text, result):
    """state=absent: the spec (or the link in its place) goes, and with the last of this
    collection's specs the directories they record as created."""
    result["changed"] = True
    # The diff is always returned; Ansible shows it only with --diff.
    result["diff"] = node_fs.text_diff(path, before_text, path, None)
    result["changes"].append(change(path, "removed"))
    if run.check_mode:
        return
    try:
        run.node.remove(target)
    except node_fs.NodeFsError as exc:
        raise CdiFileError(str(exc), **dict(result, changed=False, changes=[])) from None
    result["removed_dirs"] = run.node.remove_empty_dirs(ownership.removable(target, cdi.recorded_created_dirs(before_text)))
    result["changes"].extend(change(d, "removed") for d in result["removed_dirs"])


def planned_spec(params, path, facts, others):
    """``(spec, format, warnings, result fields)`` for the node whose driver ``facts`` (as
    :func:`discovery.discover_node` returns them) were found, ``others`` the other spec files CDI
    consumers read (``{host path: text}``). Pure: the module decides with it on the node, the
    action plugin on the controller from the look at the node. Raises :class:`cdi.CdiError`."""
    spec = cdi.build_spec(
        facts, mode=params["spec_mode"], device_name_strategy=params["device_name_strategy"],
        vendor=params["vendor"], cls=params["device_class"], devices=params["devices"],
        all_device=params["all_device"], hook_path=params["hook_path"],
        container_driver_root=params["container_driver_root"], ldconfig_path=params["ldconfig_path"],
        disable_hooks=params["disable_hooks"],
    )
    fmt = params["format"] or cdi.format_from_path(path)
    fields = {"format": fmt, "kind": spec["kind"], "cdi_version": spec["cdiVersion"], "devices": cdi.qualified_names(spec),
              "driver_version": facts["driver_version"], "driver_root": facts["driver_root"],
              "dev_root": facts["dev_root"], "spec": spec}
    return spec, fmt, cdi.same_kind_warnings(path, spec["kind"], others), fields


def spec_text(spec, fmt, facts, target, made_now, before_text, siblings, is_link):
    """The text to write at ``target`` (the host path the spec is written to): with the
    directories its write makes now (``made_now``), its earlier version recorded and the other
    specs of ours beside it (``siblings``, their records) in its header; an earlier release's
    record of the same directories is kept as it is (not rewritten for that)."""
    created_dirs = cdi.created_dirs_for(target, made_now, cdi.recorded_created_dirs(before_text), siblings)
    text = cdi.render(spec, fmt, facts, created_dirs)
    if ownership.same_but_record(before_text, text, ownership.LEGACY_CDI) and not is_link:
        return before_text
    return text


def build(run, path, read_from, result):
    """The spec for the node, the facts it was built from and its format; fills the result."""
    params = run.params
    try:
        facts = discovery.discover_node(params["host_root"], params["driver_root"], params["dev_root"],
                                        params["library_search_paths"])
    except discovery.DiscoveryError as exc:
        raise CdiFileError(str(exc), **dict(result, **exc.details)) from None
    run.warnings.extend(facts.pop("warnings"))
    try:
        spec, fmt, warnings, fields = planned_spec(params, path, facts, other_specs(run.node, read_from))
    except cdi.CdiError as exc:
        raise CdiFileError(str(exc), **dict(result, **exc.details)) from None
    run.warnings.extend(warnings)
    result.update(fields)
    return spec, facts, fmt


def write(run, path, target, existing, is_link, before_text, result):
    """state=present: write the spec when its bytes (or a link in its place) differ, else fix its mode."""
    node = run.node
    spec, facts, fmt = build(run, path, node.resolve(target), result)
    spec_dir = posixpath.dirname(target)
    made_now = node.missing_dirs(spec_dir)
    text = spec_text(spec, fmt, facts, target, made_now, before_text, sibling_records(node, target), is_link)
    data = text.encode("utf-8")
    if existing == data and not is_link:
        mode = node.observe(target)["mode"]
        tracker = DifferenceTracker()
        if tracker.add("mode", "%04o" % mode, "%04o" % FILE_MODE):
            result.update(changed=True, diff=tracker.as_diff(), changes=[change(path, "mode_changed")])
            if not run.check_mode:
                try:
                    node.chmod(target, FILE_MODE)
                except node_fs.NodeFsError as exc:
                    raise CdiFileError(str(exc), **dict(result, changed=False, changes=[])) from None
        return
    action = "replaced" if is_link else "created" if existing is None else "updated"
    result.update(changed=True, diff=node_fs.text_diff(path, before_text, path, text),
                  changes=[change(d, "created") for d in made_now] + [change(path, action)])
    if run.check_mode:
        return
    made = []
    try:
        made = node.make_dirs(spec_dir)
        node.write(target, data, mode=FILE_MODE)
    except node_fs.NodeFsError as exc:
        node.remove_empty_dirs(made)
        message = str(exc) if exc.path == target else "cannot write %s: %s" % (path, exc)
        raise CdiFileError(message, **dict(result, changed=False, changes=[])) from None


def converge(run, path):
    """Make the spec at host path ``path`` what ``run.params`` say; the module's result dict."""
    node, params = run.node, run.params
    try:
        target = node.resolve_parent(path)  # what is written or removed: a link at path is replaced
        read_from = node.resolve(path)
    except node_fs.NodeFsError as exc:
        raise CdiFileError("cannot resolve %s under host_root %s: %s" % (path, params["host_root"], exc)) from None
    if not cdi.in_spec_dir(path):
        run.warnings.append("%s is outside %s: container runtimes do not read CDI specs there by default"
                            % (path, ", ".join(cdi.SPEC_DIRS)))
    is_link = (node.observe(target) or {}).get("type") == "symlink"
    blocker = next((d for d in node.missing_dirs(posixpath.dirname(target)) if node.exists(d)), None)
    if blocker is not None:  # nothing can be at path; it cannot be written either
        if params["state"] == "absent":
            return {"changed": False, "path": path, "changes": [], "previous_driver_version": None}
        raise CdiFileError("cannot write %s: %s exists and is not a directory; move it away or set path "
                           "to another file" % (path, blocker), path=path)
    try:
        existing = node.read_bytes(read_from)
    except node_fs.NodeFsError as exc:
        raise CdiFileError("%s; nothing was changed" % exc, path=path) from None
    before_text = decoded(existing) if existing is not None else None
    result = {"changed": False, "path": path, "changes": [],
              "previous_driver_version": cdi.recorded_driver_version(before_text or "")}
    if params["state"] == "absent":
        if existing is not None or is_link:
            remove(run, path, target, before_text, result)
        return result
    if is_link:
        run.warnings.append("%s is a symlink: it is replaced by a regular file" % path)
    write(run, path, target, existing, is_link, before_text, result)
    return result
