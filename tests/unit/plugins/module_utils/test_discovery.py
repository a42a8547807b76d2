from __future__ import annotations

import json
import os

import pytest
from fakenode import elf_library, link_driver_root

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import discovery, node_fs


def _assert_no_host_root(facts, node):
    assert str(node.root) not in json.dumps(facts)


def test_cos_node(cos_node):
    facts = discovery.discover_node(str(cos_node.root))
    assert facts["driver_root"] == "/home/kubernetes/bin/nvidia"
    assert facts["dev_root"] == "/"
    assert facts["driver_version"] == "535.104.12"
    assert facts["driver_version_source"] == "/proc/driver/nvidia/version"
    assert facts["libraries"] == sorted(cos_node.libraries, key=lambda lib: lib["path"])
    assert all(lib["path"].startswith("/home/kubernetes/bin/nvidia/lib64/") for lib in facts["libraries"])
    assert facts["binaries"] == cos_node.binaries
    assert facts["firmware"] == cos_node.firmware
    assert "/home/kubernetes/bin/nvidia/vulkan/icd.d/nvidia_icd.json" in facts["config_files"]
    assert [(g["index"], g["uuid"], g["minor"]) for g in facts["gpus"]] == [
        (g["index"], g["uuid"], g["minor"]) for g in cos_node.gpus]
    got_nodes = {(d["path"], d["major"], d["minor"]) for d in facts["device_nodes"]}
    assert got_nodes == {(d["path"], d["major"], d["minor"]) for d in cos_node.device_nodes}
    assert all(d["host_path"] == d["path"] and d["mode"] == "0666" for d in facts["device_nodes"])
    assert facts["kernel_module_loaded"] is True
    assert facts["warnings"] == []
    _assert_no_host_root(facts, cos_node)


def test_ubuntu_node_finds_libraries_through_ld_cache_alone(ubuntu_node):
    facts = discovery.discover_node(str(ubuntu_node.root), library_search_paths=[])
    assert facts["driver_root"] == "/"
    assert {lib["path"] for lib in facts["libraries"]} == {lib["path"] for lib in ubuntu_node.libraries}
    # libz.so.1.2.13 sits beside the driver and is in the cache, but it is not the driver's.
    assert not any("libz" in lib["path"] for lib in facts["libraries"])
    assert facts["ipc_sockets"] == ["/run/nvidia-persistenced/socket"]
    assert "/usr/share/glvnd/egl_vendor.d/10_nvidia.json" in facts["config_files"]
    _assert_no_host_root(facts, ubuntu_node)


def test_ubuntu_node_with_search_paths_reports_each_library_once(ubuntu_node):
    facts = discovery.discover_node(str(ubuntu_node.root))
    paths = [lib["path"] for lib in facts["libraries"]]
    assert len(paths) == len(set(paths)) == len(ubuntu_node.libraries)


def test_driver_container_node_uses_its_own_dev(driver_container_node):
    facts = discovery.discover_node(str(driver_container_node.root))
    assert facts["driver_root"] == "/run/nvidia/driver"
    assert facts["dev_root"] == "/run/nvidia/driver"
    ctl = next(d for d in facts["device_nodes"] if d["path"] == "/dev/nvidiactl")
    assert ctl["host_path"] == "/run/nvidia/driver/dev/nvidiactl"
    assert "/run/nvidia/driver/run/nvidia-persistenced/socket" in facts["ipc_sockets"]
    _assert_no_host_root(facts, driver_container_node)


def test_explicit_roots(cos_node):
    facts = discovery.discover_node(str(cos_node.root), driver_root="/home/kubernetes/bin/nvidia/", dev_root="/")
    assert facts["driver_root"] == "/home/kubernetes/bin/nvidia"
    assert facts["driver_root_source"] == "set by the driver_root option"
    assert facts["dev_root_source"] == "set by the dev_root option"


def test_explicit_dev_root_without_dev_warns(cos_node):
    facts = discovery.discover_node(str(cos_node.root), dev_root="/home/kubernetes/bin/nvidia")
    assert facts["device_nodes"] == []
    assert "dev_root /home/kubernetes/bin/nvidia has no dev/ directory" in facts["warnings"][0]


def test_missing_host_root(tmp_path):
    with pytest.raises(discovery.DiscoveryError, match=r"host_root .*nowhere does not exist"):
        discovery.discover_node(str(tmp_path / "nowhere"))


def test_missing_driver_root(cos_node):
    with pytest.raises(discovery.DiscoveryError, match="driver_root /opt/nvidia does not exist under host_root"):
        discovery.discover_node(str(cos_node.root), driver_root="/opt/nvidia")


def test_no_driver_lists_every_path_searched(fake_node_factory):
    node = fake_node_factory("cos", missing=("libcuda",))
    with pytest.raises(discovery.DiscoveryError) as caught:
        discovery.discover_node(str(node.root))
    message = str(caught.value)
    assert "Set driver_root" in message and len(message) < 500 + len(str(node.root))
    searched = caught.value.details["searched"]
    for expected in ("/run/nvidia/driver/lib64/libcuda.so.*", "/home/kubernetes/bin/nvidia/lib64/libcuda.so.*",
                     "/var/lib/nvidia/usr/lib/x86_64-linux-gnu/libcuda.so.*", "/etc/ld.so.cache"):
        assert expected in searched
    assert str(node.root) in message  # names the host_root it looked in


def test_version_from_library_suffix_without_proc(fake_node_factory):
    node = fake_node_factory("cos", missing=("proc_version",), driver_version="550.54.15")
    facts = discovery.discover_node(str(node.root))
    assert facts["driver_version"] == "550.54.15"
    assert facts["driver_version_source"] == "libcuda.so suffix of /home/kubernetes/bin/nvidia/lib64/libcuda.so.550.54.15"


def test_version_from_ld_cache_without_proc(fake_node_factory):
    node = fake_node_factory("ubuntu", missing=("proc_version",))
    facts = discovery.discover_node(str(node.root), library_search_paths=[])
    assert facts["driver_version"] == "535.104.12"
    assert "ld.so.cache" in facts["driver_version_source"]


def test_no_version_anywhere(fake_node_factory):
    node = fake_node_factory("cos", missing=("proc_version",))
    with pytest.raises(discovery.DiscoveryError, match="cannot tell the driver version"):
        discovery.discover_node(str(node.root), driver_root="/home/kubernetes/bin/nvidia", library_search_paths=["bin"])


def test_garbled_proc_version_falls_back_with_warning(cos_node):
    (cos_node.node_path("/proc/driver/nvidia/version")).write_text("NVRM version: garbage\n")
    facts = discovery.discover_node(str(cos_node.root))
    assert facts["driver_version"] == "535.104.12"
    assert "ignoring /proc/driver/nvidia/version" in facts["warnings"][0]


def test_broken_library_and_gpu_information_are_skipped_with_warnings(fake_node_factory):
    node = fake_node_factory("cos", broken=("library", "gpu_information"))
    facts = discovery.discover_node(str(node.root))
    assert len(facts["libraries"]) == len(node.libraries)
    assert len(facts["gpus"]) == 1 and facts["gpus"][0]["index"] == 0
    warnings = "\n".join(facts["warnings"])
    assert "skipping library /home/kubernetes/bin/nvidia/lib64/libnvidia-broken.so.535.104.12: truncated" in warnings
    assert "skipping GPU %s: missing or malformed 'GPU UUID'" % "0000:10:00.0" in warnings


def test_empty_library_file_is_skipped(cos_node):
    cos_node.node_path("/home/kubernetes/bin/nvidia/lib64/libnvidia-empty.so.535.104.12").write_bytes(b"")
    facts = discovery.discover_node(str(cos_node.root))
    assert any("libnvidia-empty" in w for w in facts["warnings"])
    assert not any("libnvidia-empty" in lib["path"] for lib in facts["libraries"])


def test_truncated_ld_cache_warns(fake_node_factory):
    node = fake_node_factory("ubuntu", broken=("ld_cache",))
    facts = discovery.discover_node(str(node.root))
    assert any("ignoring /etc/ld.so.cache: truncated" in w for w in facts["warnings"])
    assert len(facts["libraries"]) == len(node.libraries)  # still found through the search paths


def test_kernel_module_not_loaded(fake_node_factory):
    node = fake_node_factory("cos", missing=("kernel_module",))
    facts = discovery.discover_node(str(node.root))
    assert facts["kernel_module_loaded"] is False
    assert facts["gpus"] == [] and facts["device_nodes"] == []
    assert facts["driver_version"] == "535.104.12"
    (warning,) = facts["warnings"]
    assert warning.startswith("the nvidia kernel module is not loaded (no /proc/driver/nvidia and no nvidia in "
                              "/proc/modules under host_root %s)" % node.root)
    assert "dev_root" not in warning and len(warning) < 500 + len(str(node.root))


def test_kernel_module_from_proc_version_without_proc_modules(cos_node):
    os.unlink(cos_node.node_path("/proc/modules"))
    assert discovery.discover_node(str(cos_node.root))["kernel_module_loaded"] is True


def test_mig_capabilities(fake_node_factory):
    node = fake_node_factory("ubuntu", mig=True, gpus=1)
    facts = discovery.discover_node(str(node.root))
    assert facts["mig_minors"]["config"] == 1
    assert facts["mig_minors"]["gpu0/gi1/ci0/access"] == 6
    caps = [d for d in facts["device_nodes"] if d["path"].startswith("/dev/nvidia-caps/")]
    assert len(caps) == 6


def test_no_firmware_no_binaries(fake_node_factory):
    node = fake_node_factory("cos", missing=("firmware", "binaries"))
    facts = discovery.discover_node(str(node.root))
    assert facts["firmware"] == [] and facts["binaries"] == []


def test_non_device_files_under_dev_are_ignored(cos_node):
    cos_node.node_path("/dev/nvidia-notadevice").write_text("x")
    facts = discovery.discover_node(str(cos_node.root))
    assert "/dev/nvidia-notadevice" not in [d["path"] for d in facts["device_nodes"]]


@pytest.mark.parametrize("link, target, expected", [
    ("/lib", "usr/lib", "/usr/lib/x"),
    ("/lib", "/usr/lib", "/usr/lib/x"),
    ("/lib", "../../usr/lib", "/usr/lib/x"),
])
def test_resolve_in_root_keeps_links_inside_root(tmp_path, link, target, expected):
    (tmp_path / "usr" / "lib").mkdir(parents=True)
    os.symlink(target, tmp_path / link.lstrip("/"))
    assert discovery.resolve_in_root(str(tmp_path), link + "/x") == expected


def test_resolve_in_root_symlink_loop(tmp_path):
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    with pytest.raises(discovery.DiscoveryError, match="too many levels"):
        discovery.resolve_in_root(str(tmp_path), "/a/x")


def test_resolve_in_root_has_the_one_link_limit_of_node_fs(tmp_path):
    """A chain of exactly MAX_LINK_HOPS links resolves; one more is a DiscoveryError naming the link."""
    hops = node_fs.MAX_LINK_HOPS
    (tmp_path / "end").mkdir()
    for number in range(hops + 1):
        os.symlink("l%d" % (number + 1) if number < hops else "end", tmp_path / ("l%d" % number))
    assert discovery.resolve_in_root(str(tmp_path), "/l1/x") == "/end/x"
    with pytest.raises(discovery.DiscoveryError, match="too many levels of symbolic links at /l"):
        discovery.resolve_in_root(str(tmp_path), "/l0/x")


# --- a driver root that is a symlink --------------------------------------------------------

def _same_files(facts, node):
    """The facts describe the node's files under its driver root as named, the link."""
    assert facts["libraries"] == sorted(node.libraries, key=lambda lib: lib["path"])
    assert facts["binaries"] == node.binaries
    assert facts["firmware"] == node.firmware
    assert all(path.startswith(node.driver_root + "/") for path in facts["config_files"])


@pytest.mark.parametrize("driver_root", ["auto", "/run/nvidia/driver"])
def test_absolute_driver_root_link_resolves_inside_host_root(fake_node_factory, driver_root):
    """/run/nvidia/driver -> /var/lib/nvidia-driver is followed inside host_root, not on this machine."""
    node = fake_node_factory("driver-container")
    assert not os.path.lexists("/var/lib/nvidia-driver")  # the link must not lead here
    link_driver_root(node, "/var/lib/nvidia-driver")
    facts = discovery.discover_node(str(node.root), driver_root=driver_root)
    assert facts["driver_root"] == "/run/nvidia/driver"
    assert facts["driver_root_resolved"] == "/var/lib/nvidia-driver"
    _same_files(facts, node)
    assert facts["dev_root"] == "/run/nvidia/driver"  # its dev/nvidiactl is found through the link
    assert {d["host_path"] for d in facts["device_nodes"]} == {"/run/nvidia/driver" + d["path"] for d in node.device_nodes}
    assert "/run/nvidia/driver/run/nvidia-persistenced/socket" in facts["ipc_sockets"]
    assert facts["warnings"] == []
    _assert_no_host_root(facts, node)


def test_relative_driver_root_link_cos(fake_node_factory):
    """COS-style /home/kubernetes/bin/nvidia -> ../../../var/lib/nvidia: paths stay under the link."""
    node = fake_node_factory("cos")
    assert link_driver_root(node, "/var/lib/nvidia", relative=True) == "../../../var/lib/nvidia"
    facts = discovery.discover_node(str(node.root))
    assert facts["driver_root"] == "/home/kubernetes/bin/nvidia"
    assert facts["driver_root_resolved"] == "/var/lib/nvidia"
    assert facts["driver_version"] == facts["library_version"] == node.driver_version
    _same_files(facts, node)
    assert "/home/kubernetes/bin/nvidia/vulkan/icd.d/nvidia_icd.json" in facts["config_files"]
    assert facts["dev_root"] == "/" and len(facts["device_nodes"]) == len(node.device_nodes)
    assert facts["warnings"] == []


def test_unlinked_driver_root_resolves_to_itself(cos_node):
    facts = discovery.discover_node(str(cos_node.root))
    assert facts["driver_root_resolved"] == facts["driver_root"] == "/home/kubernetes/bin/nvidia"
    assert facts["dangling_links"] == []


def test_driver_root_link_to_nowhere(cos_node):
    link_driver_root(cos_node, "/var/lib/nvidia")
    os.rename(cos_node.node_path("/var/lib/nvidia"), cos_node.node_path("/var/lib/elsewhere"))
    expected = r"driver_root /home/kubernetes/bin/nvidia \(a link to /var/lib/nvidia\) does not exist under host_root"
    with pytest.raises(discovery.DiscoveryError, match=expected):
        discovery.discover_node(str(cos_node.root), driver_root="/home/kubernetes/bin/nvidia")


def test_driver_root_that_is_a_file(cos_node):
    cos_node.node_path("/opt").mkdir()
    cos_node.node_path("/opt/nvidia").write_text("not a directory\n")
    with pytest.raises(discovery.DiscoveryError) as caught:
        discovery.discover_node(str(cos_node.root), driver_root="/opt/nvidia")
    message = str(caught.value)
    assert message.startswith("driver_root /opt/nvidia is a file, not a directory, under host_root %s" % cos_node.root)
    assert "set driver_root to the host directory holding the driver's files" in message


def test_absolute_var_run_link_finds_each_socket_once(ubuntu_node):
    ubuntu_node.node_path("/var").mkdir(exist_ok=True)
    ubuntu_node.node_path("/var/run").symlink_to("/run")
    facts = discovery.discover_node(str(ubuntu_node.root))
    assert facts["ipc_sockets"] == ["/run/nvidia-persistenced/socket"]


# --- saying what is wrong -------------------------------------------------------------------

def test_library_without_soname_warns_naming_it(fake_node_factory):
    node = fake_node_factory("cos", broken=("soname",))
    facts = discovery.discover_node(str(node.root))
    libcuda = "/home/kubernetes/bin/nvidia/lib64/libcuda.so.535.104.12"
    assert {"path": libcuda, "soname": None} in facts["libraries"]
    (warning,) = facts["warnings"]
    assert warning.startswith("driver libraries without an ELF SONAME, so containers get no SONAME link for them: "
                              + libcuda)
    assert "containers get no libcuda.so.1" in warning and len(warning) < 500


def test_many_libraries_without_soname_make_one_short_warning(cos_node):
    lib64 = cos_node.node_path("/home/kubernetes/bin/nvidia/lib64")
    from fakenode import elf_library
    for index in range(40):
        (lib64 / ("libnvidia-unnamed%02d.so.535.104.12" % index)).write_bytes(elf_library(None))
    facts = discovery.discover_node(str(cos_node.root))
    (warning,) = facts["warnings"]
    assert "and 37 more" in warning and len(warning) < 500
    assert len([lib for lib in facts["libraries"] if lib["soname"] is None]) == 40


def test_dangling_soname_link_warns_naming_the_link(fake_node_factory):
    node = fake_node_factory("cos", broken=("dangling_link",))
    facts = discovery.discover_node(str(node.root))
    link = "/home/kubernetes/bin/nvidia/lib64/libcuda.so.1"
    # libcuda.so -> libcuda.so.1 leads nowhere either.
    assert facts["dangling_links"] == [{"path": link[:-2], "target": "libcuda.so.1"},
                                       {"path": link, "target": "libcuda.so.530.30.02"}]
    (warning,) = facts["warnings"]
    assert warning.startswith("dangling links in the driver's library directories")
    assert link + " -> libcuda.so.530.30.02" in warning
    assert len(facts["libraries"]) == len(node.libraries)  # libcuda.so.535.104.12 itself is still there


def test_version_mismatch_warns_with_both_versions(fake_node_factory):
    node = fake_node_factory("cos", driver_version="535.104.12", kernel_version="550.54.15")
    facts = discovery.discover_node(str(node.root))
    assert facts["driver_version"] == "550.54.15"
    assert facts["driver_version_source"] == "/proc/driver/nvidia/version"
    assert facts["library_version"] == "535.104.12"
    # The libraries listed are the ones there, of their own version.
    assert facts["libraries"] == sorted(node.libraries, key=lambda lib: lib["path"])
    (warning,) = facts["warnings"]
    assert warning.startswith("kernel module 550.54.15, libraries 535.104.12 found under /home/kubernetes/bin/nvidia")
    assert len(warning) < 500


def test_kernel_version_among_several_library_versions_is_no_mismatch(cos_node):
    lib64 = cos_node.node_path("/home/kubernetes/bin/nvidia/lib64")
    (lib64 / "libcuda.so.550.54.15").write_bytes((lib64 / "libcuda.so.535.104.12").read_bytes())
    facts = discovery.discover_node(str(cos_node.root))
    assert facts["driver_version"] == facts["library_version"] == "535.104.12"
    # No mismatch: the other version's file is only named as left out.
    assert facts["skipped_libraries"] == [
        {"path": "/home/kubernetes/bin/nvidia/lib64/libcuda.so.550.54.15", "version": "550.54.15"}]
    (warning,) = facts["warnings"]
    assert warning.startswith("not mounting 1 libraries of other driver versions (550.54.15) than 535.104.12")


def test_several_library_versions_without_kernel_module_takes_the_newest(fake_node_factory):
    node = fake_node_factory("cos", missing=("proc_version",))
    lib64 = node.node_path("/home/kubernetes/bin/nvidia/lib64")
    (lib64 / "libcuda.so.530.30.02").write_bytes((lib64 / "libcuda.so.535.104.12").read_bytes())
    (lib64 / "libcuda.so.520.1.1").symlink_to("missing")  # dangling: not a version that is there
    facts = discovery.discover_node(str(node.root))
    assert facts["driver_version"] == facts["library_version"] == "535.104.12"
    assert "libraries of several driver versions under driver_root /home/kubernetes/bin/nvidia: " \
           "535.104.12, 530.30.02; using 535.104.12" in facts["warnings"]


def test_missing_dev_root_warns_naming_it(cos_node):
    facts = discovery.discover_node(str(cos_node.root), dev_root="/nowhere")
    assert facts["device_nodes"] == []
    (warning,) = facts["warnings"]
    assert warning.startswith("dev_root /nowhere does not exist under host_root %s: no device nodes found" % cos_node.root)


def test_dev_root_that_is_a_file_warns(cos_node):
    cos_node.node_path("/devfile").write_text("x")
    facts = discovery.discover_node(str(cos_node.root), dev_root="/devfile")
    assert facts["warnings"][0].startswith("dev_root /devfile is a file, not a directory")


def test_no_device_nodes_under_dev_root_says_what_was_looked_for(fake_node_factory):
    node = fake_node_factory("cos", missing=("devices",))
    facts = discovery.discover_node(str(node.root))
    assert facts["kernel_module_loaded"] is True
    assert facts["warnings"] == [
        "no NVIDIA device nodes under dev_root /: looked for /dev/nvidia*, /dev/nvidia-caps/*, "
        "/dev/nvidia-caps-imex-channels/* under host_root %s" % node.root]


def test_kernel_module_from_proc_modules_alone(fake_node_factory):
    node = fake_node_factory("cos", missing=("proc_version", "gpus"))
    assert not node.node_path("/proc/driver/nvidia").exists()
    assert discovery.discover_node(str(node.root))["kernel_module_loaded"] is True


def test_device_nodes_behind_an_absolute_link_are_found_inside_host_root(cos_node):
    expected = discovery.discover_node(str(cos_node.root))["device_nodes"]
    cos_node.node_path("/dev").rename(cos_node.node_path("/devices"))
    cos_node.node_path("/dev").symlink_to("/devices")  # the node's /devices, not this machine's
    facts = discovery.discover_node(str(cos_node.root))
    assert facts["device_nodes"] == expected and len(expected) == len(cos_node.device_nodes)
    assert not any("no NVIDIA device nodes" in w for w in facts["warnings"])


def test_libnvidia_api_without_a_driver_version_in_its_name_is_taken(cos_node):
    """NvAPI's libnvidia-api.so.1 ships with every driver but its file name has no driver version; a
    look-alike with another name is still left out."""
    lib64 = cos_node.node_path("/home/kubernetes/bin/nvidia/lib64")
    for name in ("libnvidia-api.so.1", "libnvidia-api.so.2", "libnvidia-apix.so.1"):
        (lib64 / name).write_bytes(elf_library(name))
    facts = discovery.discover_node(str(cos_node.root))
    api = [lib for lib in facts["libraries"] if "libnvidia-api" in lib["path"]]
    assert api == [{"path": "/home/kubernetes/bin/nvidia/lib64/libnvidia-api.so.1", "soname": "libnvidia-api.so.1"}]
    assert facts["warnings"] == []
