# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which NVIDIA control device nodes are missing or wrong. Pure functions, no I/O.

The control nodes are the ones a driver container or ``nvidia-modprobe`` makes besides the
per-GPU ``nvidiaN``: ``nvidiactl`` and ``nvidia-modeset`` on the NVIDIA major, ``nvidia-uvm`` and
``nvidia-uvm-tools`` on the ``nvidia-uvm`` major. Majors come from ``/proc/devices``.
"""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import procfs

NODE_MODE = 0o666

# (name, which major, minor)
CONTROL_NODES = (
    ("nvidiactl", "nvidia", 255),
    ("nvidia-modeset", "nvidia", 254),
    ("nvidia-uvm", "nvidia-uvm", 0),
    ("nvidia-uvm-tools", "nvidia-uvm", 1),
)


class KernelModuleNotLoaded(Exception):
    """``/proc/devices`` has no NVIDIA character major."""


def wanted_nodes(devices, nodes="control"):
    """``(wanted, skipped)`` for a parsed ``/proc/devices``.

    ``wanted``: ``[{"name", "major", "minor", "mode"}]``. ``skipped``: human-readable lines for
    nodes that cannot be made because their major is absent (``nvidia-uvm`` not loaded).
    Raises :class:`KernelModuleNotLoaded` when there is no ``nvidia``/``nvidia-frontend`` major.
    """
    if nodes == "none":
        return [], []
    if nodes != "control":
        raise ValueError("nodes must be 'control' or 'none', not %r" % (nodes,))
    majors = {"nvidia": procfs.nvidia_major(devices), "nvidia-uvm": devices.get("character", {}).get("nvidia-uvm")}
    if majors["nvidia"] is None:
        raise KernelModuleNotLoaded(
            "no 'nvidia' or 'nvidia-frontend' character device in /proc/devices: the NVIDIA kernel "
            "module is not loaded, so there is no major number to create device nodes with"
        )
    wanted = []
    skipped = []
    for name, major_name, minor in CONTROL_NODES:
        major = majors[major_name]
        if major is None:
            skipped.append("%s: no '%s' character device in /proc/devices (module %s not loaded)"
                           % (name, major_name, major_name.replace("-", "_")))
            continue
        wanted.append({"name": name, "major": major, "minor": minor, "mode": NODE_MODE})
    return wanted, skipped


# The words of node_fs's file-type vocabulary that read badly on their own in a message.
TYPE_WORDS = {"file": "regular file"}

# plan()'s actions, as the result's ``changes`` name them.
CHANGE_ACTIONS = {"create": "created", "replace": "replaced", "chmod": "mode_changed"}


def describe(found):
    """Short text for an observed node: ``char 195:255 0666``, ``regular file``, ``missing``."""
    if found is None:
        return "missing"
    if found["type"] == "char":
        return "char %d:%d %04o" % (found["major"], found["minor"], found["mode"])
    if found["type"] == "block":
        return "block %d:%d" % (found["major"], found["minor"])
    return TYPE_WORDS.get(found["type"], found["type"])


def plan(wanted, found):
    """Compare ``wanted`` nodes with what exists.

    ``found`` maps a node name to ``None`` (absent) or what ``node_fs.NodeRoot.observe`` says:
    ``{"type": "char"|"block"|"file"|"directory"|"symlink"|"fifo"|"socket", "major", "minor", "mode"}``.
    Returns a list of ``{"name", "action": "create"|"replace"|"chmod"|"ok"|"refuse", "reason", "want",
    "found"}``.
    A symlink is left alone when it is one (udev and some runtimes link nodes), so is a directory:
    replacing either could destroy something we did not make.
    """
    steps = []
    for node in wanted:
        current = found.get(node["name"])
        want_text = "char %d:%d %04o" % (node["major"], node["minor"], node["mode"])
        step = {"name": node["name"], "want": want_text, "found": describe(current), "major": node["major"],
                "minor": node["minor"], "mode": node["mode"]}
        if current is None:
            step.update(action="create", reason="missing")
        elif current["type"] in ("directory", "symlink"):
            step.update(action="refuse", reason="is a %s, not a character device" % current["type"])
        elif current["type"] != "char":
            step.update(action="replace", reason="is a %s, not a character device" % describe(current))
        elif (current["major"], current["minor"]) != (node["major"], node["minor"]):
            step.update(action="replace", reason="is %d:%d, not %d:%d" % (
                current["major"], current["minor"], node["major"], node["minor"]))
        elif current["mode"] != node["mode"]:
            step.update(action="chmod", reason="mode %04o, not %04o" % (current["mode"], node["mode"]))
        else:
            step.update(action="ok", reason="")
        steps.append(step)
    return steps


# --- /dev/char links ------------------------------------------------------------------------
# systemd's udev makes /dev/char/<major>:<minor> for the devices it knows; the NVIDIA nodes made by
# nvidia-modprobe, a driver container or this collection are not among them. runc's systemd cgroup
# driver finds devices through these links: without them a container loses its GPUs after
# `systemctl daemon-reload` ("Failed to initialize NVML: Unknown Error"). NVIDIA's
# `nvidia-ctk system create-dev-char-symlinks` makes the same links.
CHAR_DIR = "/dev/char"
# The NVIDIA device nodes: <dev_root>/dev/nvidia*, and what is in these directories of it.
NVIDIA_NODE_DIRS = ("nvidia-caps", "nvidia-caps-imex-channels")
CHAR_LINK_ACTIONS = {"create": "created", "replace": "replaced"}


def char_link_target(dev_dir, name):
    """What ``/dev/char/<major>:<minor>`` points at for the node ``name`` under the host path
    ``dev_dir``: relative (``../nvidia0``) in the host's /dev, the node's host path elsewhere."""
    if dev_dir == "/dev":
        return "../" + name
    return dev_dir.rstrip("/") + "/" + name


def plan_char_links(nodes, dev_dir, found):
    """The ``/dev/char`` links the NVIDIA device ``nodes`` (``[{"name", "major", "minor"}]``, names
    relative to ``dev_dir``) need. ``found`` maps a link's name (``195:0``) to what
    ``node_fs.NodeRoot.observe`` says of it, or None. Returns ``[{"name", "path", "target",
    "action": "create"|"replace"|"ok"|"refuse", "reason"}]``, one per major:minor.

    A link to somewhere else is replaced (udev's own would point at the same node); anything that
    is not a link is left alone."""
    steps = []
    seen = set()
    for node in sorted(nodes, key=lambda n: (n["major"], n["minor"], n["name"])):
        name = "%d:%d" % (node["major"], node["minor"])
        if name in seen:
            continue
        seen.add(name)
        target = char_link_target(dev_dir, node["name"])
        current = found.get(name)
        step = {"name": name, "path": CHAR_DIR + "/" + name, "target": target}
        if current is None:
            step.update(action="create", reason="missing")
        elif current["type"] != "symlink":
            step.update(action="refuse", reason="is a %s, not a link" % TYPE_WORDS.get(current["type"], current["type"]))
        elif current.get("target") != target:
            step.update(action="replace", reason="points at %s, not %s" % (current.get("target"), target))
        else:
            step.update(action="ok", reason="")
        steps.append(step)
    return steps
