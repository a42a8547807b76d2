# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place node-side code touches the node's files: ``NodeRoot(host_root)``.

Python 3 standard library only (this runs on COS). Every method takes and returns *host paths*
(``/etc/cdi/nvidia.yaml``); ``NodeRoot.path`` gives where code on this machine finds one
(``host_root`` + host path). What it gives every module the same way:

- symlinks resolved inside ``host_root``, as the node itself resolves them (an absolute target
  stays inside ``host_root``), with one limit on link hops;
- one file-type vocabulary (:data:`FILE_TYPES`) in :meth:`NodeRoot.observe`;
- atomic writes: a temporary file in the target's directory, fsync, mode and owner, an optional
  check of the new file, rename over the target, fsync of the directory. A run killed at any
  point leaves the old file or the whole new one; its temporary file is removed by the next
  write of that target;
- one lock per node (:meth:`NodeRoot.locked`) around each read-decide-write, so two runs on one
  node serialize; a run that cannot get it within a bounded time fails naming the holder.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import posixpath
import re
import shutil
import stat
import time
from contextlib import contextmanager

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_model, ownership

# The kernel's own limit (Linux MAXSYMLINKS).
MAX_LINK_HOPS = 40

FILE_TYPES = ("file", "directory", "symlink", "char", "block", "fifo", "socket")
SPECIAL_NAMES = {"char": "character device", "block": "block device", "fifo": "FIFO", "other": "special file"}

TEMP_MARK = ".gpn-tmp."
TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.gpn-tmp\.(?P<pid>\d+)\.(?P<token>[0-9a-f]+)$")
# The staging directories of swap_in: <prefix><pid>.<token>.
STAGE_PREFIX = ".gpn-stage."

DEFAULT_LOCK_TIMEOUT = 60.0

# The most a read of one node file takes when its caller names no limit: far above any config, spec
# or /proc file the collection reads, far below what a device like /dev/zero would give.
MAX_READ_SIZE = 64 * 1024 * 1024

_KINDS = (
    (stat.S_ISREG, "file"),
    (stat.S_ISDIR, "directory"),
    (stat.S_ISLNK, "symlink"),
    (stat.S_ISCHR, "char"),
    (stat.S_ISBLK, "block"),
    (stat.S_ISFIFO, "fifo"),
    (stat.S_ISSOCK, "socket"),
)


class NodeFsError(Exception):
    """A file operation on the node failed; ``path`` is the host path, the message says what to do."""

    def __init__(self, message, path=None):
        super().__init__(message)
        self.path = path


class _WalkError(NodeFsError):
    """A directory on the way to a change could not be opened; nothing was changed. ``missing``:
    because it does not exist."""

    def __init__(self, message, path=None, missing=False):
        super().__init__(message, path)
        self.missing = missing


def file_type(mode):
    """The vocabulary word for a ``st_mode``."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "other"


def _observe_in(dir_fd, name, digest):
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    found = {
        "type": file_type(info.st_mode),
        "mode": stat.S_IMODE(info.st_mode),
        "uid": info.st_uid,
        "gid": info.st_gid,
        "size": info.st_size,
    }
    if found["type"] == "symlink":
        found["target"] = os.readlink(name, dir_fd=dir_fd)
    elif found["type"] in ("char", "block"):
        found.update(major=os.major(info.st_rdev), minor=os.minor(info.st_rdev))
    elif found["type"] == "file" and digest:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as handle:
            found["sha256"] = _digest_handle(handle)
    return found


def _copy_xattrs(src_fd, dst_fd, host_path):
    """The extended attributes of the file being replaced onto its replacement: POSIX ACLs
    (``system.posix_acl_*``), ``user.*`` attributes and SELinux labels survive a rewrite as mode and
    owner do. One that cannot be kept fails the write, and the file stays as it was."""
    try:
        names = os.listxattr(src_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return  # a file system without them: nothing to keep
        raise NodeFsError("cannot read the extended attributes of %s: %s; the file was left as it was"
                          % (host_path, exc.strerror or exc), host_path) from None
    for attribute in names:
        try:
            os.setxattr(dst_fd, attribute, os.getxattr(src_fd, attribute))
        except OSError as exc:
            raise NodeFsError("cannot keep the extended attribute %s of %s: %s; the file was left as it was"
                              % (attribute, host_path, exc.strerror or exc), host_path) from None


def _fd_dir(fd):
    """A path to what is open as ``fd`` (a directory, or an O_PATH entry) that no link can
    redirect (Linux's /proc)."""
    return "/proc/self/fd/%d" % fd


def _fd_path(dir_fd, name):
    """A path naming ``name`` in the directory open as ``dir_fd``, for another process (a validate
    command) to read: through this process's /proc entry, so no link swapped in meanwhile counts."""
    return "/proc/%d/fd/%d/%s" % (os.getpid(), dir_fd, name)


def _fsync(dir_fd):
    try:
        os.fsync(dir_fd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the rename is still atomic


def _unlink_quietly(name, dir_fd):
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def _refuse_unless_file(host_path, mode):
    kind = file_type(mode)
    if kind == "directory":
        raise NodeFsError("%s is a directory, not a file" % host_path, host_path)
    if kind != "file":
        raise NodeFsError("%s is a %s, not a regular file: only regular files are read there; remove it or "
                          "point the option at a file" % (host_path, SPECIAL_NAMES.get(kind, kind)), host_path)


def digest_file(path, algorithm="sha256"):
    """Hex digest of the file at ``path`` (a path on this machine), read in 1 MiB blocks."""
    with open(path, "rb") as handle:
        return _digest_handle(handle, algorithm)


def _digest_handle(handle, algorithm="sha256"):
    digest = hashlib.new(algorithm)
    for block in iter(lambda: handle.read(1 << 20), b""):
        digest.update(block)
    return digest.hexdigest()


def text_diff(before_path, before, after_path, after):
    """A ``--diff`` entry: texts before and after (``None`` when the file is absent), headers naming
    the host paths."""
    return {
        "before": before or "",
        "after": after or "",
        "before_header": before_path if before is not None else "%s (absent)" % before_path,
        "after_header": after_path if after is not None else "%s (absent)" % after_path,
    }


def temp_name_of(name, pid, token):
    return ".%s%s%d.%s" % (name, TEMP_MARK, pid, token)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_holders(path):
    """Pids holding a flock on the file or directory at ``path`` (from /proc/locks), with their
    command lines; ``[]`` when /proc/locks cannot tell."""
    try:
        info = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    want = ":%x:%x:%d" % (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)
    holders = []
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or "->" in fields or fields[1] != "FLOCK":
            continue
        if not fields[5].endswith(want) and not _same_inode(fields[5], info):
            continue
        pid = fields[4]
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            command = "?"
        holders.append("pid %s (%s)" % (pid, command[:200]))
    return holders


def _same_inode(field, info):
    parts = field.split(":")
    if len(parts) != 3:
        return False
    try:
        major, minor, inode = int(parts[0], 16), int(parts[1], 16), int(parts[2])
    except ValueError:
        return False
    return (major, minor, inode) == (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)


class NodeRoot:
    """The node as seen at ``host_root`` by code on this machine."""

    def __init__(self, host_root="/"):
        self.host_root = posixpath.normpath(host_root or "/")
        self._lock_fd = None

    # --- paths -------------------------------------------------------------------------

    def path(self, host_path):
        """Where ``host_path`` is found on this machine."""
        return node_model.node_path(self.host_root, host_path)

    def host(self, path_here):
        """The host path of ``path_here`` (a path under ``host_root``)."""
        return node_model.host_path_of(self.host_root, path_here)

    def resolve(self, host_path):
        """``host_path`` with every symlink resolved inside ``host_root`` (chroot semantics).

        The parts after a missing one are kept as written. Raises NodeFsError after
        :data:`MAX_LINK_HOPS` links.
        """
        parts = [part for part in node_model.normalize_host_path(host_path).split("/") if part]
        resolved = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == ".":
                continue
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = "/" + "/".join(resolved + [part])
            here = self.path(candidate)
            if os.path.islink(here):
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise NodeFsError("too many levels of symbolic links at %s" % candidate, candidate)
                target = os.readlink(here)
                if target.startswith("/"):
                    resolved = []
                parts = [p for p in target.split("/") if p] + parts
                continue
            resolved.append(part)
        return "/" + "/".join(resolved)

    def resolve_parent(self, host_path):
        """``host_path`` with the links in its directory part resolved; a link at the last
        component is kept (it is what gets replaced or removed)."""
        host_path = node_model.normalize_host_path(host_path)
        directory, name = posixpath.split(host_path)
        return posixpath.join(self.resolve(directory), name) if name else host_path

    @contextmanager
    def directory(self, host_dir):
        """An open fd of the directory ``host_dir``, for changes made in it with ``dir_fd``.

        Each component is opened relative to the one before it, from ``host_root``, without
        following links (``openat`` with ``O_NOFOLLOW``); a link met on the way is read and
        resolved inside ``host_root``, as :meth:`resolve` does. So a change lands in the node
        whatever links the node holds or swaps in meanwhile: there is no check and later use of
        a path that something could redirect. Raises NodeFsError naming what is missing or not a
        directory.
        """
        parts = [part for part in node_model.normalize_host_path(host_dir).split("/") if part]
        try:
            root_fd = os.open(self.host_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise _WalkError("cannot open host_root %s: %s" % (self.host_root, exc.strerror or exc), "/") from None
        chain = [root_fd]
        names = []
        hops = 0
        try:
            while parts:
                part = parts.pop(0)
                if part == ".":
                    continue
                if part == "..":
                    if len(chain) > 1:
                        os.close(chain.pop())
                        names.pop()
                    continue
                try:
                    chain.append(os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                         dir_fd=chain[-1]))
                    names.append(part)
                    continue
                except FileNotFoundError:
                    raise _WalkError("%s does not exist" % ("/" + "/".join(names + [part])), host_dir,
                                     missing=True) from None
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        where = "/" + "/".join(names + [part])
                        raise _WalkError("cannot open %s: %s" % (where, exc.strerror or exc), host_dir) from None
                try:
                    target = os.readlink(part, dir_fd=chain[-1])
                except OSError:
                    raise _WalkError("%s is not a directory" % ("/" + "/".join(names + [part])), host_dir) from None
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise _WalkError("too many levels of symbolic links at %s" % host_dir, host_dir)
                if target.startswith("/"):
                    while len(chain) > 1:
                        os.close(chain.pop())
                    names = []
                parts = [p for p in target.split("/") if p] + parts
            yield chain[-1]
        finally:
            for fd in chain:
                os.close(fd)

    # --- looking -----------------------------------------------------------------------

    def observe(self, host_path, digest=False):
        """What is at ``host_path`` (not following a last-component link), or None.

        ``{"type", "mode", "uid", "gid", "size"}``, plus ``target`` for a symlink, ``major`` and
        ``minor`` for a device, and ``sha256`` for a file when ``digest``.
        """
        host_dir, name = posixpath.split(node_model.normalize_host_path(host_path))
        try:
            with self.directory(host_dir) as dir_fd:
                return _observe_in(dir_fd, name or ".", digest)
        except _WalkError:
            return None

    def exists(self, host_path):
        return self.observe(host_path) is not None

    def is_dir(self, host_path):
        """Whether ``host_path`` is a directory, links resolved inside host_root."""
        try:
            with self.directory(host_path):
                return True
        except _WalkError:
            return False

    def read_bytes(self, host_path, max_size=None):
        """The bytes of the regular file at ``host_path`` (links followed on this machine), or None
        when there is none. Raises NodeFsError when it is a directory, a FIFO, a device or anything
        else that is not a regular file (opened without blocking, never read), when it holds more
        than ``max_size`` bytes (default :data:`MAX_READ_SIZE`; counted as read, as a /proc file's
        size is 0), or cannot be read."""
        limit = MAX_READ_SIZE if max_size is None else max_size
        try:
            real = self.resolve(host_path)
        except NodeFsError as exc:
            raise NodeFsError("cannot read %s: %s" % (host_path, exc), host_path) from None
        host_dir, name = posixpath.split(real)
        try:
            with self.directory(host_dir) as dir_fd:
                return self._read_in(dir_fd, name, host_path, limit)
        except _WalkError as exc:
            if exc.missing:
                return None
            raise NodeFsError("cannot read %s: %s" % (host_path, exc), host_path) from None

    def _read_in(self, dir_fd, name, host_path, limit):
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(name, flags, dir_fd=dir_fd) if name else os.dup(dir_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            try:  # a socket cannot be opened at all, a link swapped in since it was resolved is not followed
                found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
            except OSError:
                found = None
            if found is not None and stat.S_ISLNK(found):
                raise NodeFsError("%s became a symlink while it was read; run again" % host_path, host_path) from None
            if found is not None:
                _refuse_unless_file(host_path, found)
            raise NodeFsError("cannot read %s: %s" % (host_path, exc.strerror or exc), host_path) from None
        try:
            _refuse_unless_file(host_path, os.fstat(fd).st_mode)
            chunks = []
            size = 0
            while size <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if size > limit:
                raise NodeFsError("%s is larger than %d bytes" % (host_path, limit), host_path)
            return b"".join(chunks)
        except NodeFsError:
            raise
        except OSError as exc:
            raise NodeFsError("cannot read %s: %s" % (host_path, exc.strerror or exc), host_path) from None
        finally:
            os.close(fd)

    def read_text(self, host_path):
        data = self.read_bytes(host_path)
        return None if data is None else data.decode("utf-8", "replace")

    def list_dir(self, host_dir):
        """Sorted names in ``host_dir``; ``[]`` when it does not exist."""
        try:
            with self.directory(host_dir) as dir_fd:
                return sorted(os.listdir(dir_fd))
        except _WalkError:
            return []

    def missing_dirs(self, host_dir):
        """The directories ``make_dirs(host_dir)`` would create, outermost first."""
        missing = []
        current = node_model.normalize_host_path(host_dir)
        while not self.is_dir(current):
            missing.append(current)
            parent = posixpath.dirname(current)
            if parent == current:
                break
            current = parent
        return list(reversed(missing))

    # --- changing ----------------------------------------------------------------------

    def make_dirs(self, host_dir, mode=0o755):
        """Create ``host_dir`` and its missing parents with ``mode`` (umask ignored); the host
        paths created, outermost first."""
        created = []
        for directory in self.missing_dirs(host_dir):
            parent, name = posixpath.split(directory)
            try:
                with self.directory(parent) as dir_fd:
                    try:
                        os.mkdir(name, mode, dir_fd=dir_fd)
                    except FileExistsError:
                        if not stat.S_ISDIR(os.stat(name, dir_fd=dir_fd).st_mode):
                            raise NodeFsError("%s exists and is not a directory" % directory, directory) from None
                        continue
                    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
                    try:
                        os.fchmod(fd, mode)
                    finally:
                        os.close(fd)
            except _WalkError as exc:
                raise NodeFsError("cannot create %s: %s" % (directory, exc), directory) from None
            except OSError as exc:
                raise NodeFsError("cannot create %s: %s" % (directory, exc.strerror or exc), directory) from None
            created.append(directory)
        return created

    def write(self, host_path, data, mode=None, owner=None, check=None):
        """Atomically make the file at ``host_path`` hold ``data`` (bytes).

        ``mode``: permissions; None keeps an existing file's, else 0644. ``owner``: ``(uid, gid)``
        or None to leave it (a new file is the writer's). ``check``: called with the temporary
        file's path before it replaces anything; an exception from it leaves the target as it was.
        The directory must exist (see :meth:`make_dirs`). Raises NodeFsError naming the path; the
        old file is then intact.
        """
        host_dir, name = posixpath.split(node_model.normalize_host_path(host_path))
        self.remove_stale_temps(host_dir, name)
        try:
            self._write_in(host_dir, name, host_path, data, mode, owner, check)
        except _WalkError as exc:
            raise NodeFsError("cannot write in %s (for %s): %s; the file was left as it was"
                              % (host_dir, host_path, exc), host_path) from None

    def _write_in(self, host_dir, name, host_path, data, mode, owner, check):
        with self.directory(host_dir) as dir_fd:
            try:
                old_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                                 dir_fd=dir_fd)
            except FileNotFoundError:
                old_fd = None
            except OSError as exc:
                if exc.errno != errno.ELOOP:  # a link there is replaced, not followed
                    raise NodeFsError("cannot open %s: %s" % (host_path, exc.strerror or exc), host_path) from None
                old_fd = None
            try:
                if old_fd is not None and not stat.S_ISREG(os.fstat(old_fd).st_mode):
                    os.close(old_fd)
                    old_fd = None
                if mode is None:
                    mode = stat.S_IMODE(os.fstat(old_fd).st_mode) if old_fd is not None else 0o644
                self._replace_in(dir_fd, name, host_dir, host_path, data, mode, owner, check, old_fd)
            finally:
                if old_fd is not None:
                    os.close(old_fd)

    def _replace_in(self, dir_fd, name, host_dir, host_path, data, mode, owner, check, old_fd):
        tmp = temp_name_of(name, os.getpid(), os.urandom(4).hex())
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=dir_fd)
        except OSError as exc:
            raise NodeFsError("cannot write in %s (for %s): %s; the file was left as it was"
                              % (host_dir, host_path, exc.strerror or exc), host_path) from None
        try:
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    if owner is not None:
                        os.fchown(handle.fileno(), owner[0], owner[1])
                    if old_fd is not None:
                        _copy_xattrs(old_fd, handle.fileno(), host_path)
                    os.fchmod(handle.fileno(), mode)
                    os.fsync(handle.fileno())
            except OSError as exc:
                raise NodeFsError("cannot write %s: %s; the file was left as it was"
                                  % (host_path, exc.strerror or exc), host_path) from None
            if check is not None:
                check(_fd_path(dir_fd, tmp))
            try:
                os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except OSError as exc:
                raise NodeFsError("cannot replace %s: %s; the file was left as it was"
                                  % (host_path, exc.strerror or exc), host_path) from None
            tmp = None
            _fsync(dir_fd)
        finally:
            if tmp is not None:
                _unlink_quietly(tmp, dir_fd)

    def symlink(self, host_path, target):
        """Atomically make ``host_path`` a symlink to ``target`` (written as given)."""
        host_dir, name = posixpath.split(node_model.normalize_host_path(host_path))
        self.remove_stale_temps(host_dir, name)
        with self.directory(host_dir) as dir_fd:
            tmp = temp_name_of(name, os.getpid(), os.urandom(4).hex())
            try:
                os.symlink(target, tmp, dir_fd=dir_fd)
                os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except OSError as exc:
                _unlink_quietly(tmp, dir_fd)
                raise NodeFsError("cannot make the link %s -> %s: %s" % (host_path, target, exc.strerror or exc),
                                  host_path) from None
            _fsync(dir_fd)

    def mknod(self, host_path, kind, major, minor, mode, owner=(0, 0)):
        """Atomically make a ``char`` or ``block`` device node at ``host_path`` (mode exact, not
        masked; owner applied when running as root)."""
        host_dir, name = posixpath.split(node_model.normalize_host_path(host_path))
        self.remove_stale_temps(host_dir, name)
        kind_bits = stat.S_IFCHR if kind == "char" else stat.S_IFBLK
        with self.directory(host_dir) as dir_fd:
            tmp = temp_name_of(name, os.getpid(), os.urandom(4).hex())
            try:
                os.mknod(tmp, kind_bits | mode, os.makedev(major, minor), dir_fd=dir_fd)
                try:
                    # A device node is never opened here (that would open the device): its mode is
                    # set by name, in a directory only this run writes the temporary name in.
                    os.chmod(tmp, mode, dir_fd=dir_fd)
                    if owner is not None and os.geteuid() == 0:
                        os.chown(tmp, owner[0], owner[1], dir_fd=dir_fd, follow_symlinks=False)
                    os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                except BaseException:
                    _unlink_quietly(tmp, dir_fd)
                    raise
            except OSError as exc:
                raise NodeFsError("cannot create the device node %s (%s %d:%d): %s"
                                  % (host_path, kind, major, minor, exc.strerror or exc), host_path) from None
            _fsync(dir_fd)

    def remove(self, host_path):
        """Remove the file, link or node at ``host_path`` (a link itself, never what it points to);
        whether there was one."""
        host_dir, name = posixpath.split(node_model.normalize_host_path(host_path))
        try:
            with self.directory(host_dir) as dir_fd:
                os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            return False
        except _WalkError as exc:
            if exc.missing:
                return False
            raise
        except OSError as exc:
            raise NodeFsError("cannot remove %s: %s" % (host_path, exc.strerror or exc), host_path) from None
        return True

    def chmod(self, host_path, mode):
        """Set the permissions of the file, directory or node at ``host_path``. A symlink there is
        refused, not followed (Linux cannot change a link's own mode, and its target may be
        outside ``host_root``)."""
        host_dir, name = posixpath.split(node_model.normalize_host_path(host_path))
        with self.directory(host_dir) as dir_fd:
            try:
                # O_PATH opens the entry itself without opening a device or following a link; the
                # mode is then set on that very inode through /proc.
                fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError as exc:
                raise NodeFsError("cannot change the mode of %s: %s" % (host_path, exc.strerror or exc),
                                  host_path) from None
            try:
                if stat.S_ISLNK(os.fstat(fd).st_mode):
                    raise NodeFsError("%s is a symlink; its mode was left as it was" % host_path, host_path)
                os.chmod(_fd_dir(fd), mode)
            except OSError as exc:
                raise NodeFsError("cannot change the mode of %s: %s" % (host_path, exc.strerror or exc),
                                  host_path) from None
            finally:
                os.close(fd)

    def remove_empty_dirs(self, host_dirs):
        """rmdir each of ``host_dirs`` that is still an empty, real directory, deepest first; the
        ones removed. A link, a file or a directory with anything in it is left as it is."""
        removed = []
        for directory in ownership.deepest_first(host_dirs):
            parent, name = posixpath.split(node_model.normalize_host_path(directory))
            if not name:
                continue
            try:
                with self.directory(parent) as dir_fd:
                    os.rmdir(name, dir_fd=dir_fd)
            except (OSError, NodeFsError):
                continue  # not empty, not there, or not a directory: not ours to force
            removed.append(directory)
        return removed

    def remove_stale_temps(self, host_dir, name=None):
        """Remove temporary files this layer left in ``host_dir`` (for target ``name``, or all) from
        runs that were killed; the host paths removed. A temp file of a live process is kept."""
        removed = []
        try:
            with self.directory(host_dir) as dir_fd:
                for entry in sorted(os.listdir(dir_fd)):
                    match = TEMP_NAME.match(entry)
                    if not match or (name is not None and match.group("name") != name):
                        continue
                    if int(match.group("pid")) != os.getpid() and _pid_alive(int(match.group("pid"))):
                        continue
                    try:
                        os.unlink(entry, dir_fd=dir_fd)
                    except OSError:
                        continue
                    removed.append(posixpath.join(node_model.normalize_host_path(host_dir), entry))
        except _WalkError:
            return []  # no such directory: nothing left there
        return removed

    def remove_tree(self, host_path):
        """Remove the directory ``host_path`` and everything in it, following no link; whether
        there was one. Anything but a directory there is refused and left as it was."""
        parent, name = posixpath.split(node_model.normalize_host_path(host_path))
        try:
            with self.directory(parent) as dir_fd:
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except (FileNotFoundError, NotADirectoryError):
                    return False
                if not stat.S_ISDIR(info.st_mode):
                    raise NodeFsError("%s is a %s, not a directory; it was left as it was"
                                      % (host_path, file_type(info.st_mode)), host_path)
                try:
                    # shutil.rmtree follows no link inside; the path reaches the directory through
                    # the open fd of its parent, so no link on the way to it counts either.
                    shutil.rmtree(os.path.join(_fd_dir(dir_fd), name))
                except OSError as exc:
                    raise NodeFsError("cannot remove %s: %s" % (host_path, exc.strerror or exc), host_path) from None
        except _WalkError:
            return False
        return True

    def remove_stale_stages(self, host_dir, prefix=STAGE_PREFIX):
        """Remove the staging directories :meth:`swap_in` left in ``host_dir`` (names starting with
        ``prefix``) from runs that were killed; the host paths removed. One of a live process is kept."""
        removed = []
        for entry in self.list_dir(host_dir):
            if not entry.startswith(prefix):
                continue
            pid = entry[len(prefix):].partition(".")[0]
            if pid.isdigit() and int(pid) != os.getpid() and _pid_alive(int(pid)):
                continue
            host_path = posixpath.join(node_model.normalize_host_path(host_dir), entry)
            try:
                if self.remove_tree(host_path):
                    removed.append(host_path)
            except NodeFsError:
                continue  # not a directory: not one of ours
        return removed

    def swap_in(self, host_dir, entries, owner=None, prefix=STAGE_PREFIX):
        """Change several entries of the directory ``host_dir`` as one change.

        ``entries``: name -> ``{"type": "file", "data": bytes, "mode": int}``, ``{"type": "symlink",
        "target": str}``, or None to remove that name; applied in the order given. ``owner``:
        ``(uid, gid)`` for the new files and links, or None (the writer's).

        Everything new is first written, fsynced, into a staging directory inside ``host_dir``
        (``<prefix><pid>.<token>``), so a full disk fails before anything is replaced. Then each
        name is renamed over its target (the old one kept as a hard link in the staging
        directory); when that fails, the names already replaced get their old entry back. Either
        way a NodeFsError names the path, and ``host_dir`` holds what it held before. The staging
        directory is always removed, and those of killed runs too (:meth:`remove_stale_stages`).
        """
        host_dir = node_model.normalize_host_path(host_dir)
        self.remove_stale_stages(host_dir, prefix)
        try:
            with self.directory(host_dir) as dir_fd:
                self._swap_in(_fd_dir(dir_fd), host_dir, entries, owner, prefix)
                _fsync(dir_fd)
        except _WalkError as exc:
            raise NodeFsError("cannot write in %s: %s; nothing was changed" % (host_dir, exc), host_dir) from None

    def _swap_in(self, here, host_dir, entries, owner, prefix):
        stage = os.path.join(here, "%s%d.%s" % (prefix, os.getpid(), os.urandom(4).hex()))
        try:
            os.mkdir(stage, 0o700)
            os.mkdir(os.path.join(stage, "new"), 0o700)
            os.mkdir(os.path.join(stage, "old"), 0o700)
        except OSError as exc:
            shutil.rmtree(stage, ignore_errors=True)
            raise NodeFsError("cannot write in %s: %s; nothing was changed" % (host_dir, exc.strerror or exc),
                              host_dir) from None
        try:
            for name, entry in entries.items():
                if entry is not None:
                    self._stage(os.path.join(stage, "new", name), posixpath.join(host_dir, name), entry, owner)
            self._swap(here, stage, host_dir, entries)
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    @staticmethod
    def _stage(path, host_path, entry, owner):
        try:
            if entry["type"] == "symlink":
                os.symlink(entry["target"], path)
                if owner is not None:
                    os.lchown(path, owner[0], owner[1])
                return
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(entry["data"])
                handle.flush()
                os.fsync(handle.fileno())
            if owner is not None:
                os.chown(path, owner[0], owner[1])
            os.chmod(path, entry["mode"])
        except OSError as exc:
            raise NodeFsError("cannot write %s: %s; nothing was changed" % (host_path, exc.strerror or exc),
                              host_path) from None

    @staticmethod
    def _swap(here, stage, host_dir, entries):
        done = []
        name = None
        try:
            for name in entries:
                target = os.path.join(here, name)
                if os.path.lexists(target):
                    os.link(target, os.path.join(stage, "old", name), follow_symlinks=False)
                    if entries[name] is None:
                        os.unlink(target)
                if entries[name] is not None:
                    os.rename(os.path.join(stage, "new", name), target)
                done.append(name)
        except OSError as exc:
            for undo in reversed(done):
                target, saved = os.path.join(here, undo), os.path.join(stage, "old", undo)
                try:
                    if os.path.lexists(saved):
                        os.rename(saved, target)
                    elif os.path.lexists(target):
                        os.unlink(target)
                except OSError:
                    pass  # best effort: the error below still names what failed
            raise NodeFsError("cannot replace %s: %s; %s was left as it was"
                              % (posixpath.join(host_dir, name), exc.strerror or exc, host_dir),
                              posixpath.join(host_dir, name)) from None

    # --- serializing runs ----------------------------------------------------------------

    @contextmanager
    def locked(self, timeout=None, poll=0.1):
        """Hold the node's lock: an flock on ``host_root`` itself.

        A directory lock leaves no file behind (COS's root is read-only, the uninstall leaves
        the tree as found) and the kernel drops it when its holder dies, so a killed run never
        blocks the next. Re-entrant within one NodeRoot.
        """
        if self._lock_fd is not None:
            yield
            return
        try:
            fd = os.open(self.host_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise NodeFsError("cannot open host_root %s: %s" % (self.host_root, exc.strerror or exc), "/") from None
        timeout = DEFAULT_LOCK_TIMEOUT if timeout is None else timeout
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                if time.monotonic() >= deadline:
                    holders = lock_holders(self.host_root) or ["a process /proc/locks does not name"]
                    raise NodeFsError(
                        "another run is changing this node (lock on %s held by %s); waited %.0f s. Let it "
                        "finish and run again" % (self.host_root, ", ".join(holders), timeout), "/")
                time.sleep(poll)
            self._lock_fd = fd
            yield
        finally:
            self._lock_fd = None
            os.close(fd)
