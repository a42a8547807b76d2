#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

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
    a failure leaves the previous install as it was. Only files whose content, mode or owner
    differ are touched. A manifest, C(.toolkit-manifest.json), records what was installed so that
    O(state=absent) removes exactly that.
  - Archives are unpacked on the controller by the action plugin; the node only receives files.
    Archive members with absolute names, C(..), links leaving the archive, device files or
    setuid/setgid bits are refused, and so is a checksum mismatch, before anything is written.
  - The mount holding O(install_dir) is read from C(<host_root>/proc/self/mountinfo). A read-only
    mount fails. A C(noexec) mount fails unless O(exec_mount=true).
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.node
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
    details: Archives are still unpacked and sent to the node, to compare them; nothing is installed.
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
      - O(src) items are on the node. Only directories and tarballs can be used there;
        packages are unpacked on the controller.
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
        E(NVIDIA_CTK_CONFIG_FILE_PATH) at.
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
install_dir:
  description: Host path of the install.
  returned: always
  type: str
  sample: /home/kubernetes/bin/nvidia/toolkit
files:
  description: Host paths of everything installed (O(state=present)), or removed (O(state=absent)).
  returned: success
  type: list
  elements: str
  sample: [/home/kubernetes/bin/nvidia/toolkit/nvidia-ctk, /home/kubernetes/bin/nvidia/toolkit/nvidia-ctk.real]
added:
  description: Names in O(install_dir) that were created.
  returned: success
  type: list
  elements: str
  sample: [nvidia-ctk, nvidia-ctk.real]
updated:
  description: Names whose content, link target, mode or owner were changed.
  returned: success
  type: list
  elements: str
  sample: [nvidia-container-runtime.real]
removed:
  description: Names that were removed (no longer in the source, or O(state=absent)).
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
"""

import errno
import hashlib
import os
import shutil
import stat
import tarfile
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import (
    archive_safety,
    mounts,
    node_model,
    toolkit_layout,
)


class InstallError(Exception):
    pass


# --- reading the source ----------------------------------------------------------------

class SourceTree:
    """A merged view of source directories and tarballs: ``entries`` for the layout, ``read``."""

    def __init__(self):
        self.entries = {}
        self._origins = {}
        self._tars = []

    def close(self):
        for tar in self._tars:
            tar.close()

    def add_directory(self, top):
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(dirnames) + sorted(filenames):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, top)
                st = os.lstat(full)
                if stat.S_ISLNK(st.st_mode):
                    kind, target = "symlink", os.readlink(full)
                elif stat.S_ISDIR(st.st_mode):
                    kind, target = "dir", None
                elif stat.S_ISREG(st.st_mode):
                    kind, target = "file", None
                elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                    kind, target = "char", None
                else:
                    kind, target = "other", None
                try:
                    clean = archive_safety.check_member(rel, kind, st.st_mode, target)
                except archive_safety.UnsafeMember as exc:
                    raise InstallError("refusing source %s: %s" % (top, exc)) from None
                self._add(clean, kind, target, ("path", full))

    def add_tarball(self, path):
        try:
            tar = tarfile.open(path, "r:*")
        except (OSError, tarfile.TarError) as exc:
            raise InstallError("%s is neither a directory nor a readable tarball: %s" % (path, exc)) from None
        self._tars.append(tar)
        for member in tar.getmembers():
            kind = archive_safety.tar_member_kind(member)
            try:
                clean = archive_safety.check_member(member.name, kind, member.mode, member.linkname or None)
            except archive_safety.UnsafeMember as exc:
                raise InstallError("refusing archive %s: %s" % (path, exc)) from None
            if kind == "hardlink":
                target = archive_safety.normalize_name(member.linkname)
                if target not in self._origins or self.entries[target]["type"] != "file":
                    raise InstallError("refusing archive %s: hard link %s to %s, which is not an earlier file"
                                       % (path, member.name, member.linkname))
                self.entries[clean] = {"type": "file"}
                self._origins[clean] = self._origins[target]
                continue
            self._add(clean, kind, member.linkname or None, ("tar", tar, member))

    def _add(self, clean, kind, target, origin):
        if not clean:
            return
        entry_type = {"symlink": "link"}.get(kind, kind)
        self.entries[clean] = {"type": entry_type, "target": target} if kind == "symlink" else {"type": entry_type}
        self._origins[clean] = origin

    def read(self, relpath):
        origin = self._origins[relpath]
        if origin[0] == "path":
            with open(origin[1], "rb") as handle:
                return handle.read()
        handle = origin[1].extractfile(origin[2])
        try:
            return handle.read()
        finally:
            handle.close()


def file_digest(path, algorithm):
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- looking at install_dir ------------------------------------------------------------

def observe(path, want_sha=True):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    info = {"uid": st.st_uid, "gid": st.st_gid, "mode": stat.S_IMODE(st.st_mode)}
    if stat.S_ISLNK(st.st_mode):
        info.update(type="link", target=os.readlink(path))
    elif stat.S_ISREG(st.st_mode):
        info["type"] = "file"
        if want_sha:
            info["sha256"] = file_digest(path, "sha256")
    elif stat.S_ISDIR(st.st_mode):
        info["type"] = "dir"
    else:
        info["type"] = "other"
    return info


def read_manifest(install_dir_on_node):
    path = os.path.join(install_dir_on_node, toolkit_layout.MANIFEST_NAME)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None, None
    try:
        return toolkit_layout.parse_manifest(text), text
    except ValueError as exc:
        raise InstallError("%s is not a manifest this module can use (%s); move it away to continue"
                           % (path, exc)) from None


# --- writing ---------------------------------------------------------------------------

def write_file(path, content, mode, owner):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        os.unlink(path)
        raise
    if owner is not None:
        os.chown(path, owner[0], owner[1])
    os.chmod(path, mode)


def atomic_write(path, content, mode, owner):
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".%s." % os.path.basename(path))
    os.close(fd)
    os.unlink(tmp)
    write_file(tmp, content, mode, owner)
    os.rename(tmp, path)


def make_dirs(path_on_node, host_root):
    """Create ``path_on_node`` and missing parents (0755); return the host paths created."""
    created = []
    missing = []
    current = path_on_node
    while not os.path.lexists(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for directory in reversed(missing):
        os.mkdir(directory, toolkit_layout.EXEC_MODE)
        os.chmod(directory, toolkit_layout.EXEC_MODE)
        created.append(node_model.host_path_of(host_root, directory))
    return created


def swap_in(install_on_node, staging, names, owner):
    """Rename each staged name over its target; on failure, put the old ones back."""
    backup = os.path.join(staging, ".previous")
    os.mkdir(backup, 0o700)
    done = []
    try:
        for name in names:
            target = os.path.join(install_on_node, name)
            if os.path.lexists(target):
                os.link(target, os.path.join(backup, name), follow_symlinks=False)
            os.rename(os.path.join(staging, name), target)
            done.append(name)
    except OSError:
        for name in reversed(done):
            target = os.path.join(install_on_node, name)
            saved = os.path.join(backup, name)
            try:
                if os.path.lexists(saved):
                    os.rename(saved, target)
                else:
                    os.unlink(target)
            except OSError:
                pass
        raise


# --- the module ------------------------------------------------------------------------

class Installer:
    def __init__(self, module):
        self.module = module
        params = module.params
        self.host_root = params["host_root"]
        self.install_dir = node_model.normalize_host_path(params["install_dir"])
        self.on_node = node_model.node_path(self.host_root, self.install_dir)
        self.owner = (0, 0) if os.geteuid() == 0 else None
        self.result = {"changed": False, "install_dir": self.install_dir, "files": [], "added": [],
                       "updated": [], "removed": [], "exec_mount": False}

    def host(self, name):
        return node_model.join_host(self.install_dir, name)

    # mounts
    def check_mount(self):
        """Fail on a read-only mount; return the mount when it must be remounted exec."""
        table = node_model.node_path(self.host_root, "/proc/self/mountinfo")
        try:
            with open(table, encoding="utf-8", errors="replace") as handle:
                all_mounts = mounts.parse_mountinfo(handle.read())
        except OSError as exc:
            self.module.warn("cannot read %s (%s); not checking the mount of %s" % (table, exc, self.install_dir))
            return None
        except mounts.MountinfoError as exc:
            raise InstallError("cannot parse %s: %s" % (table, exc)) from None
        mount, path = mounts.locate(all_mounts, self.host_root, self.install_dir)
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
        self.result["exec_mount"] = True
        self.result["changed"] = True
        if self.module.check_mode:
            return
        mount_bin = self.module.get_bin_path("mount", required=True)
        if mount["mount_point"] != path:
            rc, out, err = self.module.run_command([mount_bin, "--bind", self.on_node, self.on_node])
            if rc != 0:
                raise InstallError("bind-mounting %s onto itself failed: %s" % (self.on_node, (err or out).strip()))
            mount = dict(mount, mount_point=path)
        rc, out, err = self.module.run_command([mount_bin, "-o", mounts.remount_exec_options(mount), self.on_node])
        if rc != 0:
            raise InstallError("remounting %s exec failed: %s" % (self.on_node, (err or out).strip()))

    # present
    def source_path(self, src):
        """Where to read ``src``: under host_root, except the action plugin's payload, which lies
        in this task's own temporary directory."""
        tmpdir = getattr(self.module, "_tmpdir", None)
        if tmpdir and os.path.isabs(src) and node_model.is_under(src, tmpdir):
            return src
        return node_model.node_path(self.host_root, src)

    def load_source(self):
        params = self.module.params
        sources = params["src"] or []
        checksums = params["checksum"] or []
        if checksums and len(checksums) != len(sources):
            raise InstallError("checksum has %d items but src has %d: give one per src item, in order"
                               % (len(checksums), len(sources)))
        tree = SourceTree()
        for index, src in enumerate(sources):
            path = self.source_path(src)
            if os.path.isdir(path):
                if checksums:
                    raise InstallError("checksum cannot be checked for the directory %s" % src)
                tree.add_directory(path)
                continue
            if not os.path.isfile(path):
                raise InstallError("src %s does not exist (looked at %s)" % (src, path))
            if checksums:
                try:
                    algorithm, expected = archive_safety.parse_checksum(checksums[index])
                except ValueError as exc:
                    raise InstallError(str(exc)) from None
                actual = file_digest(path, algorithm)
                if actual != expected:
                    raise InstallError("checksum mismatch for %s: expected %s:%s, got %s:%s; nothing was written"
                                       % (src, algorithm, expected, algorithm, actual))
            tree.add_tarball(path)
        return tree

    def present(self):
        if not self.module.params["src"]:
            raise InstallError("src is required when state=present")
        tree = self.load_source()
        try:
            try:
                sources, missing = toolkit_layout.select_sources(tree.entries)
            except toolkit_layout.LayoutError as exc:
                raise InstallError(str(exc)) from None
            self.result["missing"] = missing
            if not sources:
                raise InstallError("no toolkit files found in src: looked for %s under %s"
                                   % (", ".join(missing), ", ".join(d or "." for d in toolkit_layout.BIN_DIRS)))
            config_path = self.module.params["config_path"]
            entries = toolkit_layout.desired_entries(
                sources, self.install_dir, self.module.params["low_level_runtime"],
                node_model.normalize_host_path(config_path) if config_path else None)
            contents = {}
            for name, entry in entries.items():
                if entry["type"] == "file":
                    data = entry["content"] if "content" in entry else tree.read(entry["source"])
                    contents[name] = data
                    entry["sha256"] = hashlib.sha256(data).hexdigest()
        finally:
            tree.close()
        if missing:
            self.module.warn("not in src, so not installed: %s" % ", ".join(missing))

        remount = self.check_mount()
        self.warn_if_writable()
        manifest, manifest_text = read_manifest(self.on_node) if os.path.isdir(self.on_node) else (None, None)
        previous = manifest["files"] if manifest else {}
        current = {}
        for name in set(entries) | set(previous):
            current[name] = observe(os.path.join(self.on_node, name)) if os.path.isdir(self.on_node) else None
        steps = toolkit_layout.plan(entries, current, previous, self.owner)
        if steps["conflicts"]:
            raise InstallError("cannot install over %s: not a file or link"
                               % ", ".join(self.host(n) for n in steps["conflicts"]))
        created_dirs = list(manifest["created_dirs"]) if manifest else []
        new_manifest = toolkit_layout.render_manifest(self.install_dir, entries, created_dirs)
        changes = steps["add"] or steps["update"] or steps["metadata"] or steps["remove"]
        self.result.update(added=steps["add"], updated=steps["update"] + steps["metadata"], removed=steps["remove"],
                           files=[self.host(n) for n in sorted(entries)])
        # The diff is always returned; Ansible shows it only with --diff.
        before = {n: current.get(n) for n in set(entries) | set(previous) if current.get(n)}
        self.result["diff"] = {"before_header": self.install_dir, "after_header": self.install_dir,
                               "before": toolkit_layout.summary(before), "after": toolkit_layout.summary(entries)}
        if changes or manifest_text != new_manifest or remount:
            self.result["changed"] = True
        if self.module.check_mode or not self.result["changed"]:
            if remount:
                self.result["exec_mount"] = True
            return

        created_dirs += make_dirs(self.on_node, self.host_root)
        if remount:
            self.remount_exec(*remount)
        self.clean_stale_staging()
        staging = tempfile.mkdtemp(dir=self.on_node, prefix=toolkit_layout.STAGING_PREFIX)
        try:
            staged = []
            for name in steps["add"] + steps["update"]:
                entry = entries[name]
                path = os.path.join(staging, name)
                if entry["type"] == "link":
                    os.symlink(entry["target"], path)
                    if self.owner is not None:
                        os.lchown(path, *self.owner)
                else:
                    write_file(path, contents[name], entry["mode"], self.owner)
                staged.append(name)
            swap_in(self.on_node, staging, staged, self.owner)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        for name in steps["metadata"]:
            path = os.path.join(self.on_node, name)
            if self.owner is not None:
                os.chown(path, *self.owner)
            os.chmod(path, entries[name]["mode"])
        for name in steps["remove"]:
            os.unlink(os.path.join(self.on_node, name))
        new_manifest = toolkit_layout.render_manifest(self.install_dir, entries, created_dirs)
        atomic_write(os.path.join(self.on_node, toolkit_layout.MANIFEST_NAME), new_manifest.encode("utf-8"),
                     0o644, self.owner)

    def clean_stale_staging(self):
        """Remove staging directories left by an interrupted earlier run."""
        for name in os.listdir(self.on_node):
            path = os.path.join(self.on_node, name)
            if name.startswith(toolkit_layout.STAGING_PREFIX) and os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)

    def warn_if_writable(self):
        try:
            mode = os.stat(self.on_node).st_mode
        except OSError:
            return
        if stat.S_IMODE(mode) & 0o022:
            self.module.warn("install_dir %s is group- or world-writable (mode %04o): anyone who can write to it "
                             "can replace the runtime" % (self.install_dir, stat.S_IMODE(mode)))

    # absent
    def absent(self):
        if not os.path.isdir(self.on_node):
            return
        manifest, _text = read_manifest(self.on_node)
        if manifest is None:
            known = [n for n, _k in toolkit_layout.WRAPPED if os.path.lexists(os.path.join(self.on_node, n))]
            if known:
                self.module.warn("%s has toolkit files (%s) but no %s: nothing was removed"
                                 % (self.install_dir, ", ".join(known), toolkit_layout.MANIFEST_NAME))
            return
        present = []
        before = {}
        for name in sorted(manifest["files"]):
            have = observe(os.path.join(self.on_node, name), want_sha=False)
            if have is not None and have["type"] in ("file", "link"):
                present.append(name)
                before[name] = dict(have, sha256=manifest["files"][name].get("sha256", "?" * 12))
        dirs = [d for d in manifest["created_dirs"] if node_model.is_under(d, self.install_dir)
                or node_model.is_under(self.install_dir, d)]
        self.result.update(removed=present, files=[self.host(n) for n in present], changed=True)
        # The diff is always returned; Ansible shows it only with --diff.
        self.result["diff"] = {"before_header": self.install_dir, "after_header": self.install_dir,
                               "before": toolkit_layout.summary(before), "after": ""}
        if self.module.check_mode:
            return
        for name in present:
            os.unlink(os.path.join(self.on_node, name))
        os.unlink(os.path.join(self.on_node, toolkit_layout.MANIFEST_NAME))
        for directory in sorted(dirs, key=lambda d: -d.count("/")):
            try:
                os.rmdir(node_model.node_path(self.host_root, directory))
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                    raise


def main():
    spec = node_model.node_argument_spec()
    spec.update(
        src={"type": "list", "elements": "str"},
        remote_src={"type": "bool", "default": False},
        checksum={"type": "list", "elements": "str", "no_log": False},
        validate_certs={"type": "bool", "default": True},
        install_dir={"type": "path", "default": "/usr/local/nvidia/toolkit"},
        state={"type": "str", "choices": ["present", "absent"], "default": "present"},
        low_level_runtime={"type": "str", "default": "runc"},
        config_path={"type": "path"},
        exec_mount={"type": "bool", "default": False},
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    installer = Installer(module)
    try:
        if module.params["state"] == "present":
            if not module.params["remote_src"]:
                raise InstallError("with remote_src=false, src is read by the controller: run this module through "
                                   "its action plugin (as a normal task), not directly")
            installer.present()
        else:
            installer.absent()
    except InstallError as exc:
        module.fail_json(msg=str(exc), **installer.result)
    except OSError as exc:
        module.fail_json(msg="installing into %s failed: %s" % (installer.install_dir, exc), **installer.result)
    module.exit_json(**installer.result)


if __name__ == "__main__":
    main()
