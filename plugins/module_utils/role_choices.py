# -*- coding: utf-8 -*-
# Copyright: contributors to gpu_node.container_toolkit
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the gpu_node role decides from the look at the node, before it changes anything.

Pure functions, no I/O: the role's ``platform.yml`` hands them the look (``node_info``'s result)
and its settings through the ``gpu_node_choices`` filter, keeps the result as a fact, and fails
the host with :func:`gpu_node_choices`' ``problems`` before the first write. The engine roles'
own preflight asks :func:`restart_problem` the same question for one engine.
"""

from __future__ import annotations

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_record

# os-release ID (or Ansible's distribution name, lower-cased) -> the platform whose vars apply.
PLATFORM_BY_OS_ID = {
    "cos": "cos", "debian": "debian", "ubuntu": "ubuntu", "flatcar": "flatcar",
    "rhel": "rhel", "centos": "rhel", "rocky": "rhel", "almalinux": "rhel", "ol": "rhel", "fedora": "rhel",
    "redhat": "rhel",
}
PLATFORMS = ("cos", "debian", "ubuntu", "rhel", "flatcar")
ENGINES = ("containerd", "docker", "crio")
# How messages name each engine's daemon.
DAEMONS = {"containerd": "containerd", "docker": "dockerd", "crio": "CRI-O"}

_TRUE = ("yes", "on", "1", "true")


def truthy(value):
    """A setting's truth as Jinja's ``bool`` filter reads it: ``yes``, ``on``, ``1``, ``true``..."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE
    return bool(value)


def restart_problem(engine, mode, command="", systemd_running=False, variables="", host="the node"):
    """Why ``engine`` cannot be restarted the way ``mode`` says, as the sentence that fails the host
    (naming the variables under the prefix ``variables``); empty when it can."""
    daemon = DAEMONS.get(engine, engine)
    if mode == "systemd" and not systemd_running:
        return ("%(v)srestart_mode is 'systemd' (the default), but systemd is not PID 1 on %(host)s (no "
                "/run/systemd/system), so restarting %(daemon)s after its configuration changed would fail "
                "half-way. Nothing was changed. Set %(v)srestart_mode to 'command' together with "
                "%(v)srestart_command (a shell command that restarts %(daemon)s on this node), or to 'none' to "
                "only report that %(daemon)s needs a restart." % {"v": variables, "host": host, "daemon": daemon})
    if mode == "command" and not (command or "").strip():
        return ("%(v)srestart_mode is 'command' but %(v)srestart_command is empty. Nothing was changed. Set "
                "%(v)srestart_command to a shell command that restarts %(daemon)s on this node, or set "
                "%(v)srestart_mode to 'none'." % {"v": variables, "daemon": daemon})
    return ""


def os_id_of(look, distribution=""):
    """The node's os-release ID, or Ansible's distribution name (lower-cased) where the look found none."""
    return (look.get("os_release_id") or (distribution or "").lower()).strip()


def platform_of(look, setting="auto", distribution=""):
    """The platform whose defaults apply: ``setting`` unless ``auto``, else the one of the node's
    os-release ID; empty when unknown."""
    if setting != "auto":
        return setting
    return PLATFORM_BY_OS_ID.get(os_id_of(look, distribution), "")


def engines_of(look, setting="auto"):
    """The engines the runtimes are registered in: ``setting`` (a name or a list), or with ``auto``
    those the look found (k3s and RKE2 count as containerd), containerd when it found none."""
    if setting != "auto":
        return [setting] if isinstance(setting, str) else list(setting)
    found = ["containerd"] if isinstance(look.get("kubernetes_distribution"), dict) else []
    for engine in look.get("container_engines") or {}:
        if engine not in found:
            found.append(engine)
    return found or ["containerd"]


def variable_problems(unknown, host_root, playbook_dir=""):
    """What the gpu_node role says before its look about its own variables: the ``unknown`` ones
    (``unknown_variables``' result, names with their closest known one) and a relative ``host_root``."""
    problems = []
    if unknown:
        problems.append("Unknown variables for the gpu_node role: %s. A misspelled setting would be ignored. Correct the "
                        "name, or, for a variable of your own under this prefix, add it to gpu_node_variables_allowed."
                        % ", ".join(unknown))
    if not str(host_root).startswith("/"):
        problems.append("gpu_node_host_root '%s' is a relative path, which the node's modules would read from their own "
                        "working directory. Give the absolute path of the node's / as this machine sees it ('/' for the "
                        "machine itself; for a simulated node next to the playbook, '%s/%s')."
                        % (host_root, playbook_dir, host_root))
    return problems


def gpu_node_choices(look, settings, host="the node", distribution=""):
    """The role's choices for one node, from the look and the role's ``settings``.

    ``settings`` holds the role's variables without their ``gpu_node_`` prefix: ``platform``,
    ``container_engines``, ``state``, ``cdi_enabled``, ``cdi_refresh``, ``dev_char_links``,
    ``driver_not_loaded`` and ``<engine>_restart_mode`` / ``<engine>_restart_command`` for each engine.

    Returns:
    - ``platform`` and ``engines``;
    - ``cdi_refresh``: whether the CDI specs are regenerated without a controller (at boot and
      after a driver upgrade), and ``cdi_refresh_units``: whether by systemd units (everywhere
      but COS, whose ``/etc`` is a tmpfs: its reapply script runs the refresh);
    - ``kept_configs``: the engines whose configuration is kept across reboots (COS, where GKE
      writes containerd's and Docker's again at boot);
    - ``dev_char_links``: whether ``/dev/char`` links are made (where systemd runs, unless set);
    - ``device_nodes_in_place``: the look found every control device node, and link, in place;
    - ``left_to_boot``: the driver is not loaded and ``driver_not_loaded=provision``, so device
      nodes and CDI spec come at boot;
    - ``problems``: each a sentence naming the setting to change; the run goes on only without any;
    - ``in_place``: the node is as the last full run with the same inputs left it (``node_record``),
      so the steps would change nothing and are skipped; and ``record``: this run records the node
      at its end. Both need ``inputs_digest`` (empty: the inputs cannot be told), ``state=present``,
      ``toolkit_install_method=files`` (packages come from outside the run's inputs) and not
      ``verifying``; ``record`` needs ``full_run`` too (every step selected, not check mode);
      ``inputs_digest``, the one to record (empty where neither applies).
    """
    look = look or {}
    platform = platform_of(look, settings.get("platform", "auto"), distribution)
    engines = engines_of(look, settings.get("container_engines", "auto"))
    systemd_running = truthy(look.get("systemd_running", False))
    cdi_enabled = truthy(settings.get("cdi_enabled", True))
    refresh = settings.get("cdi_refresh", "auto")
    cdi_refresh = cdi_enabled and ((platform == "cos" or systemd_running) if str(refresh) == "auto" else truthy(refresh))
    driver_unloaded = (settings.get("state", "present") == "present" and cdi_enabled
                       and not truthy(look.get("kernel_module_loaded", True)))
    not_loaded = settings.get("driver_not_loaded", "fail")

    problems = []
    if platform not in PLATFORMS:
        problems.append("Cannot tell this node's platform (os-release ID '%s' under %s); set gpu_node_platform to one "
                        "of %s." % (os_id_of(look, distribution), settings.get("host_root", "/"), ", ".join(PLATFORMS)))
    unknown = [engine for engine in engines if engine not in ENGINES]
    if unknown:
        problems.append("gpu_node_container_engines names '%s', which is not one of %s."
                        % ("', '".join(unknown), ", ".join(ENGINES)))
    for engine in ENGINES:
        if engine in engines:
            problem = restart_problem(engine, settings.get(engine + "_restart_mode", "systemd"),
                                      settings.get(engine + "_restart_command", ""), systemd_running,
                                      "gpu_node_%s_" % engine, host)
            if problem:
                problems.append(problem)
    if driver_unloaded and not_loaded == "fail":
        problems.append(
            "The NVIDIA kernel module is not loaded on this node (driver %s is on disk), so there are no device "
            "numbers for its device nodes and CDI spec. Load the driver (modprobe nvidia) and run again; or, for a "
            "machine image being built, set gpu_node_driver_not_loaded=provision to install the toolkit and "
            "configure the engines now and leave the device nodes and the CDI spec to the boot."
            % look.get("driver_version", "?"))
    elif driver_unloaded and not cdi_refresh:
        problems.append(
            "gpu_node_driver_not_loaded=provision leaves this node's CDI spec to the boot-time refresh, but "
            "gpu_node_cdi_refresh is off here (%s): turn it on, or load the driver and run again." % refresh)
    char_links = settings.get("dev_char_links", "auto")
    dev_char_links = systemd_running if str(char_links) == "auto" else truthy(char_links)
    # None where the look could not tell: device_nodes then runs and looks itself.
    missing = look.get("device_node_changes")
    inputs = settings.get("inputs_digest") or ""
    recordable = bool(inputs and settings.get("state", "present") == "present" and not problems
                      and settings.get("toolkit_install_method", "files") == "files"
                      and not truthy(settings.get("verifying", False)))
    return {
        "platform": platform,
        "engines": engines,
        "cdi_refresh": cdi_refresh,
        "cdi_refresh_units": cdi_refresh and platform != "cos",
        "kept_configs": [engine for engine in engines if platform == "cos" and engine in ("containerd", "docker")],
        "dev_char_links": dev_char_links,
        "device_nodes_in_place": (missing is not None and not missing.get("nodes")
                                  and not (dev_char_links and missing.get("char_links"))),
        "left_to_boot": driver_unloaded and not_loaded == "provision",
        "problems": problems,
        "in_place": recordable and node_record.in_place(look, inputs),
        "record": recordable and truthy(settings.get("full_run", False)),
        "inputs_digest": inputs if recordable else "",
    }
