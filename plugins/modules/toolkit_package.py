#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: toolkit_package
short_description: Set up the NVIDIA Container Toolkit's package repository, and find an install from packages
version_added: 0.2.0
description:
  - The half of installing the toolkit from NVIDIA's packages that is not the package manager's job.
    It reads the package database (dpkg's status file; C(rpm -q) on RPM nodes), writes the repository
    definition and its signing key, keeps a record of what it wrote and of which of the four packages
    were there before, and returns the package specs to hand to M(ansible.builtin.apt) or
    M(ansible.builtin.dnf). The C(gpu_node.container_toolkit.toolkit) role runs both.
  - "The packages are C(nvidia-container-toolkit), C(nvidia-container-toolkit-base),
    C(libnvidia-container-tools) and C(libnvidia-container1), all pinned to O(version): NVIDIA releases
    them in one version, and the first depends on the exact version of the others."
  - "apt: C(/etc/apt/sources.list.d/<repo_name>.list), one line C(deb [signed-by=<keyring>] <repo_url>
    <repo_suite> <repo_components>), and the key as C(/etc/apt/keyrings/<repo_name>.asc). dnf:
    C(/etc/yum.repos.d/<repo_name>.repo) with C(repo_gpgcheck) and C(gpgkey) the key written as
    C(/etc/pki/rpm-gpg/<repo_name>.asc)."
  - With O(method=auto) a node whose package database lists C(nvidia-container-toolkit) uses that
    install (RV(method=existing)); nothing is written and nothing is installed. Any other node takes the
    file copy of M(gpu_node.container_toolkit.toolkit_install) (RV(method=files)); nothing is written.
  - V(absent) removes the repository files this module wrote (a file changed since is kept, with a
    warning) and returns in RV(remove) the packages it installed that are still installed. The record
    goes once none of them is installed any more; packages that were on the node before the first run
    are never listed.
author:
  - GPU node maintainers (@gpu-node)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpu_node.container_toolkit.attributes
  - gpu_node.container_toolkit.attributes.NODE_GROUP
  - gpu_node.container_toolkit.node
attributes:
  check_mode:
    support: full
    details:
      - In check mode a package that is missing or not at O(version) counts as a change (RV(install)
        lists it), as the package manager cannot preview an install from an index it has not read yet.
  diff_mode:
    support: full
  safe_file_operations:
    support: full
  idempotent:
    support: full
  platform:
    platforms: posix
options:
  method:
    description:
      - V(package) sets up the repository and returns the packages to install.
      - V(auto) looks only; an install from packages is used as it is, else the file copy is used.
    type: str
    choices: [package, auto]
    default: package
  manager:
    description: The package manager; V(auto) takes V(apt) where C(/usr/bin/apt-get) exists, else V(dnf).
    type: str
    choices: [auto, apt, dnf]
    default: auto
  version:
    description:
      - The version to pin every package to, as the package manager shows it (C(apt-cache policy
        nvidia-container-toolkit)), for example V(1.17.8-1). A different installed version is upgraded
        or downgraded to it.
      - Empty installs the repository's newest when the packages are missing and leaves installed ones alone.
    type: str
    default: ""
  repo:
    description: Write the repository definition and key. V(false) when the node's repository is configured
      some other way (your own mirror, set up by another role).
    type: bool
    default: true
  repo_name:
    description: Base name of the repository and key files.
    type: str
    default: nvidia-container-toolkit
  repo_url:
    description:
      - The repository's URL. Empty is NVIDIA's own
        (C(https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH)) for apt,
        C(https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch) for dnf).
      - A mirror, or a C(file:) URL on an air-gapped node.
    type: str
    default: ""
  repo_suite:
    description: The apt suite; V(/) for a flat repository such as NVIDIA's, else a suite name used with O(repo_components).
    type: str
    default: /
  repo_components:
    description: The apt components, with a suite name in O(repo_suite).
    type: list
    elements: str
    default: []
  repo_key:
    description:
      - The repository's ASCII-armored public signing key (NVIDIA's is published at
        C(https://nvidia.github.io/libnvidia-container/gpgkey)); required with O(repo=true) and O(state=present).
    type: str
    default: ""
  record_dir:
    description: Host directory of the record (C(toolkit-package.json)); the toolkit's install dir.
    type: str
    default: /usr/local/nvidia/toolkit
  state:
    description: V(absent) removes what V(present) wrote and returns the packages to remove.
    type: str
    choices: [present, absent]
    default: present
notes:
  - The module holds the node's lock (an C(flock) on O(host_root)) while it reads and writes.
  - The package manager itself runs on the node's C(/), so a package install needs O(host_root=/).
seealso:
  - module: gpu_node.container_toolkit.toolkit_install
  - module: ansible.builtin.apt
  - module: ansible.builtin.dnf
"""

EXAMPLES = r"""
---
- name: Set up NVIDIA's repository from a mirror
  gpu_node.container_toolkit.toolkit_package:
    version: 1.17.8-1
    repo_url: https://mirror.example.com/libnvidia-container/stable/deb/$(ARCH)
    repo_key: "{{ lookup('ansible.builtin.file', 'nvidia-container-toolkit.asc') }}"
  register: toolkit_package

- name: Install the pinned packages
  ansible.builtin.apt:
    name: "{{ toolkit_package.packages }}"
    update_cache: "{{ toolkit_package.update_cache }}"
    allow_downgrade: true
  when: toolkit_package.install | length > 0
"""

RETURN = r"""
method:
  description: V(package) (installed from the repository), V(existing) (an install from packages found and
    used), or V(files) (none found with O(method=auto); the toolkit's files are to be copied).
  returned: always
  type: str
  sample: package
msg:
  description: Why that method, in words.
  returned: always
  type: str
  sample: nvidia-container-toolkit 1.17.8-1 is installed from packages, using it
manager:
  description: The package manager, V(apt) or V(dnf).
  returned: always
  type: str
  sample: apt
dnf_backend:
  description: The backend for M(ansible.builtin.dnf)'s C(use_backend) option, V(dnf5) where the node's
    C(dnf) command is dnf5, else V(dnf4).
  returned: manager is dnf
  type: str
  sample: dnf4
installed:
  description: The four packages the package database listed as installed when the module ran, name to version.
  returned: always
  type: dict
  sample: {"libnvidia-container1": "1.17.8-1"}
packages:
  description: The package specs to install, pinned to O(version) when one is given.
  returned: state=present and method is package
  type: list
  elements: str
  sample: [nvidia-container-toolkit=1.17.8-1, nvidia-container-toolkit-base=1.17.8-1]
install:
  description: The packages that are missing or not at O(version); empty when the package manager has nothing to do.
  returned: state=present and method is package
  type: list
  elements: str
  sample: [nvidia-container-toolkit]
update_cache:
  description: Whether the package manager must read the repository again (its files changed, or a package is to be installed).
  returned: state=present and method is package
  type: bool
  sample: true
bin_dir:
  description: Where the toolkit's binaries are, with V(package) and V(existing).
  returned: method is package or existing
  type: str
  sample: /usr/bin
config_path:
  description: The toolkit's C(config.toml) the packages read, with V(package) and V(existing).
  returned: method is package or existing
  type: str
  sample: /etc/nvidia-container-runtime/config.toml
remove:
  description: The packages this module's installs put on the node that are still installed, for the package manager to remove.
  returned: state=absent
  type: list
  elements: str
  sample: [nvidia-container-toolkit, libnvidia-container1]
record:
  description: Host path of the record.
  returned: always
  type: str
  sample: /usr/local/nvidia/toolkit/toolkit-package.json
changes:
  description:
    - Each path written or removed (or, in check mode, that would be).
    - In check mode also each package the package manager would install, upgrade or downgrade, its spec
      as C(path) and V(installed) as C(action).
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The host path.
      type: str
    action:
      description: What happened to it.
      type: str
      choices: [created, updated, removed, kept, installed]
    reason:
      description: Why a repository file was V(kept).
      type: str
      returned: with V(kept)
      sample: changed since this module wrote it
  sample:
    - path: /etc/apt/sources.list.d/nvidia-container-toolkit.list
      action: created
"""

import posixpath

from ansible.module_utils.basic import AnsibleModule

# First of the collection's imports: it fails clearly on a node Python too old for the others.
import ansible_collections.gpu_node.container_toolkit.plugins.module_utils.node_python  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import (
    argument_specs,
    node_fs,
    node_model,
    ownership,
)
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import toolkit_package as tp
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change, file_action


def fail(module, msg, result):
    module.fail_json(msg=msg, **{key: value for key, value in result.items() if key != "msg"})


def choose_manager(module, node):
    if module.params["manager"] != "auto":
        return module.params["manager"]
    return "apt" if node.exists("/usr/bin/apt-get") or node.exists(tp.DPKG_STATUS) else "dnf"


def installed_packages(module, node, manager):
    """What the package database lists, of the four packages."""
    if manager == "apt":
        found = tp.parse_dpkg_status(node.read_text(tp.DPKG_STATUS) or "")
        return {name: found[name] for name in tp.PACKAGES if name in found}
    rpm = module.get_bin_path("rpm")
    if rpm is None:
        module.fail_json(msg="manager is dnf but there is no rpm on this node to ask which packages are installed; "
                             "set manager to apt on a Debian or Ubuntu node", changed=False)
    _rc, out, _err = module.run_command(
        [rpm, "--root", node.host_root, "-q", "--qf", "%{NAME} %{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n"]
        + list(tp.PACKAGES), check_rc=False)
    return tp.parse_rpm_query(out)


def dnf_backend(node):
    return tp.dnf_backend([node.resolve(path) for path in tp.DNF_COMMANDS if node.exists(path)])


def read_record(module, node, path):
    text = node.read_text(path)
    if text is None:
        return None, None
    try:
        return tp.parse_record(text, path), text
    except tp.PackageError as exc:
        module.fail_json(msg=str(exc), changed=False, record=path)


def write_file(module, node, path, text, mode, result):
    """Write ``text`` at ``path`` unless it is there already; the directories the write created."""
    current = node.read_text(path)
    if current == text:
        return None
    made = node.missing_dirs(posixpath.dirname(path))
    if not module.check_mode:
        node.make_dirs(posixpath.dirname(path))
        node.write(path, text.encode("utf-8"), mode=mode)
    result["changed"] = True
    result["changes"].append(change(path, file_action(current, text)))
    result["diff"].append(node_fs.text_diff(path, current, path, text))
    return made if current is None else None


def present(module, node, manager, installed, record_path, result):
    params = module.params
    try:
        version = tp.check_version(params["version"])
        files = {}
        if params["repo"]:
            url = params["repo_url"] or (tp.NVIDIA_APT_URL if manager == "apt" else tp.NVIDIA_DNF_URL)
            files = tp.repo_files(manager, params["repo_name"], url, params["repo_suite"],
                                  params["repo_components"], params["repo_key"])
    except tp.PackageError as exc:
        fail(module, "%s; nothing was changed" % exc, result)
    previous, _text = read_record(module, node, record_path)
    # Repository files an earlier run wrote under another name go.
    stale = [entry for entry in (previous or {}).get("files", []) if entry["path"] not in files]
    created = {}
    for path, text in sorted(files.items()):
        made = write_file(module, node, path, text, 0o644, result)
        if made is not None:
            created[path] = made
    for entry in stale:
        remove_file(module, node, entry, result)
    record = tp.new_record(previous, installed, files, created)
    record_dirs = ownership.dirs_in_document(previous) if previous else node.missing_dirs(
        posixpath.dirname(record_path))
    if previous is None or not tp.same_record(previous, record):
        write_file(module, node, record_path, tp.render_record(record, record_dirs), 0o644, result)
    install = tp.needs_install(installed, version)
    if install and module.check_mode:
        # The package manager cannot preview it (apt reads no repository index in check mode): this
        # module says the run would change the node, and what.
        result["changed"] = True
        specs = dict(zip(tp.PACKAGES, tp.package_specs(manager, version)))
        result["changes"].extend(change(specs[name], "installed") for name in install)
    result.update(packages=tp.package_specs(manager, version), install=install,
                  update_cache=bool(install) or any(c["path"] in files for c in result["changes"]))


def remove_file(module, node, entry, result):
    """Remove a repository file this module wrote, unless it was changed since; then its created dirs."""
    path = entry["path"]
    text = node.read_text(path)
    if text is None:
        return
    if tp.digest(text) != entry["sha256"]:
        module.warn("%s was changed since this module wrote it; it was kept, remove it by hand if it must go" % path)
        result["changes"].append(change(path, "kept", "changed since this module wrote it"))
        return
    remove_owned(module, node, path, text, entry.get("created_dirs", []), result)


def remove_owned(module, node, path, text, created_dirs, result):
    """Remove a file this module wrote (its text was ``text``), then the directories made for it."""
    if not module.check_mode:
        node.remove(path)
    result["changed"] = True
    result["changes"].append(change(path, "removed"))
    result["diff"].append(node_fs.text_diff(path, text, path, None))
    dirs = ownership.removable(path, created_dirs)
    if dirs and not module.check_mode:
        for directory in node.remove_empty_dirs(dirs):
            result["changes"].append(change(directory, "removed"))


def absent(module, node, installed, record_path, result):
    record, text = read_record(module, node, record_path)
    result["remove"] = tp.removals(record, installed)
    if record is None:
        return
    for entry in record.get("files", []):
        remove_file(module, node, entry, result)
    if result["remove"]:
        # Kept until the packages it lists are gone: the next run still knows which are this module's.
        kept = dict(record, files=[])
        new_text = tp.render_record(kept, ownership.dirs_in_document(record))
        if new_text != text:
            write_file(module, node, record_path, new_text, 0o644, result)
        return
    remove_owned(module, node, record_path, text, ownership.dirs_in_document(record), result)


def main():
    module = AnsibleModule(argument_spec=argument_specs.toolkit_package(), supports_check_mode=True)
    params = module.params
    node = node_fs.NodeRoot(params["host_root"])
    record_path = posixpath.join(node_model.normalize_host_path(params["record_dir"]), tp.RECORD_NAME)
    result = {"changed": False, "record": record_path, "changes": [], "diff": []}
    try:
        with node.locked():
            manager = choose_manager(module, node)
            installed = installed_packages(module, node, manager)
            result.update(manager=manager, installed=installed)
            if manager == "dnf":
                result["dnf_backend"] = dnf_backend(node)
            if params["state"] == "absent":
                result.update(method="package", msg="removing what the package method added")
                absent(module, node, installed, record_path, result)
            else:
                method, why = tp.choose_method(params["method"], installed)
                result.update(method=method, msg=why)
                if method in ("package", "existing"):
                    result.update(bin_dir=tp.BIN_DIR, config_path=tp.CONFIG_PATH)
                if method == "package":
                    present(module, node, manager, installed, record_path, result)
    except node_fs.NodeFsError as exc:
        fail(module, str(exc), result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
