#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: toolkit_install
short_description: Install or remove the NVIDIA Container Toolkit's binaries with wrapper scripts
version_added: 0.1.0
description:
  - Installs the toolkit into O(install_dir) the way the upstream installer does, so that it works
    where nothing may go under C(/usr), such as Container-Optimized OS.
  - Each of C(nvidia-container-runtime), C(nvidia-container-runtime.cdi),
    C(nvidia-container-runtime.legacy), C(nvidia-container-runtime-hook), C(nvidia-ctk) and
    C(nvidia-container-cli) is installed as C(<name>.real) plus a C(/bin/sh) wrapper C(<name>).
    C(nvidia-cdi-hook) is installed as it is; C(nvidia-container-toolkit) is a link to
    C(nvidia-container-runtime-hook); C(libnvidia-container.so.1) and C(libnvidia-container-go.so.1)
    link to the versioned libraries.
  - Every wrapper puts O(install_dir) first in E(PATH). The runtime and hook wrappers set
    E(NVIDIA_CTK_CONFIG_FILE_PATH) to O(config_path); the CLI wrapper puts O(install_dir) first in
    E(LD_LIBRARY_PATH). The runtime wrappers run O(low_level_runtime) instead when the C(nvidia)
    kernel module is not loaded.
  - Files are staged in a temporary directory inside O(install_dir), then renamed into place;
    a failure (a full disk, a read-only file system) leaves the previous install as it was. Only
    files whose content, mode or owner differ are touched. A manifest, C(.toolkit-manifest.json),
    written last, records what was installed so that O(state=absent) removes exactly that. Links
    in O(install_dir) are resolved inside O(host_root). The install or removal holds the node's
    lock, so two runs on one node take turns.
  - Sources are read by one reader, on the controller (the action plugin, which sends the node
    one compressed tarball of the merged files with the module's arguments) or, with O(remote_src=true), on the node. Members
    with absolute names, C(..), links leaving the source, hard links to anything but an earlier
    file of the same archive, device files or setuid/setgid bits are refused, and so is a
    checksum mismatch, before anything is written.
  - The mount holding O(install_dir) is read from C(<host_root>/proc/self/mountinfo). A read-only
    mount fails. A C(noexec) mount fails unless O(exec_mount=true).
requirements:
  - "On the controller, for C(.rpm) sources: the C(rpm2cpio) command; for C(.deb) sources compressed
    with zstd: the C(zstd) command. With O(remote_src=true) these are needed on the node instead."
  - Nothing else beyond Python 3's standard library, on either side.
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
  - gpu_node.container_toolkit.node.READ_AHEAD
  - gpu_node.container_toolkit.attributes.NODE_GROUP
attributes:
  platform:
    platforms: posix
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Archives are still unpacked on the controller, to compare them; nothing is installed.
  diff_mode:
    support: full
    details: The diff lists the installed files, each with its type, mode and checksum prefix.
  safe_file_operations:
    support: full
  idempotent:
    support: full
options:
  src:
    description:
      - Where the toolkit comes from. One or more of
      - a directory shaped like the unpacked packages (C(usr/bin/...), C(usr/lib/x86_64-linux-gnu/...)
        or C(usr/lib64/...)); a flat directory also works;
      - NVIDIA's C(.deb) or C(.rpm) packages (C(nvidia-container-toolkit),
        C(nvidia-container-toolkit-base), C(libnvidia-container-tools), C(libnvidia-container1));
      - a tarball (C(.tar), C(.tar.gz), C(.tar.xz), C(.tar.bz2));
      - an C(http://), C(https://) or C(ftp://) URL of any of these, downloaded on the controller;
        it requires O(checksum).
      - The trees of all items are merged, later ones winning.
      - On the controller unless O(remote_src=true).
      - Required when O(state=present).
    type: list
    elements: str
  remote_src:
    description:
      - O(src) items are on the node, read there by the same reader as on the controller.
      - URLs cannot be used there. A zstd-compressed C(.deb) needs the C(zstd) command on the
        node, an C(.rpm) the C(rpm2cpio) command.
    type: bool
    default: false
  checksum:
    description:
      - Checksums of the O(src) items, in order, in C(get_url)'s form C(<algorithm>:<hex digest>),
        for example V(sha256:0f1e...).
      - Required for URLs. Also accepted for files, but not for directories.
      - A mismatch fails before anything is written.
    type: list
    elements: str
  validate_certs:
    description:
      - Verify TLS certificates when downloading a URL O(src).
    type: bool
    default: true
  install_dir:
    description:
      - Host path of the installed toolkit. It must be writable and on an exec mount.
      - On Container-Optimized OS use V(/home/kubernetes/bin/nvidia/toolkit).
      - Created, with its missing parents, when absent; removed again by O(state=absent) when
        this module created it and it is empty.
    type: path
    default: /usr/local/nvidia/toolkit
  state:
    description:
      - V(present) installs or updates the toolkit.
      - V(absent) removes every file the manifest lists, the manifest, and the directories the
        install created when they are empty. Without a manifest nothing is removed.
    type: str
    choices: [present, absent]
    default: present
  low_level_runtime:
    description:
      - The low-level runtime the runtime wrappers run instead when the C(nvidia) kernel module is
        not loaded. A name looked up in E(PATH), or an absolute host path.
    type: str
    default: runc
  config_path:
    description:
      - Host path of the toolkit's C(config.toml) that the runtime and hook wrappers point
        E(NVIDIA_CTK_CONFIG_FILE_PATH) at, and that O(config) writes.
      - Defaults to C(<install_dir>/.config/nvidia-container-runtime/config.toml), which
        M(gpu_node.container_toolkit.toolkit_config) writes.
    type: path
  exec_mount:
    description:
      - When O(install_dir) is on a C(noexec) mount (the C(/home) of Container-Optimized OS),
        bind-mount O(install_dir) onto itself and remount it C(exec), as GKE does at boot for
        C(/home/kubernetes/bin). The mount does not survive a reboot.
      - Without it such a mount fails, naming the mount and its options.
    type: bool
    default: false
  config:
    description:
      - Also write the toolkit's C(config.toml), at O(config_path), in the same run on the node as
        the install, after it; one round trip less than a separate
        M(gpu_node.container_toolkit.toolkit_config) task.
      - The options of M(gpu_node.container_toolkit.toolkit_config), except C(host_root),
        C(read_ahead), C(state), C(path) and C(install_dir), which are this task's. The file is edited
        on the controller exactly as that module edits it, and RV(config) is that module's result.
      - Only with O(state=present). To remove the file, use M(gpu_node.container_toolkit.toolkit_config)
        with C(state=absent).
    type: dict
  _wire:
    description:
      - Internal, set by the action plugin and refused from a task; its shape may change in any release.
        What the controller sends the node, as the JSON text of an object with some of these keys (one
        string, which V(no_log) hides whole).
      - C(expected), what O(install_dir) should hold without the files' bytes (each name maps to a dict with
        C(type=file), C(sha256) and C(mode), or with C(type=symlink) and C(target)), sent instead of the
        sources when the manifest the action plugin was given in O(read_ahead) lists the same files, so a
        run that changes nothing sends the node no files. With it, O(src) is not read; when O(install_dir)
        holds exactly that, the result is the one a run with the sources gives, otherwise nothing is
        changed and RV(payload_needed=true) asks for the sources.
      - C(payload), the files the controller read from O(src) as a gzip-compressed tarball in base64,
        sent with the module's arguments so that the install needs no file transfer of its own and
        works with every connection and strategy. With it, O(src) and O(checksum) are not read.
      - C(config_write), the C(config.toml) the action plugin edited for O(config), as the options of
        M(gpu_node.container_toolkit.node_file_write) less C(host_root), written after the install (a
        compare-and-swap on what the action plugin read, under the node's lock), and not when
        RV(payload_needed) is returned.
    type: str
notes:
  - Run as root for the files to be owned by root. Files are never group- or world-writable.
  - The mount check reads C(<host_root>/proc/self/mountinfo); when it is missing, the check is
    skipped with a warning.
seealso:
  - module: gpu_node.container_toolkit.toolkit_config
  - module: gpu_node.container_toolkit.device_nodes
"""

EXAMPLES = r"""
---
- name: Install the toolkit from NVIDIA's packages on GKE's Container-Optimized OS
  gpu_node.container_toolkit.toolkit_install:
    src:
      - files/nvidia-container-toolkit_1.17.8-1_amd64.deb
      - files/nvidia-container-toolkit-base_1.17.8-1_amd64.deb
      - files/libnvidia-container-tools_1.17.8-1_amd64.deb
      - files/libnvidia-container1_1.17.8-1_amd64.deb
    install_dir: /home/kubernetes/bin/nvidia/toolkit
    exec_mount: true
  become: true

- name: Install the toolkit and write its config.toml in the same run on the node
  gpu_node.container_toolkit.toolkit_install:
    src: files/nvidia-container-toolkit-1.17.8-amd64.tar.gz
    checksum: sha256:9b2f5c0c3d0e4b1a8f7e6d5c4b3a291807f6e5d4c3b2a19080706050403020100
    install_dir: /home/kubernetes/bin/nvidia/toolkit
    exec_mount: true
    config:
      driver_root: /home/kubernetes/bin/nvidia
      runtime_mode: cdi
  become: true

- name: Install from a tarball downloaded by the controller
  gpu_node.container_toolkit.toolkit_install:
    src: https://artifacts.example.com/nvidia-container-toolkit-1.17.8-amd64.tar.gz
    checksum: sha256:9b2f5c0c3d0e4b1a8f7e6d5c4b3a291807f6e5d4c3b2a19080706050403020100
  become: true

- name: Install from a directory already on the node
  gpu_node.container_toolkit.toolkit_install:
    src: /var/lib/toolbox/nvidia-container-toolkit
    remote_src: true

- name: Remove the toolkit
  gpu_node.container_toolkit.toolkit_install:
    install_dir: /home/kubernetes/bin/nvidia/toolkit
    state: absent
"""

RETURN = r"""
payload_needed:
  description:
    - Only with C(expected) in O(_wire), outside check mode - O(install_dir) differs from it, so nothing was changed
      and the module must be run again with the sources. The action plugin does so; a task never
      returns it.
  returned: when O(_wire) had C(expected) and the install differs from it
  type: bool
  sample: true
install_dir:
  description: Host path of the install.
  returned: always
  type: str
  sample: /home/kubernetes/bin/nvidia/toolkit
changes:
  description:
    - What was (or, in check mode, would be) done, a C(path) (a host path) and an C(action) each.
    - V(created), V(updated) or V(removed) for each installed file and link and the manifest,
      V(created) for each directory made for O(install_dir) (V(removed) when O(state=absent)
      removes one, not reported in check mode), and V(remounted exec) for O(exec_mount).
    - The install's own, so they say whether the runtime binaries changed (an engine running them
      needs a restart); the O(config) write is in RV(config).
  returned: success
  type: list
  elements: dict
  sample:
    - {path: /home/kubernetes/bin/nvidia/toolkit/nvidia-ctk.real, action: updated}
    - {path: /home/kubernetes/bin/nvidia/toolkit/.toolkit-manifest.json, action: updated}
files:
  description: Host paths of everything installed (O(state=present)), or removed (O(state=absent)).
  returned: success
  type: list
  elements: str
  sample: [/home/kubernetes/bin/nvidia/toolkit/nvidia-ctk, /home/kubernetes/bin/nvidia/toolkit/nvidia-ctk.real]
added:
  description:
    - Names in O(install_dir) that were created.
    - Kept for one release; use RV(changes).
  returned: success
  type: list
  elements: str
  sample: [nvidia-ctk, nvidia-ctk.real]
updated:
  description:
    - Names whose content, link target, mode or owner were changed.
    - Kept for one release; use RV(changes).
  returned: success
  type: list
  elements: str
  sample: [nvidia-container-runtime.real]
removed:
  description:
    - Names that were removed (no longer in the source, or O(state=absent)).
    - Kept for one release; use RV(changes).
  returned: success
  type: list
  elements: str
  sample: [nvidia-container-runtime.legacy]
missing:
  description: Toolkit files the source did not contain and that were therefore not installed.
  returned: when O(state=present)
  type: list
  elements: str
  sample: [nvidia-container-runtime.legacy]
mount:
  description: The mount holding O(install_dir), as read from the node's mount table.
  returned: when the mount table could be read
  type: dict
  contains:
    mount_point:
      description: Where it is mounted, as the table names it.
      type: str
      sample: /home
    options:
      description: Its per-mount options.
      type: list
      elements: str
      sample: [rw, nosuid, nodev, noexec, relatime]
  sample:
    mount_point: /home
    options: [rw, nosuid, nodev, noexec, relatime]
exec_mount:
  description: Whether O(install_dir) was (or, in check mode, would be) bind-mounted and remounted exec.
  returned: success
  type: bool
  sample: true
config:
  description:
    - With O(config), the config write's result, as M(gpu_node.container_toolkit.toolkit_config)
      returns it (C(changed), C(path), C(changes), C(driver_root), C(settings), ...).
    - Its change makes the task changed, but is not in RV(changes), which stays the install's.
  returned: when O(config) was given and the task succeeded
  type: dict
  sample:
    changed: true
    path: /home/kubernetes/bin/nvidia/toolkit/.config/nvidia-container-runtime/config.toml
    changes:
      - path: /home/kubernetes/bin/nvidia/toolkit/.config/nvidia-container-runtime/config.toml
        action: updated
        setting: nvidia-container-cli.root
        reason: "unset -> '/home/kubernetes/bin/nvidia'"
    driver_root: /home/kubernetes/bin/nvidia
"""

import os
import posixpath

from ansible.module_utils.basic import AnsibleModule

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import (
    argument_specs,
    mounts,
    node_model,
    node_write,
    ownership,
    toolkit_layout,
    toolkit_source,
)
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_fs import NodeFsError, NodeRoot


class InstallError(Exception):
    pass


class Installer:
    def __init__(self, module):
        self.module = module
        self.node = NodeRoot(module.params["host_root"])
        self.install_dir = node_model.normalize_host_path(module.params["install_dir"])
        self.wire_text = module.params["_wire"]
        self.wire = {}
        self.target = self.install_dir  # install_dir with its links resolved inside host_root
        self.owner = (0, 0) if os.geteuid() == 0 else None
        self.result = {"changed": False, "install_dir": self.install_dir, "files": [], "added": [],
                       "updated": [], "removed": [], "changes": [], "exec_mount": False}

    def host(self, name):
        return posixpath.join(self.target, name)

    def read_manifest(self):
        path = self.host(toolkit_layout.MANIFEST_NAME)
        text = self.node.read_text(path)
        if text is None:
            return None, None
        try:
            return toolkit_layout.parse_manifest(text), text
        except ValueError as exc:
            raise InstallError("%s is not a manifest this module can use (%s); move it away to continue"
                               % (path, exc)) from None

    def check_mount(self):
        """Fail on a read-only mount; return the mount when it must be remounted exec."""
        try:
            text = self.node.read_text("/proc/self/mountinfo")
        except NodeFsError as exc:
            text, why = None, str(exc)
        else:
            why = "it does not exist"
        table = self.node.path("/proc/self/mountinfo")
        if text is None:
            self.module.warn("cannot read %s (%s); not checking the mount of %s" % (table, why, self.install_dir))
            return None
        try:
            mount, path = mounts.locate(mounts.parse_mountinfo(text), self.node.host_root, self.target)
        except mounts.MountinfoError as exc:
            raise InstallError("cannot parse %s: %s" % (table, exc)) from None
        if mount is None:
            return None
        self.result["mount"] = {"mount_point": mount["mount_point"], "options": mount["options"]}
        if mounts.is_read_only(mount):
            raise InstallError("install_dir %s is on the read-only mount %s; choose an install_dir on a writable "
                               "mount (on Container-Optimized OS, /home/kubernetes/bin/nvidia/toolkit)"
                               % (self.install_dir, mounts.describe(mount)))
        if not mounts.is_noexec(mount):
            return None
        if not self.module.params["exec_mount"]:
            raise InstallError("install_dir %s is on the noexec mount %s: the installed binaries could not run. "
                               "Set exec_mount=true to bind-mount %s onto itself and remount it exec, or choose "
                               "an install_dir on an exec mount" % (self.install_dir, mounts.describe(mount),
                                                                    self.install_dir))
        return mount, path

    def remount_exec(self, mount, path):
        here = self.node.path(self.target)
        mount_bin = self.module.get_bin_path("mount", required=True)
        if mount["mount_point"] != path:
            rc, out, err = self.module.run_command([mount_bin, "--bind", here, here])
            if rc != 0:
                raise InstallError("bind-mounting %s onto itself failed: %s" % (here, (err or out).strip()))
            mount = dict(mount, mount_point=path)
        rc, out, err = self.module.run_command([mount_bin, "-o", mounts.remount_exec_options(mount), here])
        if rc != 0:
            raise InstallError("remounting %s exec failed: %s" % (here, (err or out).strip()))

    def run_tool(self, name, argv, data=None):
        """toolkit_source's way to run a package's command (zstd, rpm2cpio) on the node."""
        tool = self.module.get_bin_path(name)
        if not tool:
            return None
        return self.module.run_command([tool, *argv], data=data, binary_data=True, encoding=None)

    def wanted_entries(self):
        """What install_dir should hold: the controller's payload, or every src item read here
        (checksums checked first)."""
        params = self.module.params
        if self.wire.get("payload"):
            return self.entries_of([toolkit_source.read_payload(self.wire["payload"])])
        trees = []
        for src, expected in toolkit_source.pair_checksums(params["src"], params["checksum"]):
            path = self.node.path(self.node.resolve(src))
            if not os.path.exists(path):
                raise InstallError("src %s does not exist (looked at %s)" % (src, path))
            toolkit_source.verify_checksum(path, src, expected)
            trees.append(toolkit_source.read_source(path, self.run_tool, src))
        return self.entries_of(trees)

    def entries_of(self, trees):
        params = self.module.params
        config_path = params["config_path"]
        entries, missing = toolkit_layout.wanted_install(
            toolkit_source.merge(trees), self.install_dir, params["low_level_runtime"],
            node_model.normalize_host_path(config_path) if config_path else None, toolkit_source.read_member)
        self.result["missing"] = missing
        if entries is None:
            raise InstallError("no toolkit files found in src: looked for %s under %s"
                               % (", ".join(missing), ", ".join(d or "." for d in toolkit_layout.BIN_DIRS)))
        if missing:
            self.module.warn(toolkit_layout.missing_warning(missing))
        return entries

    def present(self):
        expected = self.wire.get("expected")
        if expected:
            try:
                entries = toolkit_layout.parse_expected(expected)
            except ValueError as exc:
                raise InstallError("expected is not what the action plugin sends: %s" % exc) from None
        elif self.module.params["src"] or self.wire.get("payload"):
            entries = self.wanted_entries()
        else:
            raise InstallError("src is required when state=present")
        node = self.node
        remount = self.check_mount()
        self.warn_if_writable()
        manifest, manifest_text = self.read_manifest()
        previous = manifest["files"] if manifest else {}
        current = {name: node.observe(self.host(name), digest=True) for name in set(entries) | set(previous)}
        decided = toolkit_layout.present_plan(entries, current, manifest, manifest_text, self.install_dir,
                                              self.target, node.missing_dirs(self.target), self.owner)
        steps = decided["steps"]
        if steps["conflicts"]:
            raise InstallError("cannot install over %s: not a file or link"
                               % ", ".join(self.host(n) for n in steps["conflicts"]))
        self.result.update(toolkit_layout.present_result(self.install_dir, self.target, entries, decided,
                                                         manifest is not None, remounted=bool(remount)))
        manifest_action, new_manifest = decided["manifest_action"], decided["new_manifest"]
        if self.module.check_mode or not self.result["changed"]:
            return
        if expected:
            # Only checked: the files' bytes are not here. Nothing was changed; the action plugin
            # sends the payload and runs the module again.
            self.result.update(changed=False, payload_needed=True)
            return
        node.make_dirs(self.target)
        if remount:
            self.remount_exec(*remount)
        node.remove_stale_stages(self.target, toolkit_layout.STAGING_PREFIX)
        node.swap_in(self.target, toolkit_layout.swap_set(entries, steps, manifest_action and new_manifest),
                     owner=self.owner, prefix=toolkit_layout.STAGING_PREFIX)

    def warn_if_writable(self):
        found = self.node.observe(self.target)
        warning = toolkit_layout.writable_warning(self.install_dir, found["mode"]) if found else None
        if warning:
            self.module.warn(warning)

    def absent(self):
        node = self.node
        if not node.is_dir(self.target):
            return
        manifest, _text = self.read_manifest()
        if manifest is None:
            known = [n for n, _k in toolkit_layout.WRAPPED if node.exists(self.host(n))]
            if known:
                self.module.warn("%s has toolkit files (%s) but no %s: nothing was removed"
                                 % (self.install_dir, ", ".join(known), toolkit_layout.MANIFEST_NAME))
            return
        before = {}
        for name in sorted(manifest["files"]):
            have = node.observe(self.host(name))
            if have is not None and have["type"] in ("file", "symlink"):
                before[name] = dict(have, sha256=manifest["files"][name].get("sha256", "?" * 12))
        present = sorted(before)
        steps = {"remove": present}
        self.result.update(removed=present, files=[self.host(n) for n in present], changed=True,
                           changes=toolkit_layout.changes(self.target, steps, (), "removed"),
                           diff=toolkit_layout.install_diff(self.install_dir, toolkit_layout.summary(before), None))
        if self.module.check_mode:
            return
        for name in present + [toolkit_layout.MANIFEST_NAME]:
            node.remove(self.host(name))
        removed_dirs = node.remove_empty_dirs(ownership.removable(
            posixpath.join(self.target, toolkit_layout.MANIFEST_NAME), manifest["created_dirs"]))
        self.result["changes"] += [change(d, "removed") for d in removed_dirs]

    def run(self):
        try:
            self.wire = argument_specs.wire_of(self.wire_text)
        except ValueError as exc:
            raise InstallError(str(exc)) from None
        with self.node.locked():
            self.target = self.node.resolve(self.install_dir)
            if self.module.params["state"] == "absent":
                return self.absent()
            if not self.module.params["remote_src"]:
                raise InstallError("with remote_src=false, src is read by the controller: run this module through "
                                   "its action plugin (as a normal task), not directly")
            self.present()
            if self.wire.get("config_write") and not self.result.get("payload_needed"):
                self.write_config(self.wire["config_write"])
            return None

    def write_config(self, request):
        """The config.toml the action plugin edited (its ``config`` option), written once the
        install is in place, as node_file_write writes it."""
        request = dict(request)
        missing = [name for name in ("path", "content") if not isinstance(request.get(name), str)]
        if missing:
            raise InstallError("config_write is not what the action plugin sends: no %s" % ", ".join(missing))
        for name, spec in node_write.argument_spec().items():
            request.setdefault(name, spec.get("default"))
        written = node_write.new_result(node_model.normalize_host_path(request["path"]))
        self.result["config_write"] = written
        try:
            node_write.write(self.node, request, written, self.module.check_mode, self.module.run_command)
        except node_write.WriteRefused as exc:
            raise InstallError("the toolkit is installed, but its config %s was not written: %s"
                               % (written["path"], exc)) from None
        # RV(changes) stays the install's own: a new config.toml asks for no engine restart.
        self.result["changed"] = self.result["changed"] or written["changed"]


def main():
    module = AnsibleModule(argument_spec=argument_specs.toolkit_install(), supports_check_mode=True)
    installer = Installer(module)
    try:
        installer.run()
    except (InstallError, NodeFsError, toolkit_source.SourceError, toolkit_layout.LayoutError) as exc:
        module.fail_json(msg=str(exc), **installer.result)
    except OSError as exc:
        module.fail_json(msg="installing into %s failed: %s" % (installer.install_dir, exc), **installer.result)
    module.exit_json(**installer.result)


if __name__ == "__main__":
    main()
