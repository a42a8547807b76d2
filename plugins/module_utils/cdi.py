# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a CDI spec for the NVIDIA driver contains, from discovery's facts. Pure functions only.

The pipeline has the shape of the upstream toolkit's: facts (``discovery.discover_node``) →
container edits (device nodes, mounts, hooks, env) → a spec dict (devices by naming strategy,
spec-level edits, the lowest ``cdiVersion`` the content needs) → text (YAML or JSON).
Every path in the spec is a host path or a container path; ``host_root`` never appears.
"""

from __future__ import annotations

import functools
import json
import posixpath
import re

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_model, yaml_emit

MODES = ("management", "gpu")
NAME_STRATEGIES = ("index", "uuid", "type-index")
HOOKS = ("create-symlinks", "enable-cuda-compat", "update-ldcache")
DEFAULT_HOOK_PATH = "/usr/local/nvidia/toolkit/nvidia-cdi-hook"
DEFAULT_VENDOR = {"management": "management.nvidia.com", "gpu": "nvidia.com"}
DEFAULT_CLASS = "gpu"
SPEC_DIRS = ("/etc/cdi", "/var/run/cdi", "/run/cdi")

MOUNT_OPTIONS = ["ro", "nosuid", "nodev", "rbind", "rprivate"]
SOCKET_MOUNT_OPTIONS = ["nosuid", "nodev", "rbind", "rprivate", "noexec"]
DEVICE_PERMISSIONS = "rw"
ENV = ["NVIDIA_VISIBLE_DEVICES=void"]
# Device nodes that belong to no single GPU: in every GPU's container (spec-level edits).
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
EXCLUDED_NODE_RE = re.compile(r"^/dev/(nvidia-fs|nvidia-nvswitch|nvidia-nvlink)")
GPU_NODE_RE = re.compile(r"^/dev/nvidia(\d+)$")
MIG_ACCESS_RE = re.compile(r"^gpu(\d+)/gi(\d+)/access$")
MIG_CI_ACCESS_RE = re.compile(r"^gpu(\d+)/gi(\d+)/ci(\d+)/access$")
HEADER_VERSION_RE = re.compile(r"^# driver_version: (\S+)$", re.M)
COMPAT_ARG_RE = re.compile(r"--host-driver-version=(\S+)")
KIND_RE = re.compile(r"""(?:^|[{,])\s*["']?kind["']?\s*:\s*["']?([^"'\s,}]+)""", re.M)
SPEC_SUFFIXES = (".yaml", ".json")
# Files kept directly under a driver root that is not a full filesystem (COS keeps vulkan/, share/
# and firmware/ there) go where their readers look inside containers.
ROOTED_PREFIXES = {"vulkan/": "/etc/", "glvnd/": "/usr/share/", "egl/": "/usr/share/", "share/": "/usr/",
                   "firmware/": "/lib/"}


# The same few hundred paths are mapped several times per spec (mounts, links, folders).
_container_path = functools.lru_cache(maxsize=4096)(node_model.container_path)


class CdiError(Exception):
    """The facts or options cannot make a valid spec; the message says what to set.

    ``details``: data for the module's result (e.g. the paths searched), kept out of the
    message so that it stays short.
    """

    def __init__(self, message, **details):
        super().__init__(message)
        self.details = details


# --- discover: which device nodes -----------------------------------------------------------

def spec_device_nodes(device_nodes):
    """The NVIDIA device nodes a spec may hand out (no nvidia-fs, nvswitch or nvlink nodes)."""
    return [node for node in device_nodes if not EXCLUDED_NODE_RE.match(node["path"])]


# --- edits ----------------------------------------------------------------------------------

def device_node_edit(node):
    """One CDI ``deviceNodes`` entry from a discovered device node."""
    edit = {"path": node["path"]}
    host_path = node.get("host_path") or node["path"]
    if host_path != node["path"]:
        edit["hostPath"] = host_path
    edit["type"] = "c"
    edit["major"] = node["major"]
    edit["minor"] = node["minor"]
    edit["fileMode"] = int(node.get("mode") or "0666", 8)
    edit["permissions"] = DEVICE_PERMISSIONS
    return edit


def mount_edit(host_path, container, options=None):
    return {"hostPath": host_path, "containerPath": container, "options": list(options or MOUNT_OPTIONS)}


def data_container_path(host_path, driver_root, container_driver_root=None):
    """Container path of a config or firmware file: where its readers look for it.

    ``<driver_root>/vulkan/icd.d/x.json`` (COS) goes to ``/etc/vulkan/icd.d/x.json`` and
    ``<driver_root>/firmware/nvidia/<ver>/gsp.bin`` to ``/lib/firmware/nvidia/<ver>/gsp.bin``;
    anything else follows :func:`node_model.container_path`.
    """
    if node_model.normalize_host_path(driver_root) != "/" and node_model.is_under(host_path, driver_root):
        relative = _container_path(host_path, driver_root).lstrip("/")
        for prefix, base in ROOTED_PREFIXES.items():
            if relative.startswith(prefix):
                return base + relative
    return _container_path(host_path, driver_root, container_driver_root)


def mount_edits(facts, container_driver_root=None):
    """Mounts of every driver library, binary, firmware file, config file and IPC socket."""
    driver_root = facts["driver_root"]

    def cpath(path):
        return _container_path(path, driver_root, container_driver_root)

    mounts = [mount_edit(lib["path"], cpath(lib["path"])) for lib in facts["libraries"]]
    mounts += [mount_edit(path, cpath(path)) for path in facts.get("binaries", ())]
    mounts += [mount_edit(path, data_container_path(path, driver_root, container_driver_root))
               for path in list(facts.get("firmware", ())) + list(facts.get("config_files", ()))]
    # Sockets live where the daemons put them: strip a driver container's root, never re-root.
    mounts += [mount_edit(path, _container_path(path, driver_root), SOCKET_MOUNT_OPTIONS)
               for path in facts.get("ipc_sockets", ())]
    return mounts


def library_links(libraries, driver_root, container_driver_root=None):
    """``target::link`` pairs for create-symlinks: SONAME links, libcuda.so, libGLX_indirect.so.0."""
    links = []
    for lib in libraries:
        container = _container_path(lib["path"], driver_root, container_driver_root)
        directory, name = posixpath.split(container)
        soname = lib.get("soname")
        if soname and soname != name:
            links.append("%s::%s" % (name, posixpath.join(directory, soname)))
        if name.startswith("libcuda.so."):
            links.append("%s::%s" % (soname or name, posixpath.join(directory, "libcuda.so")))
        if name.startswith("libGLX_nvidia.so."):
            links.append("%s::%s" % (soname or name, posixpath.join(directory, "libGLX_indirect.so.0")))
    return links


def library_folders(libraries, driver_root, container_driver_root=None):
    """Container directories holding driver libraries, sorted, for update-ldcache."""
    folders = {posixpath.dirname(_container_path(lib["path"], driver_root, container_driver_root))
               for lib in libraries}
    return sorted(folders)


def hook_args_prefix(hook_path):
    """``[nvidia-cdi-hook]``, or ``[nvidia-ctk, hook]`` when the hook binary is nvidia-ctk."""
    if posixpath.basename(hook_path) == "nvidia-ctk":
        return ["nvidia-ctk", "hook"]
    return [posixpath.basename(hook_path) or "nvidia-cdi-hook"]


def hook_edits(facts, hook_path=DEFAULT_HOOK_PATH, container_driver_root=None, ldconfig_path=None,
               disable_hooks=()):
    """The createContainer hooks: create-symlinks, enable-cuda-compat, update-ldcache (in that order:
    the compat hook adds a folder the ldcache update must see)."""
    disabled = set(disable_hooks or ())
    if "all" in disabled:
        return []
    prefix = hook_args_prefix(hook_path)
    driver_root = facts["driver_root"]
    libraries = facts["libraries"]
    hooks = []

    def hook(args):
        hooks.append({"hookName": "createContainer", "path": hook_path, "args": prefix + args})

    if "create-symlinks" not in disabled:
        links = library_links(libraries, driver_root, container_driver_root)
        if links:
            args = ["create-symlinks"]
            for link in links:
                args += ["--link", link]
            hook(args)
    if "enable-cuda-compat" not in disabled:
        hook(["enable-cuda-compat", "--host-driver-version=%s" % facts["driver_version"]])
    if "update-ldcache" not in disabled:
        args = ["update-ldcache"]
        if ldconfig_path:
            args += ["--ldconfig-path", ldconfig_path]
        for folder in library_folders(libraries, driver_root, container_driver_root):
            args += ["--folder", folder]
        hook(args)
    return hooks


def common_edits(facts, hook_path=DEFAULT_HOOK_PATH, container_driver_root=None, ldconfig_path=None,
                 disable_hooks=(), device_nodes=()):
    """Spec-level container edits shared by every device of the spec."""
    edits = {"env": list(ENV)}
    if device_nodes:
        edits["deviceNodes"] = [device_node_edit(node) for node in device_nodes]
    hooks = hook_edits(facts, hook_path, container_driver_root, ldconfig_path, disable_hooks)
    if hooks:
        edits["hooks"] = hooks
    mounts = mount_edits(facts, container_driver_root)
    if mounts:
        edits["mounts"] = mounts
    return edits


# --- devices ----------------------------------------------------------------------------------

def gpu_names(gpu, strategies):
    """The device names of one GPU under each naming strategy, without duplicates."""
    names = []
    for strategy in strategies:
        if strategy == "index":
            name = str(gpu["index"])
        elif strategy == "uuid":
            name = gpu["uuid"]
        elif strategy == "type-index":
            name = "gpu%d" % gpu["index"]
        else:
            raise CdiError("unknown device_name_strategy %r; choose from %s" % (strategy, ", ".join(NAME_STRATEGIES)))
        if name not in names:
            names.append(name)
    return names


def select_gpus(gpus, wanted):
    """The GPUs named in ``wanted`` (index, ``gpuN`` or UUID), in node order; all when empty."""
    if not wanted:
        return list(gpus)
    by_name = {}
    for gpu in gpus:
        for name in (str(gpu["index"]), "gpu%d" % gpu["index"], gpu["uuid"], gpu["uuid"].lower()):
            by_name[name] = gpu
    unknown = [name for name in wanted if str(name) not in by_name and str(name).lower() not in by_name]
    if unknown:
        known = ", ".join("%d (%s)" % (gpu["index"], gpu["uuid"]) for gpu in gpus) or "none"
        raise CdiError("unknown GPU in devices: %s. The node's GPUs are: %s" % (", ".join(map(str, unknown)), known))
    chosen = {id(by_name.get(str(name), by_name.get(str(name).lower()))) for name in wanted}
    return [gpu for gpu in gpus if id(gpu) in chosen]


def mig_devices(gpu, nodes_by_minor, mig_minors, strategies):
    """``[(names, [device nodes])]`` for the MIG instances of ``gpu`` that have capability nodes.

    MIG devices are named ``<gpu>:<gi>`` (``index``) or ``mig<gpu>:<gi>`` (``type-index``); they have
    no UUID strategy, since MIG UUIDs are known only to NVML. A GPU instance's devices are its
    access node and the access node of its first compute instance.
    """
    instances = {}
    for name, minor in mig_minors.items():
        match = MIG_ACCESS_RE.match(name)
        if match and int(match.group(1)) == gpu["minor"]:
            instances.setdefault(int(match.group(2)), {})["gi"] = minor
            continue
        match = MIG_CI_ACCESS_RE.match(name)
        if match and int(match.group(1)) == gpu["minor"]:
            entry = instances.setdefault(int(match.group(2)), {})
            entry.setdefault("ci", {})[int(match.group(3))] = minor
    devices = []
    for gi in sorted(instances):
        entry = instances[gi]
        if "gi" not in entry or not entry.get("ci"):
            continue
        ci_minor = entry["ci"][min(entry["ci"])]
        caps = [nodes_by_minor.get(entry["gi"]), nodes_by_minor.get(ci_minor)]
        if None in caps:
            continue
        names = []
        for strategy in strategies:
            if strategy == "index":
                names.append("%d:%d" % (gpu["index"], gi))
            elif strategy == "type-index":
                names.append("mig%d:%d" % (gpu["index"], gi))
        if names:
            devices.append((names, caps))
    return devices


def _device(name, nodes):
    check_name("device name", name)
    return {"name": name, "containerEdits": {"deviceNodes": [device_node_edit(node) for node in nodes]}}


def gpu_mode_devices(facts, nodes, strategies, wanted=None, all_device=True):
    """(devices, control nodes) for ``mode: gpu``."""
    gpus = facts.get("gpus") or []
    if not gpus:
        raise CdiError(
            "no GPUs found in /proc/driver/nvidia/gpus: is the nvidia kernel module loaded? "
            "mode gpu needs the GPUs; mode management needs only the device nodes"
        )
    selected = select_gpus(gpus, wanted)
    by_path = {node["path"]: node for node in nodes}
    caps_by_minor = {node["minor"]: node for node in nodes if node["path"].startswith("/dev/nvidia-caps/")}
    devices = []
    every = []
    for gpu in selected:
        node = by_path.get("/dev/nvidia%d" % gpu["minor"])
        if node is None:
            raise CdiError(
                "GPU %d (%s) has no device node /dev/nvidia%d under dev_root %s"
                % (gpu["index"], gpu["uuid"], gpu["minor"], facts["dev_root"])
            )
        for name in gpu_names(gpu, strategies):
            devices.append(_device(name, [node]))
        every.append(node)
        for names, caps in mig_devices(gpu, caps_by_minor, facts.get("mig_minors") or {}, strategies):
            for name in names:
                devices.append(_device(name, [node] + caps))
            every.extend(cap for cap in caps if cap not in every)
    if all_device:
        devices.append(_device("all", every))
    control = [by_path[path] for path in CONTROL_NODES if path in by_path]
    return devices, control


# --- spec -----------------------------------------------------------------------------------

def _name_error(what, name, first, inner, min_length):
    """Why ``name`` is not a valid CDI vendor, class or device name (None when it is).

    CDI's rules: a first character from ``first``, inner characters alphanumeric or from ``inner``,
    an alphanumeric last character; vendors and classes of two characters at least. A consumer skips a spec with a bad name, so podman and
    containerd then only say "unresolvable CDI devices".
    """
    if not name:
        return "empty %s" % what
    if len(name) < min_length:
        # CDI 0.5's parser indexes name[1:len-1]: a one-character vendor or class crashes consumers.
        return "%s %r is too short: at least %d characters" % (what, name, min_length)
    if not first(name[0]):
        return "%s %r must start with %s" % (what, name, "a letter" if first is _is_letter else "a letter or digit")
    bad = sorted({c for c in name[1:-1] if not (_is_alnum(c) or c in inner)})
    if bad:
        return "%s %r holds %s; allowed are letters, digits and %s" % (
            what, name, ", ".join(repr(c) for c in bad), " ".join(inner))
    if not _is_alnum(name[-1]):
        return "%s %r must end with a letter or digit" % (what, name)
    return None


def _is_letter(char):
    return "a" <= char <= "z" or "A" <= char <= "Z"


def _is_alnum(char):
    return _is_letter(char) or "0" <= char <= "9"


def check_name(what, name):
    """Raise :class:`CdiError` unless ``name`` is a valid CDI ``vendor``, ``class`` or ``device`` name.

    Classes may hold dots since CDI 0.6.0 (:func:`minimum_version` then says 0.6.0).
    """
    rules = {"vendor": (_is_letter, "_-.", 2), "class": (_is_letter, "_-.", 2), "device name": (_is_alnum, "_-.:", 1)}
    first, inner, min_length = rules[what]
    error = _name_error(what, name, first, inner, min_length)
    if error:
        raise CdiError("invalid CDI %s" % error)


def kind(mode, vendor=None, cls=None):
    if mode not in MODES:
        raise CdiError("unknown mode %r; choose from %s" % (mode, ", ".join(MODES)))
    vendor = DEFAULT_VENDOR[mode] if vendor is None else vendor
    cls = DEFAULT_CLASS if cls is None else cls
    check_name("vendor", vendor)
    check_name("class", cls)
    return "%s/%s" % (vendor, cls)


def default_path(mode, vendor=None, cls=None):
    """``/var/run/cdi/management.nvidia.com-gpu.yaml`` (management), ``/etc/cdi/nvidia.yaml`` (gpu)."""
    spec_kind = kind(mode, vendor, cls)
    if mode == "gpu":
        if spec_kind == "nvidia.com/gpu":
            return "/etc/cdi/nvidia.yaml"
        return "/etc/cdi/%s.yaml" % spec_kind.replace("/", "-")
    return "/var/run/cdi/%s.yaml" % spec_kind.replace("/", "-")


def format_from_path(path):
    return "json" if path.lower().endswith(".json") else "yaml"


def in_spec_dir(path):
    """True when ``path`` is in a directory CDI consumers read by default."""
    directory = posixpath.dirname(node_model.normalize_host_path(path))
    return directory in SPEC_DIRS


def _all_edits(spec):
    yield spec.get("containerEdits") or {}
    for device in spec.get("devices") or ():
        yield device.get("containerEdits") or {}


def minimum_version(spec):
    """The lowest ``cdiVersion`` whose features cover the spec's content."""
    if spec.get("annotations") or any(d.get("annotations") for d in spec.get("devices") or ()):
        return "0.6.0"
    if "." in spec.get("kind", "").partition("/")[2]:
        return "0.6.0"
    for device in spec.get("devices") or ():
        if device.get("name") and not device["name"][0].isalpha():
            return "0.5.0"
    edits = list(_all_edits(spec))
    if any("hostPath" in node for e in edits for node in e.get("deviceNodes") or ()):
        return "0.5.0"
    if any("type" in mount for e in edits for mount in e.get("mounts") or ()):
        return "0.4.0"
    return "0.3.0"


def check_facts(facts, nodes):
    """Fail early, with the paths to look at, when the node cannot make a useful spec.

    A spec for user-space libraries of another version than the loaded kernel module is refused:
    every container given it would fail (CUDA and NVML refuse a driver/library mismatch). Without
    a loaded kernel module there is nothing to compare, and no device nodes either.
    """
    dev_root = facts["dev_root"]
    if not nodes:
        looked = ", ".join(node_model.join_host(dev_root, pattern) for pattern in node_model.DEVICE_GLOBS)
        if facts.get("kernel_module_loaded") is False:
            raise CdiError(
                "no NVIDIA device nodes under dev_root %s: the nvidia kernel module is not loaded (no "
                "/proc/driver/nvidia and no nvidia in /proc/modules). Load it (modprobe nvidia; on "
                "Container-Optimized OS the GPU driver installer loads it), then run again" % dev_root,
                looked_for=looked.split(", "))
        if node_model.normalize_host_path(dev_root) != "/":
            hint = ("On Container-Optimized OS and most hosts the device nodes are in the host's /dev, not under "
                    "driver_root: set dev_root: / (or create the control nodes with the device_nodes module)")
        else:
            hint = ("The kernel module is loaded but did not create them: create the control nodes with the "
                    "device_nodes module, and the GPUs' with nvidia-modprobe or nvidia-smi")
        raise CdiError(
            "no NVIDIA device nodes under dev_root %s (dev_root came from: %s): looked for %s. %s"
            % (dev_root, facts.get("dev_root_source", "the dev_root option"), looked, hint),
            looked_for=looked.split(", "))
    library_version = facts.get("library_version")
    if library_version and library_version != facts["driver_version"]:
        raise CdiError(node_model.version_mismatch_message(facts["driver_version"], [library_version],
                                                           facts["driver_root"]))
    if not any(posixpath.basename(lib["path"]).startswith("libcuda.so.") for lib in facts["libraries"]):
        searched = [posixpath.join(node_model.join_host(facts["driver_root"], rel), "libcuda.so.*")
                    for rel in facts.get("library_search_paths") or ()]
        searched.append(node_model.join_host(facts["driver_root"], "etc/ld.so.cache"))
        raise CdiError(
            "no libcuda.so.%s under driver_root %s (the paths searched are in the result's searched). Set "
            "driver_root to the host directory holding the driver (on GKE's Container-Optimized OS "
            "/home/kubernetes/bin/nvidia), or library_search_paths" % (facts["driver_version"], facts["driver_root"]),
            searched=searched)


def build_spec(facts, mode="management", device_name_strategy=("index", "uuid"), vendor=None, cls=None,
               devices=None, all_device=True, hook_path=DEFAULT_HOOK_PATH, container_driver_root=None,
               ldconfig_path=None, disable_hooks=()):
    """The CDI spec (a dict in CDI's key order) for the node described by ``facts``."""
    spec_kind = kind(mode, vendor, cls)
    nodes = spec_device_nodes(facts.get("device_nodes") or [])
    check_facts(facts, nodes)
    if mode == "management":
        if devices:
            raise CdiError("devices selects GPUs for mode gpu; mode management has one device, all")
        device_list = [_device("all", nodes)]
        common_nodes = []
    else:
        strategies = list(device_name_strategy or ())
        if not strategies:
            raise CdiError("device_name_strategy must name at least one of %s" % ", ".join(NAME_STRATEGIES))
        device_list, common_nodes = gpu_mode_devices(facts, nodes, strategies, devices, all_device)
    spec = {
        "cdiVersion": "",
        "kind": spec_kind,
        "devices": device_list,
        "containerEdits": common_edits(facts, hook_path, container_driver_root, ldconfig_path, disable_hooks,
                                       common_nodes),
    }
    spec["cdiVersion"] = minimum_version(spec)
    return spec


def qualified_names(spec):
    return ["%s=%s" % (spec["kind"], device["name"]) for device in spec["devices"]]


# --- text -----------------------------------------------------------------------------------

def header(facts):
    """The YAML comment that records what the spec was built from."""
    return (
        "# Generated by gpu_node.container_toolkit.cdi_spec; changes are overwritten.\n"
        "# driver_version: %s\n"
        "# driver_root: %s\n"
        "# dev_root: %s\n" % (facts["driver_version"], facts["driver_root"], facts["dev_root"])
    )


def render(spec, fmt="yaml", facts=None):
    """The spec's bytes-to-be as text; YAML starts with the :func:`header` when ``facts`` are given."""
    if fmt == "json":
        return json.dumps(spec, indent=2) + "\n"
    if fmt != "yaml":
        raise CdiError("unknown format %r; choose yaml or json" % fmt)
    return (header(facts) if facts else "") + yaml_emit.dump(spec)


def declared_kind(text):
    """The ``kind`` a spec file's text declares (YAML or JSON), or None."""
    match = KIND_RE.search(text or "")
    return match.group(1) if match else None


def same_kind_warnings(path, spec_kind, others):
    """Warnings for the other spec files (``{host path: text}``) that declare ``spec_kind`` too.

    CDI consumers merge every spec of the consumer's directories: a device name defined in two files
    of one directory is dropped as a conflict, and between directories ``/var/run/cdi`` wins over
    ``/etc/cdi``. Either way the new spec may not be the one containers get.
    """
    return [
        "%s also declares kind %s: container runtimes drop a device defined in two specs of one "
        "directory and prefer /var/run/cdi over /etc/cdi, so %s may not be used; remove one of them "
        "(state: absent)" % (other, spec_kind, path)
        for other in sorted(others)
        if other != path and declared_kind(others[other]) == spec_kind
    ]


def recorded_driver_version(text):
    """The driver version an existing spec was built from (its header, else its compat hook)."""
    if not text:
        return None
    match = HEADER_VERSION_RE.search(text)
    if match:
        return match.group(1)
    match = COMPAT_ARG_RE.search(text)
    if match:
        return match.group(1).strip('",')
    return None
