"""A Debian node with a real apt, and a signed apt repository of stand-in toolkit packages.

The node is a ``debootstrap --variant=minbase bookworm`` tree with ``python3-apt`` (what
``ansible.builtin.apt`` needs), built once into ``.cache/apt-node/`` (about 40 s and 260 MB) and
copied for each test. Ansible reaches it over the local connection with pipelining, through an
interpreter that runs the node's own ``python3`` chrooted into the copy, in a mount namespace of its
own with ``/proc`` mounted: every module, ``apt`` and ``dpkg`` included, runs on the node's files as
on a real Debian node.

The repository is laid out as NVIDIA's (a flat one per architecture, ``<url>/$(ARCH) /``), indexed
with ``dpkg-scanpackages`` and signed (``InRelease``, ``Release.gpg``) with an Ed25519 key the
test generates with ``gpg``; apt checks the signature with the key the role writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import cache_lock
import toolkit_artifacts

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "apt-node"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = "python3,python3-apt"
# Where the repository sits inside the node, and the URL the role is given for it.
REPO_DIR = "srv/nvidia-repo"
REPO_URL = "file:/srv/nvidia-repo/$(ARCH)"


class Unavailable(Exception):
    """The node tree cannot be built here (no debootstrap, no mirror)."""


def cached_tree(packages=PACKAGES, marker="usr/lib/python3/dist-packages/apt"):
    """The debootstrap tree with ``packages`` (comma-separated) included, built unless a finished
    one is cached; ``marker``, a directory one of them installs, tells a finished tree."""
    with cache_lock.held(CACHE):
        return _built_tree(packages, marker)


def _built_tree(packages, marker):
    tree = CACHE / ("%s-%s" % (SUITE, packages.replace(",", "+")))
    if (tree / marker).is_dir():
        return tree
    if not shutil.which("debootstrap"):
        raise Unavailable("debootstrap is not installed (scripts/apt-packages.txt names it)")
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = tree.with_name(tree.name + ".tmp")
    shutil.rmtree(partial, ignore_errors=True)
    (CACHE / "debs").mkdir(exist_ok=True)
    log = CACHE / ("debootstrap-%s.log" % tree.name)
    with log.open("w") as out:
        proc = subprocess.run(["debootstrap", "--variant=minbase", "--include=" + packages,
                               "--cache-dir=%s" % (CACHE / "debs"), SUITE, str(partial), MIRROR],
                              stdout=out, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise Unavailable("debootstrap failed (rc %d); see %s:\n%s" % (
            proc.returncode, log, "\n".join(log.read_text().splitlines()[-20:])))
    # Hermetic: apt reads only the repository a test sets up.
    (partial / "etc" / "apt" / "sources.list").write_text("")
    for entry in (partial / "var" / "lib" / "apt" / "lists").iterdir():
        if entry.is_file():
            entry.unlink()
    partial.rename(tree)
    return tree


def copy_node(dest, tree=None):
    """A fresh copy of ``tree`` (the cached apt tree by default) at ``dest``; returns ``dest``."""
    subprocess.run(["cp", "-a", str(tree or cached_tree()), str(dest)], check=True)
    return Path(dest)


def interpreter(node, path):
    """Write at ``path`` the interpreter that runs a module on ``node``; returns ``path``."""
    path = Path(path)
    path.write_text(textwrap.dedent("""\
        #!/bin/sh
        # The node's python3, chrooted into the node tree with /proc mounted in a private namespace.
        exec unshare -m --propagation private sh -c \\
          'mount -t proc proc "$0/proc" && exec chroot "$0" /usr/bin/python3 "$@"' %s "$@"
        """ % node))
    path.chmod(0o755)
    return path


@contextlib.contextmanager
def gpg_command(home):
    """``gpg``'s command line for the GnuPG home ``home``, named by a short link in the temp dir.

    gpg-agent listens on sockets inside the home, and a socket's path holds at most 107 bytes: a
    home deep in a checkout (molecule's is ``<checkout>/.cache/ansible-home/tmp/molecule.*/...``)
    makes the agent fail to start and gpg exit 2. The agent is stopped at the end.
    """
    link = Path(tempfile.mkdtemp(prefix="gpg-")) / "home"
    link.symlink_to(Path(home).resolve())
    try:
        yield ["gpg", "--batch", "--quiet", "--yes", "--homedir", str(link), "--passphrase", ""]
    finally:
        subprocess.run(["gpgconf", "--homedir", str(link), "--kill", "gpg-agent"], check=False, capture_output=True)
        shutil.rmtree(link.parent)


def make_key(home):
    """A signing key in the GnuPG home ``home``: its ASCII-armored public key."""
    home = Path(home)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    with gpg_command(home) as gpg:
        subprocess.run(gpg + ["--quick-gen-key", "Toolkit repo (tests) <repo@example.com>", "ed25519", "sign", "never"],
                       check=True, capture_output=True)
        return subprocess.run(gpg + ["--armor", "--export"], check=True, capture_output=True, text=True).stdout


def build_repo(root, versions, gnupg_home):
    """A signed flat repository in ``root/amd64`` holding the four packages at each of ``versions``."""
    arch_dir = Path(root) / "amd64"
    arch_dir.mkdir(parents=True, exist_ok=True)
    work = Path(root).parent / (Path(root).name + "-build")
    for version in versions:
        tree = toolkit_artifacts.build_tree(work / ("tree-" + version), version=version)
        for deb in toolkit_artifacts.build_debs(tree, work / ("debs-" + version), version=version, repository=True):
            shutil.copy2(deb, arch_dir / deb.name)
    shutil.rmtree(work)
    packages = subprocess.run(["dpkg-scanpackages", "--multiversion", "."], cwd=str(arch_dir), check=True,
                              capture_output=True, text=True).stdout
    (arch_dir / "Packages").write_text(packages)
    data = packages.encode()
    release = textwrap.dedent("""\
        Origin: gpu-node tests
        Label: stand-in NVIDIA Container Toolkit
        Date: %s
        SHA256:
         %s %d Packages
        """) % (time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime()), hashlib.sha256(data).hexdigest(), len(data))
    (arch_dir / "Release").write_text(release)
    with gpg_command(gnupg_home) as gpg:
        subprocess.run(gpg + ["--clearsign", "-o", str(arch_dir / "InRelease"), str(arch_dir / "Release")], check=True)
        subprocess.run(gpg + ["-abs", "-o", str(arch_dir / "Release.gpg"), str(arch_dir / "Release")], check=True)
    return arch_dir


def dpkg_installed(node):
    """``{package: version}`` of what the node's dpkg database lists as installed."""
    out = subprocess.run(["chroot", str(node), "dpkg-query", "-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\\n"],
                         check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2].startswith("ii"):
            found[parts[0]] = parts[1]
    return found


def dpkg_install(node, debs):
    """Install ``debs`` on the node with its own dpkg, as a node whose toolkit came from elsewhere."""
    inside = Path(node) / "tmp" / "preinstalled"
    inside.mkdir(parents=True, exist_ok=True)
    names = []
    for deb in debs:
        shutil.copy2(deb, inside / Path(deb).name)
        names.append("/tmp/preinstalled/" + Path(deb).name)
    subprocess.run(["chroot", str(node), "dpkg", "-i"] + names, check=True, capture_output=True,
                   env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    shutil.rmtree(inside)


if __name__ == "__main__":
    # python tests/support/apt_node.py DIR VERSION...: the signed repository in DIR/repo (its
    # packages at each VERSION) and its armored public key in DIR/key.asc (the molecule scenario
    # debian-package puts both on its node).
    import sys

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    armored = make_key(out / "gnupg")
    build_repo(out / "repo", sys.argv[2:], out / "gnupg")
    (out / "key.asc").write_text(armored)
    print(out)
