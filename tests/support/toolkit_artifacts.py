"""Build NVIDIA Container Toolkit artifacts for tests: trees, .deb, .rpm and tarballs.

The binaries are stand-in ``/bin/sh`` scripts that append how they were called (their name,
arguments and the environment the wrappers set) to the file named by ``$TOOLKIT_RECORD``.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import textwrap
from pathlib import Path

VERSION = "1.14.3"
LIB_DIR_DEB = "usr/lib/x86_64-linux-gnu"
LIB_DIR_RPM = "usr/lib64"
BINARIES = (
    "nvidia-container-runtime",
    "nvidia-container-runtime.cdi",
    "nvidia-container-runtime.legacy",
    "nvidia-container-runtime-hook",
    "nvidia-ctk",
    "nvidia-container-cli",
    "nvidia-cdi-hook",
)
LIBRARIES = ("libnvidia-container", "libnvidia-container-go")
RECORDED_ENV = ("NVIDIA_CTK_CONFIG_FILE_PATH", "LD_LIBRARY_PATH", "PATH")
# Which upstream package ships what.
PACKAGES = {
    "nvidia-container-toolkit-base": ["usr/bin/nvidia-container-runtime", "usr/bin/nvidia-container-runtime.cdi",
                                      "usr/bin/nvidia-container-runtime.legacy", "usr/bin/nvidia-ctk",
                                      "usr/bin/nvidia-cdi-hook"],
    "nvidia-container-toolkit": ["usr/bin/nvidia-container-runtime-hook"],
    "libnvidia-container-tools": ["usr/bin/nvidia-container-cli"],
    "libnvidia-container1": ["LIB/libnvidia-container.so.V", "LIB/libnvidia-container.so.1",
                             "LIB/libnvidia-container-go.so.V", "LIB/libnvidia-container-go.so.1"],
}


def stand_in(name, version=VERSION):
    """A stand-in executable that records its name, version, arguments and environment."""
    env_lines = "".join(
        "  printf '%s=%%s\\n' \"${%s-<unset>}\"\n" % (var, var) for var in RECORDED_ENV
    )
    return (
        "#!/bin/sh\n"
        "{\n"
        "  printf 'name=%%s\\n' %s\n"
        "  printf 'version=%%s\\n' %s\n"
        "  for arg in \"$@\"; do printf 'arg=%%s\\n' \"$arg\"; done\n"
        "%s"
        "  printf -- '--\\n'\n"
        "} >> \"${TOOLKIT_RECORD:-/dev/null}\"\n" % (name, version, env_lines)
    )


def read_records(path):
    """The calls recorded in ``path``: ``[{"name", "version", "args": [...], env...}]``."""
    calls = []
    current = {"args": []}
    for line in Path(path).read_text().splitlines():
        if line == "--":
            calls.append(current)
            current = {"args": []}
            continue
        key, _sep, value = line.partition("=")
        if key == "arg":
            current["args"].append(value)
        else:
            current[key] = value
    return calls


def build_tree(root, version=VERSION, lib_dir=LIB_DIR_DEB, flat=False, only=None):
    """An unpacked-packages tree under ``root``; returns ``root``.

    ``flat`` puts everything at the top. ``only`` limits the binaries to those names.
    """
    root = Path(root)
    bin_dir = root if flat else root / "usr" / "bin"
    libs = root if flat else root / lib_dir
    bin_dir.mkdir(parents=True, exist_ok=True)
    libs.mkdir(parents=True, exist_ok=True)
    for name in BINARIES:
        if only is not None and name not in only:
            continue
        path = bin_dir / name
        path.write_text(stand_in(name, version))
        path.chmod(0o755)
    for library in LIBRARIES:
        real = libs / ("%s.so.%s" % (library, version))
        real.write_bytes(b"\x7fELF stand-in " + library.encode() + b" " + version.encode() + b"\n")
        real.chmod(0o644)
        link = libs / (library + ".so.1")
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(real.name)
    return root


# What NVIDIA's packages depend on (their debian/control files), for a repository apt resolves.
DEPENDS = {
    "nvidia-container-toolkit": "nvidia-container-toolkit-base (= {v}), libnvidia-container-tools (= {v}), "
                                "libnvidia-container-tools (<< 2.0.0)",
    "libnvidia-container-tools": "libnvidia-container1 (= {v}), libnvidia-container1 (<< 2.0.0)",
}
# The toolkit's configuration, which nvidia-container-toolkit-base ships as a conffile.
PACKAGED_CONFIG = "etc/nvidia-container-runtime/config.toml"


def _copy_package_files(tree, work, paths, lib_dir, version):
    """Copy a package's ``paths`` (with ``LIB`` and ``.so.V`` filled in) from ``tree`` into its
    root ``work``, links as links; returns the relative paths copied."""
    copied = []
    for rel in paths:
        rel = rel.replace("LIB", lib_dir).replace(".so.V", ".so." + version)
        src = Path(tree) / rel
        dst = work / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)
        copied.append(rel)
    return copied


def build_debs(tree, outdir, version=VERSION, compression="xz", repository=False):
    """The four upstream packages as real ``.deb`` files (``dpkg-deb --build``; NVIDIA's own are
    xz, Ubuntu's zstd). ``repository``: as NVIDIA's repository has them, with their dependencies
    on each other and the base package's ``config.toml`` conffile."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    debs = []
    for package, paths in PACKAGES.items():
        work = outdir / ("%s-root" % package)
        if work.exists():
            shutil.rmtree(work)
        (work / "DEBIAN").mkdir(parents=True)
        (work / "DEBIAN" / "control").write_text(textwrap.dedent("""\
            Package: %s
            Version: %s-1
            Architecture: amd64
            Maintainer: test <test@example.com>
            Description: stand-in %s for tests
            """ % (package, version, package)))
        if repository and package in DEPENDS:
            with (work / "DEBIAN" / "control").open("a") as control:
                control.write("Depends: %s\n" % DEPENDS[package].format(v=version + "-1"))
        if repository and package == "nvidia-container-toolkit-base":
            config = work / PACKAGED_CONFIG
            config.parent.mkdir(parents=True)
            config.write_text("#accept-nvidia-visible-devices-as-volume-mounts = false\n\n[nvidia-container-cli]\n"
                              "#debug = \"/var/log/nvidia-container-toolkit.log\"\nenvironment = []\n")
            (work / "DEBIAN" / "conffiles").write_text("/" + PACKAGED_CONFIG + "\n")
        _copy_package_files(tree, work, paths, LIB_DIR_DEB, version)
        deb = outdir / ("%s_%s-1_amd64.deb" % (package, version))
        subprocess.run(["dpkg-deb", "--root-owner-group", "-Z" + compression, "--build", str(work), str(deb)],
                       check=True, capture_output=True)
        debs.append(deb)
    return debs


# The same dependencies as RPM Requires (NVIDIA's spec files pin the exact version-release too).
REQUIRES = {
    "nvidia-container-toolkit": ["nvidia-container-toolkit-base = {v}", "libnvidia-container-tools = {v}",
                                 "libnvidia-container-tools < 2.0.0"],
    "libnvidia-container-tools": ["libnvidia-container1 = {v}", "libnvidia-container1 < 2.0.0"],
}


def build_rpms(tree, outdir, version=VERSION):
    """The four upstream packages as real ``.rpm`` files (x86_64, release 1), as NVIDIA's repository
    has them: with their Requires on each other and the base package's ``config.toml`` as
    ``%config(noreplace)``. ``tree`` is a :func:`build_tree` with ``lib_dir=LIB_DIR_RPM``."""
    outdir = Path(outdir)
    top = outdir / "rpmbuild"
    for sub in ("SPECS", "BUILD", "RPMS", "BUILDROOT", "SOURCES", "SRPMS"):
        (top / sub).mkdir(parents=True, exist_ok=True)
    rpms = []
    for package, paths in PACKAGES.items():
        # Each package's files, laid out in a root of their own that %install copies whole.
        work = outdir / ("%s-root" % package)
        if work.exists():
            shutil.rmtree(work)
        files = ["/" + rel for rel in _copy_package_files(tree, work, paths, LIB_DIR_RPM, version)]
        if package == "nvidia-container-toolkit-base":
            config = work / PACKAGED_CONFIG
            config.parent.mkdir(parents=True)
            config.write_text("#accept-nvidia-visible-devices-as-volume-mounts = false\n\n[nvidia-container-cli]\n"
                              "#debug = \"/var/log/nvidia-container-toolkit.log\"\nenvironment = []\n")
            files.append("%%config(noreplace) /%s" % PACKAGED_CONFIG)
        requires = "".join("Requires: %s\n" % req.format(v=version + "-1") for req in REQUIRES.get(package, []))
        spec = top / "SPECS" / ("%s.spec" % package)
        # No debuginfo, no brp scripts (the stand-ins are shell scripts and fake ELF headers), and
        # no automatic Requires/Provides: only the Requires NVIDIA's packages declare.
        spec.write_text(textwrap.dedent("""\
            %%global debug_package %%{nil}
            %%global __os_install_post %%{nil}
            %%define _build_id_links none
            Name: %s
            Version: %s
            Release: 1
            Summary: stand-in %s for tests
            License: Apache-2.0
            AutoReqProv: no
            %s
            %%description
            Stand-in of NVIDIA's %s package for tests.

            %%install
            mkdir -p %%{buildroot}
            cp -a %s/. %%{buildroot}/

            %%files
            %s
            """) % (package, version, package, requires, package, work, "\n".join(files)))
        subprocess.run(["rpmbuild", "-bb", "--target", "x86_64", "--define", "_topdir %s" % top,
                        "--define", "_dbpath %s" % (top / "db"), str(spec)], check=True, capture_output=True)
        rpms.append(top / "RPMS" / "x86_64" / ("%s-%s-1.x86_64.rpm" % (package, version)))
    return rpms


def build_rpm(tree, outdir, version=VERSION):
    """One ``.rpm`` holding the whole tree (``rpmbuild -bb``, offline); None when rpmbuild is absent."""
    rpmbuild = shutil.which("rpmbuild")
    if not rpmbuild:
        return None
    outdir = Path(outdir)
    top = outdir / "rpmbuild"
    for sub in ("SPECS", "BUILD", "RPMS", "BUILDROOT", "SOURCES", "SRPMS"):
        (top / sub).mkdir(parents=True, exist_ok=True)
    tree = Path(tree)
    files = sorted("/" + str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() or p.is_symlink())
    spec = top / "SPECS" / "toolkit.spec"
    spec.write_text(textwrap.dedent("""\
        %%global debug_package %%{nil}
        %%global __os_install_post %%{nil}
        %%define _build_id_links none
        Name: nvidia-container-toolkit-standin
        Version: %s
        Release: 1
        Summary: stand-in toolkit for tests
        License: GPL-3.0-or-later
        BuildArch: noarch
        AutoReqProv: no

        %%description
        Stand-in binaries that record how they were called.

        %%install
        mkdir -p %%{buildroot}
        cp -a %s/. %%{buildroot}/

        %%files
        %s
        """) % (version, tree, "\n".join(files)))
    subprocess.run([rpmbuild, "-bb", "--define", "_topdir %s" % top, "--define", "_dbpath %s" % (top / "db"), str(spec)], check=True, capture_output=True)
    (rpm,) = list((top / "RPMS").rglob("*.rpm"))
    return rpm


def build_tarball(tree, path, compression="gz", extra=()):
    """A tarball of ``tree``; ``extra`` adds hand-made members: ``(TarInfo, bytes or None)``."""
    mode = "w:%s" % compression if compression else "w"
    with tarfile.open(path, mode) as tar:
        tar.add(str(tree), arcname=".")
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return Path(path)


def evil_member(kind):
    """``(TarInfo, data)`` of an unsafe member: ``dotdot``, ``absolute``, ``symlink_out``,
    ``device``, ``setuid``."""
    if kind == "dotdot":
        info = tarfile.TarInfo("../escaped")
    elif kind == "absolute":
        info = tarfile.TarInfo("/tmp/escaped-absolute")
    elif kind == "symlink_out":
        info = tarfile.TarInfo("usr/bin/escape")
        info.type = tarfile.SYMTYPE
        info.linkname = "../../../../etc/passwd"
        return info, None
    elif kind == "device":
        info = tarfile.TarInfo("usr/bin/nvidiactl")
        info.type = tarfile.CHRTYPE
        info.devmajor, info.devminor = 195, 255
        return info, None
    elif kind == "setuid":
        info = tarfile.TarInfo("usr/bin/nvidia-setuid")
        info.mode = 0o4755
    else:
        raise ValueError(kind)
    data = b"#!/bin/sh\necho escaped\n"
    info.size = len(data)
    return info, data


if __name__ == "__main__":
    # python tests/support/toolkit_artifacts.py DIR: an unpacked-packages tree of stand-ins in DIR.
    import sys

    print(build_tree(sys.argv[1]))
