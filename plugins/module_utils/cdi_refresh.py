# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpu-node-cdi``: the node regenerates its CDI specs itself, at boot and after a driver upgrade.

The roles put this on the node as one file (``plugins/lookup/node_program.py`` builds it from
these module_utils) with the settings provisioning used, the options each ``cdi_spec`` task got::

    gpu-node-cdi generate --config /usr/local/nvidia/toolkit/.gpu-node/cdi-refresh.json

Each spec is converged exactly as ``cdi_spec`` converges it (:func:`.cdi_files.converge`), under
the node's lock, so the next playbook run finds nothing to change. A spec that cannot be built
(no driver, a broken driver tree) is left as it was and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import sys

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import (
    cdi,
    cdi_files,
    dev_char,
    device_nodes,
    node_fs,
    node_model,
)

PROGRAM = "gpu-node-cdi"
SETTINGS_VERSION = 1
TYPES = {"str": str, "path": str, "bool": bool, "list": list}


class SettingsError(ValueError):
    """The settings file cannot be used; the message names the file and the key."""


def spec_params(entry, where):
    """``entry`` (one spec's options) with ``cdi_spec``'s defaults filled in, its aliases resolved
    and its types and choices checked, as the module checks them."""
    spec = cdi_files.argument_spec()
    spec.pop("host_root")
    spec.pop("read_ahead")  # the controller's, from a look at the node; the generator is on the node
    aliases = {alias: name for name, option in spec.items() for alias in option.get("aliases", ())}
    if not isinstance(entry, dict):
        raise SettingsError("%s: each spec must be an object of cdi_spec options, got %r" % (where, entry))
    params = {}
    for key, value in entry.items():
        name = aliases.get(key, key)
        if name not in spec:
            raise SettingsError("%s: unknown option %r (cdi_spec's options: %s)" % (where, key, ", ".join(sorted(spec))))
        option = spec[name]
        if value is not None and not isinstance(value, TYPES[option["type"]]):
            raise SettingsError("%s: %s must be of type %s, got %r" % (where, name, option["type"], value))
        allowed = option.get("choices")
        if allowed and value is not None:
            bad = [v for v in (value if isinstance(value, list) else [value]) if v not in allowed]
            if bad:
                raise SettingsError("%s: %s must be one of %s, got %r" % (where, name, ", ".join(allowed), bad[0]))
        params[name] = value
    for name, option in spec.items():
        if params.get(name) is None:
            params[name] = option.get("default")
    if params["state"] != "present":
        raise SettingsError("%s: state must be present (the generator writes specs, it never removes one)" % where)
    return params


def load_settings(text, name):
    """``(specs, char_links)`` from the settings file's ``text`` (``name`` is its path, for messages):
    the list of spec options, and the ``dev_root`` whose NVIDIA nodes get ``/dev/char`` links, or
    None when the file does not ask for them."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SettingsError("%s is not JSON: %s" % (name, exc)) from None
    if not isinstance(data, dict) or data.get("version") != SETTINGS_VERSION or not isinstance(data.get("specs"), list):
        raise SettingsError("%s: expected {\"version\": %d, \"specs\": [...]}, as the gpu_node role writes it"
                            % (name, SETTINGS_VERSION))
    specs = [spec_params(entry, "%s: specs[%d]" % (name, index)) for index, entry in enumerate(data["specs"])]
    char_links = data.get("char_links")
    if char_links is not None and not (isinstance(char_links, dict) and isinstance(char_links.get("dev_root"), str)):
        raise SettingsError("%s: char_links must be {\"dev_root\": \"<host path>\"}, got %r" % (name, char_links))
    return specs, (char_links or {}).get("dev_root")


def refresh(host_root, specs, check_mode=False, char_links=None):
    """Converge every spec of ``specs`` on the node at ``host_root``, under the node's lock.

    Returns ``(lines, failed)``: a line for each spec (what changed, or the error that left it as
    it was) and whether any failed. With ``char_links`` (a dev_root), the ``/dev/char`` links of
    its NVIDIA device nodes are made first: /dev is new at every boot.
    """
    node = node_fs.NodeRoot(host_root)
    lines, failed = [], False
    with node.locked():
        if char_links is not None:
            dev_dir = node_model.join_host(char_links, "dev")
            try:
                links = dev_char.converge(node, dev_dir, node.resolve(dev_dir), check_mode=check_mode)
            except node_fs.NodeFsError as exc:
                failed = True
                lines.append("/dev/char: %s" % exc)
            else:
                lines.extend("warning: %s" % w for w in links["warnings"])
                made = [c["path"] for c in links["changes"] if c["path"] != device_nodes.CHAR_DIR]
                lines.append("/dev/char: %s" % ("%s%s" % ("would be " if check_mode else "", "linked " + ", ".join(made))
                                                if made else "up to date"))
        for params in specs:
            params = dict(params, host_root=host_root)
            path = node_model.normalize_host_path(
                params["path"] or cdi.default_path(params["spec_mode"], params["vendor"], params["device_class"]))
            run = cdi_files.Run(node, params, check_mode)
            try:
                result = cdi_files.converge(run, path)
            except (cdi_files.CdiFileError, cdi.CdiError, node_fs.NodeFsError) as exc:
                failed = True
                lines.append("%s: %s; the spec there was left as it was" % (path, exc))
                continue
            lines.extend("warning: %s" % w for w in run.warnings)
            lines.append(describe(path, result, check_mode))
    return lines, failed


def describe(path, result, check_mode):
    if not result["changed"]:
        return "%s: up to date (driver %s)" % (path, result.get("driver_version"))
    actions = ", ".join("%s %s" % (c["action"], c["path"]) for c in result["changes"])
    before = result.get("previous_driver_version")
    driver = "driver %s" % result.get("driver_version")
    if before and before != result.get("driver_version"):
        driver = "driver %s -> %s" % (before, result.get("driver_version"))
    return "%s: %s%s (%s)" % (path, "would be " if check_mode else "", actions, driver)


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROGRAM, description="Regenerate this node's CDI specs from the settings "
                                     "gpu_node.container_toolkit provisioned them with.")
    commands = parser.add_subparsers(dest="command", required=True)
    generate = commands.add_parser("generate", help="write each spec of the settings file when it differs")
    generate.add_argument("--config", required=True, help="the settings file (JSON) the gpu_node role wrote")
    generate.add_argument("--host-root", default="/", help="where the node's / is seen (default: /)")
    generate.add_argument("--check", action="store_true", help="only say what would change")
    args = parser.parse_args(argv)
    try:
        with open(args.config, encoding="utf-8") as handle:
            specs, char_links = load_settings(handle.read(), args.config)
    except OSError as exc:
        sys.stderr.write("%s: cannot read %s: %s; no spec was changed\n" % (PROGRAM, args.config, exc.strerror or exc))
        return 1
    except SettingsError as exc:
        sys.stderr.write("%s: %s; no spec was changed\n" % (PROGRAM, exc))
        return 1
    try:
        lines, failed = refresh(args.host_root, specs, args.check, char_links)
    except node_fs.NodeFsError as exc:
        sys.stderr.write("%s: %s; no spec was changed\n" % (PROGRAM, exc))
        return 1
    for line in lines:
        sys.stdout.write("%s: %s\n" % (PROGRAM, line))
    return 1 if failed else 0
