# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of ``toolkit_install``: fetch and check the sources, read them with the one
source reader (:mod:`...module_utils.toolkit_source`, which the node uses too), send the node one
compressed tarball with the module's arguments, and run the module on it with ``remote_src``.
With ``config``, the toolkit's ``config.toml`` is edited here as ``toolkit_config`` edits it, and
written by the same module run. When the look at the node read the install ahead and it is in
place, with its config, no module runs at all."""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile

from ansible.errors import AnsibleActionFail, AnsibleFileNotFound
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.urls import open_url

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import (
    argument_specs,
    mounts,
    node_model,
    node_reads,
    toolkit_layout,
    toolkit_source,
)
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import local_command, toolkit_toml
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.action_base import NodeActionBase
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import NodeFiles, ReadAhead

MODULE = "gpu_node.container_toolkit.toolkit_install"


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [to_native(v) for v in value]
    return [to_native(value)]


class ActionModule(NodeActionBase):
    argument_spec = staticmethod(argument_specs.toolkit_install)

    def _download(self, url, workdir, index, validate_certs):
        target = os.path.join(workdir, "download-%d" % index)
        try:
            response = open_url(url, validate_certs=validate_certs, timeout=60)
            with open(target, "wb") as handle:
                shutil.copyfileobj(response, handle)
        except Exception as exc:  # open_url raises many kinds; name the URL in every case
            raise AnsibleActionFail("downloading %s failed: %s" % (url, to_native(exc))) from None
        return target

    def _controller_file(self, src):
        try:
            return self.controller_file(src)
        except AnsibleFileNotFound as exc:
            raise AnsibleActionFail("src %s not found on the controller: %s" % (src, to_native(exc))) from None

    def _local_sources(self, args, workdir):
        """The tree of every src item, downloaded and checksum-verified, merged in order."""
        pairs = toolkit_source.pair_checksums(_as_list(args.get("src")), _as_list(args.get("checksum")))
        if not pairs:
            raise AnsibleActionFail("src is required when state=present")
        validate_certs = args["validate_certs"]
        trees = []
        for index, (src, expected) in enumerate(pairs):
            if src.startswith(toolkit_source.URL_SCHEMES):
                if expected is None:
                    raise AnsibleActionFail("src %s is a URL: set checksum (sha256:<hex>) for it" % src)
                path = self._download(src, workdir, index, validate_certs)
            else:
                path = self._controller_file(src)
            toolkit_source.verify_checksum(path, src, expected)
            trees.append(toolkit_source.read_source(path, local_command.run_tool, src))
        return toolkit_source.merge(trees)

    refusals = (toolkit_source.SourceError,) + toolkit_toml.REFUSALS

    def converge(self, args, task_vars):
        if args.pop("_wire", None) is not None:
            raise AnsibleActionFail("_wire is set by the action plugin itself, not by a task: remove it")
        read_ahead = args.pop("read_ahead", None)
        config = self._config(args, read_ahead, task_vars)
        if config is None:
            return self._install(args, read_ahead, task_vars, {})
        out, write = config
        result = self._install(args, read_ahead, task_vars, {} if write is None else {"config_write": write})
        written = result.pop("config_write", None)
        if result.get("failed"):
            return result
        if written is not None:
            out["changed"] = written["changed"]
            if written.get("backup_file"):
                out["backup_file"] = written["backup_file"]
        if not out["changed"]:
            out.pop("diff", None)
        result["config"] = out
        result["changed"] = bool(result.get("changed")) or out["changed"]
        if out.get("diff"):
            # The install's diff (a dict, always returned), then the config's text diff.
            result["diff"] = [result["diff"]] + out.pop("diff")
        return result

    def _config(self, args, read_ahead, task_vars):
        """``(toolkit_config's result, the write for the module run or None)`` for the ``config``
        option; None without it."""
        options = args.pop("config", None)
        if options is None:
            return None
        if args["state"] != "present":
            raise AnsibleActionFail("config is for state=present; remove the config.toml with "
                                    "gpu_node.container_toolkit.toolkit_config and state=absent")
        validated = ArgumentSpecValidator(argument_specs.toolkit_install_config()).validate(options)
        if validated.error_messages:
            raise AnsibleActionFail("config: %s" % "; ".join(validated.error_messages))
        # No config_path: toolkit_config's own default, the path the wrappers point at.
        config_args = dict(validated.validated_parameters, host_root=args["host_root"], read_ahead=read_ahead,
                           state="present", install_dir=args["install_dir"], path=args["config_path"])
        # The write joins the install's run: one round trip for both.
        files = NodeFiles(self, task_vars, read_ahead, defer_writes=True)
        out = toolkit_toml.converge(files, config_args, self.check_mode, self.diff_mode)
        return out, files.deferred[0] if files.deferred else None

    def _install(self, args, read_ahead, task_vars, wire):
        """The install's module run(s), with ``wire`` (toolkit_install's ``_wire``: ``config_write``
        here) and what this adds to it: ``expected`` or ``payload``."""
        def install(module_args, **more):
            return self.run_module(MODULE, dict(module_args, _wire=argument_specs.wire_text(dict(wire, **more))), task_vars)

        if args["state"] != "present" or args["remote_src"]:
            return install(args)
        workdir = tempfile.mkdtemp(prefix="gpu_node-toolkit-")
        try:
            tree = self._local_sources(args, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        # The node reads no source of its own: the files, or what they should be, travel in _wire.
        module_args = dict(args, remote_src=True, src=[])
        module_args.pop("checksum", None)
        in_place = None if wire.get("config_write") else self._in_place(tree, args, read_ahead)
        if in_place is not None:
            return in_place
        expected, missing = self._expected_if_listed(tree, args, read_ahead)
        if expected is not None:
            result = install(module_args, expected=expected)
            if not result.get("payload_needed"):
                if missing and not result.get("failed"):
                    # What the module says when it reads the sources itself.
                    result["missing"] = missing
                    result.setdefault("warnings", []).append(toolkit_layout.missing_warning(missing))
                return result
        # The files travel with the module's arguments: no temp dir, transfer or clean-up of their
        # own, on every connection and strategy (pipelining, SFTP, Mitogen).
        payload = toolkit_source.write_payload(tree)
        return install(module_args, payload=payload)

    @staticmethod
    def _in_place(tree, args, read_ahead):
        """The module's result for an install the look read ahead and found exactly in place, on a
        writable exec mount; None whenever the node has to be asked (anything to change, anything
        not read ahead or not as expected): the module then decides, and says why, as before."""
        if not read_ahead:
            return None
        ahead, host_root = ReadAhead(read_ahead), args["host_root"]
        install_dir = node_model.normalize_host_path(args["install_dir"])
        observed = ahead.install(host_root, install_dir)
        known, manifest_data = ahead.data(host_root, posixpath.join(install_dir, toolkit_layout.MANIFEST_NAME))
        table_known, table = ahead.data(host_root, node_reads.MOUNTINFO)
        if observed is None or not known or manifest_data is None or not table_known or table is None:
            return None
        target = observed["resolved"]
        manifest_text = manifest_data.decode("utf-8", "replace")
        try:
            manifest = toolkit_layout.parse_manifest(manifest_text)
            mount, _path = mounts.locate(mounts.parse_mountinfo(table.decode("utf-8", "replace")), host_root, target)
        except (ValueError, mounts.MountinfoError):
            return None
        if mount is not None and (mounts.is_read_only(mount) or mounts.is_noexec(mount)):
            return None
        config_path = args["config_path"]
        entries, missing = toolkit_layout.wanted_install(
            tree, install_dir, args["low_level_runtime"],
            node_model.normalize_host_path(config_path) if config_path else None, toolkit_source.read_member)
        if entries is None:
            return None
        current = {name: observed["entries"].get(name) for name in set(entries) | set(manifest["files"])}
        decided = toolkit_layout.present_plan(entries, current, manifest, manifest_text, install_dir, target,
                                              observed["missing_dirs"], (0, 0) if observed["euid"] == 0 else None)
        if decided["changes"] or decided["steps"]["conflicts"]:
            return None
        result = dict(toolkit_layout.present_result(install_dir, target, entries, decided, True),
                      install_dir=install_dir, missing=missing)
        warnings = [toolkit_layout.missing_warning(missing)] if missing else []
        writable = toolkit_layout.writable_warning(install_dir, observed["dir"]["mode"])
        if writable:
            warnings.append(writable)
        if mount is not None:
            result["mount"] = {"mount_point": mount["mount_point"], "options": mount["options"]}
        if warnings:
            result["warnings"] = warnings
        return result

    @staticmethod
    def _expected_if_listed(tree, args, read_ahead):
        """``(expected, missing)``: the install without its bytes when the manifest read ahead
        lists exactly it (then the node only checks, and the payload is sent only if the files
        differ), else None; and what the sources lack."""
        if not read_ahead:
            return None, []
        install_dir = node_model.normalize_host_path(args["install_dir"])
        manifest = posixpath.join(install_dir, toolkit_layout.MANIFEST_NAME)
        known, data = ReadAhead(read_ahead).data(args["host_root"], manifest)
        if not known or data is None:
            return None, []
        config_path = args["config_path"]
        entries, missing = toolkit_layout.wanted_install(
            tree, install_dir, args["low_level_runtime"],
            node_model.normalize_host_path(config_path) if config_path else None, toolkit_source.read_member)
        if entries is None:
            return None, []  # the module names what is missing
        if not toolkit_layout.installed_as_listed(data.decode("utf-8", "replace"), entries):
            return None, []
        return toolkit_layout.expected(entries), missing
