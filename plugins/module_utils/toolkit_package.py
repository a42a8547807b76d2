# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The toolkit installed from NVIDIA's packages: what the repository files hold, which packages
to ask the package manager for, and what the record of this method says. Pure, standard library only.

NVIDIA ships the toolkit as four packages of one version: ``nvidia-container-toolkit`` (the
hook), ``nvidia-container-toolkit-base`` (the runtime, ``nvidia-ctk``, ``nvidia-cdi-hook``),
``libnvidia-container-tools`` (``nvidia-container-cli``) and ``libnvidia-container1``; the first
depends on the exact version of the second and third, the third on the fourth. They put the binaries
in ``/usr/bin`` and the toolkit's configuration in ``/etc/nvidia-container-runtime/config.toml``.

The record (a JSON document in the install dir, :data:`RECORD_NAME`) lists the repository files this
method wrote, each with the digest of what it wrote and the directories its write created, and the
packages it installed, so that ``state=absent`` removes those and leaves alone the packages that
were there before.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import ownership
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_model import normalize_host_path

# Installed in this order; each is pinned to the same version.
PACKAGES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
            "libnvidia-container1")
MAIN_PACKAGE = PACKAGES[0]
BIN_DIR = "/usr/bin"
CONFIG_PATH = "/etc/nvidia-container-runtime/config.toml"
RECORD_NAME = "toolkit-package.json"
RECORD_KIND = "toolkit-package"
DPKG_STATUS = "/var/lib/dpkg/status"
# NVIDIA's own repositories (flat ones: the suite is "/"), and where their key is published.
NVIDIA_APT_URL = "https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH)"
NVIDIA_DNF_URL = "https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch"
NVIDIA_KEY_URL = "https://nvidia.github.io/libnvidia-container/gpgkey"
APT_LIST_DIR = "/etc/apt/sources.list.d"
APT_KEYRING_DIR = "/etc/apt/keyrings"
DNF_REPO_DIR = "/etc/yum.repos.d"
DNF_KEY_DIR = "/etc/pki/rpm-gpg"
MANAGERS = ("apt", "dnf")
ARMOR_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
ARMOR_END = "-----END PGP PUBLIC KEY BLOCK-----"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")
# A Debian or RPM version as a user pins it (epoch, upstream version, revision or release).
VERSION_RE = re.compile(r"^([0-9]+:)?[0-9A-Za-z.+~^_-]+$")
INSTALLED_STATES = ("install ok installed", "hold ok installed")


class PackageError(Exception):
    """Input this method cannot work with; the message names the option and what to do."""


def digest(text):
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_dpkg_status(text):
    """``{name: version}`` of the packages dpkg's status file says are installed."""
    installed = {}
    for stanza in re.split(r"\n\s*\n", text or ""):
        fields = {}
        for line in stanza.splitlines():
            if not line or line[0] in " \t":
                continue  # a continuation line (Description, Conffiles)
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip().lower()] = value.strip()
        name = fields.get("package")
        if name and fields.get("status") in INSTALLED_STATES and fields.get("version"):
            installed[name] = fields["version"]
    return installed


def parse_rpm_query(text):
    """``{name: version}`` from ``rpm -q --qf '%{NAME} %{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n'``
    (lines for packages that are not installed say so and are skipped)."""
    installed = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and NAME_RE.match(parts[0]) and ":" in parts[1]:
            epoch, _sep, version = parts[1].partition(":")
            installed[parts[0]] = version if epoch in ("", "0") else parts[1]
    return installed


def check_version(version):
    """``version`` (empty: any) as given, or PackageError naming the option."""
    version = (version or "").strip()
    if version and not VERSION_RE.match(version):
        raise PackageError("version %r is not a package version; give it as the package manager shows it "
                           "(apt-cache policy nvidia-container-toolkit: 1.17.8-1; dnf: 1.17.8-1), or leave it "
                           "empty for the repository's newest" % version)
    return version


def check_key(key):
    """The ASCII-armored key text, ending in a newline, or PackageError."""
    key = (key or "").strip()
    if not key.startswith(ARMOR_BEGIN) or not key.endswith(ARMOR_END):
        raise PackageError("repo_key must be the repository's ASCII-armored public key (from %s on a machine that "
                           "can reach it, or your mirror's), starting with %r; to use a repository configured "
                           "some other way, set repo to false" % (NVIDIA_KEY_URL, ARMOR_BEGIN))
    return key + "\n"


def check_name(name, option="repo_name"):
    if not NAME_RE.match(name or ""):
        raise PackageError("%s %r must be a plain file name (lower-case letters, digits, '.', '+', '-')"
                           % (option, name))
    return name


def repo_paths(manager, name):
    """``(repository file, key file)`` host paths for ``manager``."""
    if manager == "apt":
        return (posixpath.join(APT_LIST_DIR, name + ".list"), posixpath.join(APT_KEYRING_DIR, name + ".asc"))
    return (posixpath.join(DNF_REPO_DIR, name + ".repo"), posixpath.join(DNF_KEY_DIR, name + ".asc"))


def render_apt_list(url, suite, components, keyring):
    """One-line apt source, as NVIDIA's own list file is, with ``signed-by`` the keyring written beside it."""
    if not url or any(c.isspace() for c in url) or "]" in url:
        raise PackageError("repo_url %r must be one URL without spaces (http://, https:// or file:)" % (url,))
    suite = suite or "/"
    if any(c.isspace() for c in suite) or any(c.isspace() for c in "".join(components)):
        raise PackageError("repo_suite and repo_components must not contain spaces")
    if suite.endswith("/") and components:
        raise PackageError("repo_suite %r ends in '/' (a flat repository, as NVIDIA's is), which takes no "
                           "repo_components; give a suite name (stable) with components, or no components" % suite)
    if not suite.endswith("/") and not components:
        raise PackageError("repo_suite %r names a suite, which needs repo_components (main); for a flat "
                           "repository such as NVIDIA's give repo_suite '/'" % suite)
    line = "deb [signed-by=%s] %s %s" % (keyring, url, " ".join([suite] + list(components)))
    return "# Managed by %s: the NVIDIA Container Toolkit's packages.\n%s\n" % (ownership.TAG, line)


def render_dnf_repo(name, url, key_path):
    if not url or any(c.isspace() for c in url):
        raise PackageError("repo_url %r must be one URL without spaces (http://, https:// or file://)" % (url,))
    return ("# Managed by %s: the NVIDIA Container Toolkit's packages.\n"
            "[%s]\nname=NVIDIA Container Toolkit\nbaseurl=%s\nenabled=1\ngpgcheck=0\nrepo_gpgcheck=1\n"
            "gpgkey=file://%s\nsslverify=1\n" % (ownership.TAG, name, url, key_path))


def repo_files(manager, name, url, suite, components, key):
    """``{host path: text}`` of the repository definition and its key."""
    name = check_name(name)
    list_path, key_path = repo_paths(manager, name)
    if manager == "apt":
        body = render_apt_list(url, suite, components or [], key_path)
    else:
        body = render_dnf_repo(name, url, key_path)
    return {list_path: body, key_path: check_key(key)}


def package_specs(manager, version):
    """What to hand the package manager: every package pinned to ``version`` (apt ``name=ver``,
    dnf ``name-ver``), or the bare names when no version is pinned."""
    if not version:
        return list(PACKAGES)
    sep = "=" if manager == "apt" else "-"
    return ["%s%s%s" % (name, sep, version) for name in PACKAGES]


def needs_install(installed, version):
    """The packages that are missing, or not at ``version`` when one is pinned."""
    return [name for name in PACKAGES if name not in installed or (version and installed[name] != version)]


# The node's dnf commands, in the order ansible-core's pkg_mgr fact looks at the first two.
DNF_COMMANDS = ("/usr/bin/dnf", "/usr/bin/microdnf", "/usr/bin/dnf5")


def dnf_backend(resolved):
    """The ``use_backend`` of ansible.builtin.dnf for a node: V(dnf5) where its dnf command is dnf5
    (Fedora 41 and later), else V(dnf4). ``resolved``: the node's :data:`DNF_COMMANDS` that exist,
    in that order, their links resolved.

    Told, not left to the dnf action's own guess: that guess is the pkg_mgr fact, which is apt on
    any Debian-family node (dnf installed or not) and then fails the install, although this module
    was asked for dnf."""
    first = next(iter(resolved), "")
    return "dnf5" if posixpath.basename(first) == "dnf5" else "dnf4"


def choose_method(method, installed):
    """``(method, why)``: V(package) installs from the repository; with V(auto) a node where
    the package database has ``nvidia-container-toolkit`` uses that install (V(existing)),
    any other takes the file copy (V(files))."""
    if method == "package":
        return "package", "install_method is package"
    if MAIN_PACKAGE in installed:
        why = ("%s %s is installed from packages: using it (binaries in %s, configuration in %s) rather than "
               "laying a second copy beside it" % (MAIN_PACKAGE, installed[MAIN_PACKAGE], BIN_DIR, CONFIG_PATH))
        return "existing", why
    return "files", "no %s package is installed: the toolkit's files are copied" % MAIN_PACKAGE


def new_record(previous, installed, files, created_dirs):
    """The record after a present run: ``files`` (``{path: text}``) written now, ``created_dirs``
    (``{path: [dirs]}``) made for them. What was installed before the first run stays as the record
    had it: packages this method installed are never counted as the node's own later."""
    preexisting = previous.get("preexisting") if previous else None
    if preexisting is None:
        preexisting = {name: installed[name] for name in PACKAGES if name in installed}
    entries = []
    old = {entry["path"]: entry for entry in (previous or {}).get("files", [])}
    for path in sorted(files):
        dirs = created_dirs.get(path)
        if dirs is None:
            dirs = old.get(path, {}).get("created_dirs", [])
        entries.append({"path": path, "sha256": digest(files[path]), "created_dirs": ownership.outermost_first(dirs)})
    return {
        "kind": RECORD_KIND,
        "managed_by": ownership.TAG,
        "preexisting": dict(sorted(preexisting.items())),
        "installed": [name for name in PACKAGES if name not in preexisting],
        "files": entries,
    }


def render_record(record, created_dirs):
    """The record's text; ``created_dirs``: the directories the record's own write created."""
    document = dict(record)
    document[ownership.KEY] = ownership.outermost_first(created_dirs)
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def same_record(a, b):
    """Whether two records say the same (their own ``created_dirs`` aside)."""
    def strip(record):
        return {k: v for k, v in (record or {}).items() if k != ownership.KEY}
    return strip(a) == strip(b)


def parse_record(text, host_path):
    """The record read back from the node, checked: a damaged or forged one raises PackageError."""
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise PackageError("%s is not the JSON record this module writes (%s); move it away to start over, "
                           "nothing was changed" % (host_path, exc)) from None
    if not isinstance(record, dict) or record.get("kind") != RECORD_KIND:
        raise PackageError("%s is not a record of %s's package install; move it away, nothing was changed"
                           % (host_path, ownership.TAG))
    try:
        ownership.dirs_in_document(record)
        files = record.get("files", [])
        preexisting = record.get("preexisting", {})
        installed = record.get("installed", [])
        if not isinstance(files, list) or not isinstance(preexisting, dict) or not isinstance(installed, list):
            raise ValueError("bad members")
        for entry in files:
            if (not isinstance(entry, dict) or not isinstance(entry.get("path"), str)
                    or not isinstance(entry.get("sha256"), str)
                    or not isinstance(entry.get("created_dirs", []), list)):
                raise ValueError("bad file entry")
            ownership.dirs_in_document({ownership.KEY: entry.get("created_dirs", [])})
    except ValueError as exc:
        raise PackageError("%s is damaged (%s); move it away to start over, nothing was changed" % (host_path, exc)) from None
    # Only the four packages can be in it: a forged record never makes uninstall remove others.
    record["installed"] = [name for name in installed if name in PACKAGES]
    record["files"] = [dict(entry, path=normalize_host_path(entry["path"])) for entry in files
                       if is_repo_file(entry["path"])]
    return record


def is_repo_file(path):
    """Whether a record's file entry is one this method could have written: a repository file or
    key in its directory, with its suffix (any name, so the check is on those)."""
    if not isinstance(path, str) or "\0" in path or not path.startswith("/"):
        return False
    directory, name = posixpath.split(normalize_host_path(path))
    stem, ext = posixpath.splitext(name)
    return bool(NAME_RE.match(stem)) and (directory, ext) in (
        (APT_LIST_DIR, ".list"), (APT_KEYRING_DIR, ".asc"), (DNF_REPO_DIR, ".repo"), (DNF_KEY_DIR, ".asc"))


def removals(record, installed):
    """The packages state=absent hands the package manager: those the record says this method
    installed and that are still installed."""
    return [name for name in (record or {}).get("installed", []) if name in installed]
