# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of ``toolkit_install``: fetch and check the sources, unpack the packages,
send the node one plain tarball, and run the module on it with ``remote_src``."""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.module_utils.urls import open_url
from ansible.plugins.action import ActionBase

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import archive_safety
from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils import archives

MODULE = "gpu_node.container_toolkit.toolkit_install"
URL_SCHEMES = ("http://", "https://", "ftp://")
PAYLOAD_NAME = "toolkit-payload.tar"


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [to_native(v) for v in value]
    return [to_native(value)]


def _digest(path, algorithm):
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ActionModule(ActionBase):
    TRANSFERS_FILES = True

    def _download(self, url, workdir, index, validate_certs):
        target = os.path.join(workdir, "download-%d" % index)
        try:
            response = open_url(url, validate_certs=validate_certs, timeout=60)
            with open(target, "wb") as handle:
                shutil.copyfileobj(response, handle)
        except Exception as exc:  # open_url raises many kinds; name the URL in every case
            raise AnsibleActionFail("downloading %s failed: %s" % (url, to_native(exc))) from None
        return target

    def _local_sources(self, args, workdir):
        """Local paths of every src item, downloaded and checksum-verified."""
        sources = _as_list(args.get("src"))
        checksums = _as_list(args.get("checksum"))
        if not sources:
            raise AnsibleActionFail("src is required when state=present")
        if checksums and len(checksums) != len(sources):
            raise AnsibleActionFail("checksum has %d items but src has %d: give one per src item, in order"
                                    % (len(checksums), len(sources)))
        validate_certs = boolean(args.get("validate_certs", True), strict=False)
        paths = []
        for index, src in enumerate(sources):
            expected = None
            if checksums:
                try:
                    expected = archive_safety.parse_checksum(checksums[index])
                except ValueError as exc:
                    raise AnsibleActionFail(to_native(exc)) from None
            if src.startswith(URL_SCHEMES):
                if expected is None:
                    raise AnsibleActionFail("src %s is a URL: set checksum (sha256:<hex>) for it" % src)
                path = self._download(src, workdir, index, validate_certs)
            else:
                try:
                    path = self._find_needle("files", os.path.expanduser(src))
                except Exception as exc:
                    raise AnsibleActionFail("src %s not found on the controller: %s" % (src, to_native(exc))) from None
                if os.path.isdir(path) and expected is not None:
                    raise AnsibleActionFail("checksum cannot be checked for the directory %s" % src)
            if expected is not None:
                actual = _digest(path, expected[0])
                if actual != expected[1]:
                    raise AnsibleActionFail("checksum mismatch for %s: expected %s:%s, got %s:%s; nothing was written"
                                            % (src, expected[0], expected[1], expected[0], actual))
            paths.append((src, path))
        return paths

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        state = args.get("state", "present")
        remote_src = boolean(args.get("remote_src", False), strict=False)
        if state != "present" or remote_src:
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
            return result

        workdir = tempfile.mkdtemp(prefix="gpu_node-toolkit-")
        try:
            try:
                member_lists = [archives.read_source(path) for _src, path in self._local_sources(args, workdir)]
            except archives.ArchiveError as exc:
                raise AnsibleActionFail("%s; nothing was written" % to_native(exc)) from None
            payload = os.path.join(workdir, PAYLOAD_NAME)
            archives.write_payload(archives.merge(member_lists), payload)

            remote_tmp = self._make_tmp_path()
            remote_payload = posixpath.join(remote_tmp, PAYLOAD_NAME)
            self._transfer_file(payload, remote_payload)
            self._fixup_perms2((remote_tmp, remote_payload))

            # The module reads a src inside its own temporary directory as it is, not under host_root.
            module_args = dict(args, src=[remote_payload], remote_src=True)
            module_args.pop("checksum", None)
            result.update(self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return result
