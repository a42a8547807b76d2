"""A node with a real dnf and rpm, and a signed dnf repository of stand-in toolkit packages.

The node is apt_node's debootstrap tree with Debian 12's own ``dnf``, ``python3-dnf`` (what
``ansible.builtin.dnf`` needs) and ``rpm`` included, built once into ``.cache/apt-node/`` (about
110 s and 430 MB) and copied for each test; modules reach it through apt_node's chrooted
interpreter, so dnf and rpm work on the node's own rpm database and files. The tree still has
apt-get, so the role is told ``toolkit_package_manager: dnf``.

The repository is laid out as NVIDIA's rpm repository is (packages and ``repodata/`` at the top),
indexed with ``createrepo_c``, and its ``repodata/repomd.xml`` signed (``repomd.xml.asc``) with
apt_node's per-test Ed25519 key: the ``.repo`` file the role writes has ``repo_gpgcheck=1``, so dnf
reads no metadata that key did not sign. The packages themselves are unsigned, as the role's
``gpgcheck=0`` (NVIDIA's own ``.repo`` file) expects.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import apt_node
import toolkit_artifacts

PACKAGES = "python3,python3-dnf,dnf,rpm"
MARKER = "usr/lib/python3/dist-packages/dnf"
# Where the repository sits inside the node, and the URL the role is given for it.
REPO_DIR = "srv/nvidia-repo"
REPO_URL = "file:///srv/nvidia-repo"
Unavailable = apt_node.Unavailable


def cached_tree():
    """The debootstrap tree with dnf and rpm, built unless a finished one is cached."""
    return apt_node.cached_tree(PACKAGES, MARKER)


def copy_node(dest):
    """A fresh copy of the cached tree at ``dest``; returns ``dest``."""
    node = apt_node.copy_node(dest, cached_tree())
    # dnf.conf as Fedora and RHEL ship it: Debian's has skip_if_unavailable=True, with which dnf
    # skips a repository whose metadata fails its signature check and says only "No package".
    conf = node / "etc" / "dnf" / "dnf.conf"
    conf.write_text(conf.read_text().replace("skip_if_unavailable=True", "skip_if_unavailable=False"))
    return node


def build_repo(root, versions, gnupg_home):
    """A signed repository in ``root`` holding the four packages at each of ``versions``."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    work = root.parent / (root.name + "-build")
    for version in versions:
        tree = toolkit_artifacts.build_tree(work / ("tree-" + version), version=version,
                                            lib_dir=toolkit_artifacts.LIB_DIR_RPM)
        for rpm in toolkit_artifacts.build_rpms(tree, work / ("rpms-" + version), version=version):
            shutil.copy2(rpm, root / rpm.name)
    shutil.rmtree(work)
    subprocess.run(["createrepo_c", "--quiet", str(root)], check=True, capture_output=True)
    with apt_node.gpg_command(gnupg_home) as gpg:
        subprocess.run(gpg + ["--armor", "--detach-sign", "-o", str(root / "repodata" / "repomd.xml.asc"),
                              str(root / "repodata" / "repomd.xml")], check=True)
    return root


def rpm_installed(node):
    """``{package: version-release}`` of what the node's rpm database lists as installed."""
    out = subprocess.run(["rpm", "--root", str(node), "-qa", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\\n"],
                         check=True, capture_output=True, text=True).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if line.strip())
