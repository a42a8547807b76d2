# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/dev/char`` links for the NVIDIA device nodes, made through the node's file layer.

Shared by ``device_nodes`` (``char_links``) and ``gpu-node-cdi`` (which keeps them at boot, when
/dev is new): what the links should be is ``device_nodes.plan_char_links``; this module looks at
the node and makes them, standard library only.
"""

from __future__ import annotations

import posixpath

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import device_nodes
from ansible_collections.gpu_node.container_toolkit.plugins.module_utils.differences import change


def nvidia_char_nodes(node, real_dir, planned=()):
    """The NVIDIA character devices under ``real_dir`` (``<dev_root>/dev``, links resolved; a path
    on the node), with the nodes ``planned`` (made later, or not at all in check mode) among them."""
    found = {n["name"]: n for n in planned}
    names = [n for n in node.list_dir(real_dir) if n.startswith("nvidia") and n not in device_nodes.NVIDIA_NODE_DIRS]
    for directory in device_nodes.NVIDIA_NODE_DIRS:
        names += [directory + "/" + n for n in node.list_dir(posixpath.join(real_dir, directory))]
    for name in names:
        seen = node.observe(posixpath.join(real_dir, name))
        if seen is not None and seen["type"] == "char":
            found[name] = {"name": name, "major": seen["major"], "minor": seen["minor"]}
    return list(found.values())


def converge(node, dev_dir, real_dir, planned=(), check_mode=False):
    """Make the links; returns ``{"steps", "changes", "warnings", "before", "after"}`` (diff lines).
    Raises ``node_fs.NodeFsError`` naming the link when one cannot be made."""
    out = {"steps": [], "changes": [], "warnings": [], "before": [], "after": []}
    char_dir = node.resolve(device_nodes.CHAR_DIR)
    nodes = nvidia_char_nodes(node, real_dir, planned)
    found = {n: node.observe(posixpath.join(char_dir, n)) for n in ("%d:%d" % (x["major"], x["minor"]) for x in nodes)}
    for step in device_nodes.plan_char_links(nodes, dev_dir, found):
        current = found[step["name"]]
        shown = "-> %s" % current["target"] if current and current["type"] == "symlink" else device_nodes.describe(current)
        out["before"].append("%s: %s" % (step["path"], shown))
        out["after"].append("%s: %s" % (step["path"], "-> " + step["target"] if step["action"] != "refuse" else shown))
        out["steps"].append({"path": step["path"], "target": step["target"], "action": step["action"]})
        if step["action"] == "refuse":
            out["warnings"].append("%s %s; left alone" % (step["path"], step["reason"]))
        if step["action"] not in ("create", "replace"):
            continue
        made = node.missing_dirs(char_dir) if step["action"] == "create" else []
        if not check_mode:
            if made:
                node.make_dirs(char_dir)
            node.symlink(posixpath.join(char_dir, step["name"]), step["target"])
        out["changes"].extend(change(d, "created") for d in made
                              if change(d, "created") not in out["changes"])
        out["changes"].append(change(step["path"], device_nodes.CHAR_LINK_ACTIONS[step["action"]]))
    return out
