"""A stand-in for k3s/RKE2 writing their containerd config at start, for nodes without them.

What it does is what their sources say they do (docs/k3s-rke2.md): the config is their template
rendered, where ``config.toml.tmpl`` / ``config-v3.toml.tmpl`` (which may call the base template)
replaces their own; the ``nvidia`` runtimes are added for ``nvidia-container-runtime`` found in
``/usr/local/nvidia/toolkit`` or ``/usr/bin``; ``default-runtime`` from ``config.yaml`` and then
``config.yaml.d/*.yaml`` (a later file winning) becomes ``default_runtime_name``.

Their own template's output is stood in for by a real config they generated (``base``: one of
``../shared/realworld/containerd/01-05``), which already holds what they generated for the node
it came from.
"""

from __future__ import annotations

import os
import re
import sys

SEARCH_DIRS = ("usr/local/nvidia/toolkit", "usr/bin")
FOUND = {"nvidia": "nvidia-container-runtime", "nvidia-experimental": "nvidia-container-runtime-experimental"}
CRI = {1: "plugins.cri", 2: 'plugins."io.containerd.grpc.v1.cri"', 3: "plugins.'io.containerd.cri.v1.runtime'"}


def version_of(text):
    match = re.search(r"^version = (\d+)", text, re.M)
    return int(match.group(1)) if match else 1


def default_runtime(root, etc_dir):
    value = None
    files = [os.path.join(etc_dir, "config.yaml")]
    drop_ins = os.path.join(etc_dir, "config.yaml.d")
    if os.path.isdir(root + drop_ins):
        files += [os.path.join(drop_ins, n) for n in sorted(os.listdir(root + drop_ins)) if n.endswith((".yaml", ".yml"))]
    for path in files:
        if os.path.isfile(root + path):
            with open(root + path, encoding="utf-8") as handle:
                for line in handle:
                    match = re.match(r"^default-runtime:\s*(\S+)", line)
                    if match:
                        value = match.group(1).strip("\"'")
    return value


def render(root, distribution, base):
    """The config.toml k3s/RKE2 would write at start on the node under ``root``."""
    containerd_dir = "/var/lib/rancher/%s/agent/etc/containerd" % distribution
    version = version_of(base)
    systemd = "true" if re.search(r"SystemdCgroup = true", base) else "false"
    table = CRI[version] + ".containerd"
    quote = "'" if version >= 3 else '"'
    text = base
    for name, binary in FOUND.items():
        if re.search(r"runtimes\.%s%s%s\]" % (quote, re.escape(name), quote), text) or \
                re.search(r"runtimes\.%s\]" % re.escape(name), text):
            continue
        for directory in SEARCH_DIRS:
            if os.path.isfile(os.path.join(root, directory, binary)):
                text += ('\n[%s.runtimes.%s%s%s]\n  runtime_type = "io.containerd.runc.v2"\n'
                         '[%s.runtimes.%s%s%s.options]\n  BinaryName = "/%s/%s"\n  SystemdCgroup = %s\n'
                         % (table, quote, name, quote, table, quote, name, quote, directory, binary, systemd))
                break
    default = default_runtime(root, "/etc/rancher/%s" % distribution)
    if default:
        header = "[%s]\n" % table
        if header in text:
            text = text.replace(header, header + '  default_runtime_name = "%s"\n' % default, 1)
        else:
            text += "\n%s  default_runtime_name = \"%s\"\n" % (header, default)
    template = os.path.join(root + containerd_dir, "config-v3.toml.tmpl" if version >= 3 else "config.toml.tmpl")
    if os.path.isfile(template):
        with open(template, encoding="utf-8") as handle:
            tmpl = handle.read()
        tmpl = re.sub(r"\{\{- /\*.*?\*/ -\}\}\n?", "", tmpl, flags=re.S)
        tmpl = tmpl.replace("{{ .SystemdCgroup }}", systemd)
        if '{{ template "base" . }}' not in tmpl or "{{" in tmpl.replace('{{ template "base" . }}', ""):
            raise ValueError("the stand-in renders only templates on the base template: %s" % template)
        text = tmpl.replace('{{ template "base" . }}', text)
    return text


def start(root, distribution, base_path):
    """Write the config as a start would."""
    with open(base_path, encoding="utf-8") as handle:
        base = handle.read()
    config = root + "/var/lib/rancher/%s/agent/etc/containerd/config.toml" % distribution
    os.makedirs(os.path.dirname(config), exist_ok=True)
    text = render(root, distribution, base)
    with open(config + ".new", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(config + ".new", config)


if __name__ == "__main__":
    start(*sys.argv[1:4])
