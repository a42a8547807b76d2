# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the /proc files the NVIDIA kernel modules publish. Pure: text in, data out."""

from __future__ import annotations

import re

_VERSION_RE = re.compile(r"^NVRM version:.*?\s(\d+\.\d+(?:\.\d+)?)\s", re.MULTILINE)


class ProcFormatError(ValueError):
    """A /proc file does not have the expected format."""


def parse_driver_version(text):
    """Driver version from ``/proc/driver/nvidia/version`` (``NVRM version: ... 535.104.12 ...``)."""
    match = _VERSION_RE.search(text + " ")
    if not match:
        raise ProcFormatError("no 'NVRM version:' line with a version number")
    return match.group(1)


def parse_key_values(text):
    """``Key: value`` lines, as in ``/proc/driver/nvidia/gpus/<bus>/information``."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            values[key.strip()] = value.strip()
    return values


def parse_gpu_information(text, bus_dir_name=None):
    """One GPU from its ``information`` file: ``{uuid, pci_bus_id, minor, model}``.

    Raises ProcFormatError naming the missing or garbled field.
    """
    values = parse_key_values(text)
    uuid = values.get("GPU UUID", "")
    if not uuid.startswith(("GPU-", "MIG-")):
        raise ProcFormatError("missing or malformed 'GPU UUID' (%r)" % uuid)
    minor_text = values.get("Device Minor", "")
    if not minor_text.isdigit():
        raise ProcFormatError("missing or malformed 'Device Minor' (%r)" % minor_text)
    bus = values.get("Bus Location") or bus_dir_name
    if not bus:
        raise ProcFormatError("missing 'Bus Location'")
    return {
        "uuid": uuid,
        "pci_bus_id": bus.lower(),
        "minor": int(minor_text),
        "model": values.get("Model", ""),
    }


def parse_devices(text):
    """``/proc/devices``: ``{"character": {name: major}, "block": {name: major}}``."""
    tables = {"character": {}, "block": {}}
    current = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        lowered = stripped.lower()
        if lowered.startswith("character devices"):
            current = tables["character"]
            continue
        if lowered.startswith("block devices"):
            current = tables["block"]
            continue
        parts = stripped.split(None, 1)
        if current is None or len(parts) != 2 or not parts[0].isdigit():
            raise ProcFormatError("unexpected line in /proc/devices: %r" % line)
        current.setdefault(parts[1], int(parts[0]))
    return tables


def parse_modules(text):
    """Names of the loaded kernel modules in ``/proc/modules``."""
    return {line.split(None, 1)[0] for line in text.splitlines() if line.strip()}


def nvidia_major(devices):
    """The NVIDIA character major: ``nvidia-frontend`` (drivers before 550) or ``nvidia``."""
    chars = devices.get("character", {})
    for name in ("nvidia-frontend", "nvidia"):
        if name in chars:
            return chars[name]
    return None
