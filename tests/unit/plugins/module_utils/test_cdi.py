"""The pure CDI spec builder, on facts shaped like discovery's (no node needed)."""

from __future__ import annotations

import json

import pytest
import yaml

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import cdi

DRIVER_ROOT = "/home/kubernetes/bin/nvidia"
VERSION = "535.104.12"
UUIDS = ["GPU-aaaaaaaa-0000-0000-0000-000000000000", "GPU-bbbbbbbb-1111-1111-1111-111111111111"]


def node(path, major, minor, dev_root="/"):
    host = path if dev_root == "/" else dev_root + path
    return {"path": path, "host_path": host, "major": major, "minor": minor, "mode": "0666"}


def cos_facts(gpus=2, mig=False, dev_root="/"):
    lib = DRIVER_ROOT + "/lib64/"
    nodes = [node("/dev/nvidia-modeset", 195, 254, dev_root), node("/dev/nvidia-uvm", 509, 0, dev_root),
             node("/dev/nvidia-uvm-tools", 509, 1, dev_root)]
    nodes += [node("/dev/nvidia%d" % i, 195, i, dev_root) for i in range(gpus)]
    nodes += [node("/dev/nvidiactl", 195, 255, dev_root), node("/dev/nvidia-nvswitch0", 240, 0, dev_root),
              node("/dev/nvidia-fs0", 241, 0, dev_root), node("/dev/nvidia-nvlink", 242, 0, dev_root)]
    mig_minors = {}
    if mig:
        mig_minors = {"config": 1, "monitor": 2, "gpu0/gi1/access": 3, "gpu0/gi1/ci0/access": 4,
                      "gpu0/gi2/access": 5, "gpu0/gi2/ci0/access": 6, "gpu1/gi1/access": 7}
        nodes += [node("/dev/nvidia-caps/nvidia-cap%d" % m, 237, m, dev_root) for m in range(1, 8)]
    return {
        "driver_root": DRIVER_ROOT, "dev_root": dev_root, "dev_root_source": "auto", "driver_version": VERSION,
        "library_search_paths": ["lib64", "usr/lib64"],
        "libraries": [
            {"path": lib + "libEGL_nvidia.so." + VERSION, "soname": "libEGL_nvidia.so.0"},
            {"path": lib + "libGLX_nvidia.so." + VERSION, "soname": "libGLX_nvidia.so.0"},
            {"path": lib + "libcuda.so." + VERSION, "soname": "libcuda.so.1"},
            {"path": lib + "libnvidia-glcore.so." + VERSION, "soname": "libnvidia-glcore.so." + VERSION},
            {"path": lib + "libnvidia-tls.so." + VERSION, "soname": None},
        ],
        "binaries": [DRIVER_ROOT + "/bin/nvidia-smi"],
        "firmware": [DRIVER_ROOT + "/firmware/nvidia/%s/gsp_ga10x.bin" % VERSION],
        "config_files": [DRIVER_ROOT + "/vulkan/icd.d/nvidia_icd.json",
                         DRIVER_ROOT + "/share/nvidia/nvidia-application-profiles-%s-rc" % VERSION],
        "ipc_sockets": ["/run/nvidia-persistenced/socket"],
        "gpus": [{"index": i, "uuid": UUIDS[i], "pci_bus_id": "0000:%02x:00.0" % (16 * i + 16), "minor": i,
                  "model": "Tesla T4"} for i in range(gpus)],
        "device_nodes": nodes,
        "mig_minors": mig_minors,
    }


def mounts(spec):
    return {m["hostPath"]: m for m in spec["containerEdits"]["mounts"]}


def hooks(spec):
    return {h["args"][1]: h for h in spec["containerEdits"].get("hooks", [])}


def test_management_spec_holds_every_node_but_fs_nvswitch_nvlink():
    spec = cdi.build_spec(cos_facts(), mode="management")
    assert spec["kind"] == "management.nvidia.com/gpu"
    assert [d["name"] for d in spec["devices"]] == ["all"]
    paths = [n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]]
    assert paths == ["/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0",
                     "/dev/nvidia1", "/dev/nvidiactl"]
    assert "deviceNodes" not in spec["containerEdits"]
    assert spec["containerEdits"]["env"] == ["NVIDIA_VISIBLE_DEVICES=void"]
    assert spec["cdiVersion"] == "0.3.0"


def test_device_node_fields():
    edit = cdi.device_node_edit(node("/dev/nvidiactl", 195, 255))
    assert edit == {"path": "/dev/nvidiactl", "type": "c", "major": 195, "minor": 255, "fileMode": 0o666,
                    "permissions": "rw"}
    edit = cdi.device_node_edit(node("/dev/nvidiactl", 195, 255, dev_root="/run/nvidia/driver"))
    assert edit["hostPath"] == "/run/nvidia/driver/dev/nvidiactl"


def test_driver_container_dev_root_needs_0_5_0():
    spec = cdi.build_spec(cos_facts(dev_root="/run/nvidia/driver"), mode="management")
    assert spec["cdiVersion"] == "0.5.0"


@pytest.mark.parametrize("strategies, names", [
    (["index", "uuid"], ["0", UUIDS[0], "1", UUIDS[1], "all"]),
    (["index"], ["0", "1", "all"]),
    (["uuid"], [UUIDS[0], UUIDS[1], "all"]),
    (["type-index"], ["gpu0", "gpu1", "all"]),
    (["index", "index"], ["0", "1", "all"]),
])
def test_gpu_mode_names(strategies, names):
    spec = cdi.build_spec(cos_facts(), mode="gpu", device_name_strategy=strategies)
    assert spec["kind"] == "nvidia.com/gpu"
    assert [d["name"] for d in spec["devices"]] == names


def test_gpu_mode_nodes():
    spec = cdi.build_spec(cos_facts(), mode="gpu")
    devices = {d["name"]: [n["path"] for n in d["containerEdits"]["deviceNodes"]] for d in spec["devices"]}
    assert devices["0"] == devices[UUIDS[0]] == ["/dev/nvidia0"]
    assert devices["1"] == ["/dev/nvidia1"]
    assert devices["all"] == ["/dev/nvidia0", "/dev/nvidia1"]
    common = [n["path"] for n in spec["containerEdits"]["deviceNodes"]]
    assert common == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"]
    assert spec["cdiVersion"] == "0.5.0"


@pytest.mark.parametrize("wanted, names", [
    (["1"], ["1", UUIDS[1], "all"]),
    ([UUIDS[0]], ["0", UUIDS[0], "all"]),
    ([UUIDS[0].lower().upper().replace("GPU", "gpu")], ["0", UUIDS[0], "all"]),
    (["gpu1", "0"], ["0", UUIDS[0], "1", UUIDS[1], "all"]),
])
def test_devices_filter(wanted, names):
    spec = cdi.build_spec(cos_facts(), mode="gpu", devices=wanted)
    assert [d["name"] for d in spec["devices"]] == names


def test_without_all_device():
    spec = cdi.build_spec(cos_facts(), mode="gpu", device_name_strategy=["index"], all_device=False)
    assert [d["name"] for d in spec["devices"]] == ["0", "1"]


def test_mig_devices():
    spec = cdi.build_spec(cos_facts(mig=True), mode="gpu", device_name_strategy=["index", "type-index", "uuid"])
    devices = {d["name"]: [n["path"] for n in d["containerEdits"]["deviceNodes"]] for d in spec["devices"]}
    assert devices["0:1"] == devices["mig0:1"] == ["/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap3",
                                                   "/dev/nvidia-caps/nvidia-cap4"]
    assert devices["0:2"] == ["/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap5", "/dev/nvidia-caps/nvidia-cap6"]
    assert "1:1" not in devices  # no compute instance
    assert devices["all"] == ["/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap3", "/dev/nvidia-caps/nvidia-cap4",
                              "/dev/nvidia-caps/nvidia-cap5", "/dev/nvidia-caps/nvidia-cap6", "/dev/nvidia1"]


def test_mig_needs_capability_nodes():
    facts = cos_facts(mig=True)
    facts["device_nodes"] = [n for n in facts["device_nodes"] if n["minor"] != 4 or n["major"] != 237]
    names = [d["name"] for d in cdi.build_spec(facts, mode="gpu", device_name_strategy=["index"])["devices"]]
    assert names == ["0", "0:2", "1", "all"]


def test_mounts_and_container_paths():
    spec = cdi.build_spec(cos_facts())
    m = mounts(spec)
    assert m[DRIVER_ROOT + "/lib64/libcuda.so." + VERSION] == {
        "hostPath": DRIVER_ROOT + "/lib64/libcuda.so." + VERSION, "containerPath": "/lib64/libcuda.so." + VERSION,
        "options": ["ro", "nosuid", "nodev", "rbind", "rprivate"]}
    assert m[DRIVER_ROOT + "/bin/nvidia-smi"]["containerPath"] == "/bin/nvidia-smi"
    assert m[DRIVER_ROOT + "/firmware/nvidia/%s/gsp_ga10x.bin" % VERSION]["containerPath"] == \
        "/lib/firmware/nvidia/%s/gsp_ga10x.bin" % VERSION
    assert m[DRIVER_ROOT + "/vulkan/icd.d/nvidia_icd.json"]["containerPath"] == "/etc/vulkan/icd.d/nvidia_icd.json"
    assert m[DRIVER_ROOT + "/share/nvidia/nvidia-application-profiles-%s-rc" % VERSION]["containerPath"] == \
        "/usr/share/nvidia/nvidia-application-profiles-%s-rc" % VERSION
    sock = m["/run/nvidia-persistenced/socket"]
    assert sock["containerPath"] == "/run/nvidia-persistenced/socket"
    assert sock["options"] == ["nosuid", "nodev", "rbind", "rprivate", "noexec"]
    assert len(m) == 5 + 1 + 1 + 2 + 1


def test_container_driver_root_reroots_driver_files_not_sockets():
    spec = cdi.build_spec(cos_facts(), container_driver_root="/usr/local/nvidia")
    m = mounts(spec)
    assert m[DRIVER_ROOT + "/lib64/libcuda.so." + VERSION]["containerPath"] == "/usr/local/nvidia/lib64/libcuda.so." + VERSION
    assert m[DRIVER_ROOT + "/bin/nvidia-smi"]["containerPath"] == "/usr/local/nvidia/bin/nvidia-smi"
    assert m["/run/nvidia-persistenced/socket"]["containerPath"] == "/run/nvidia-persistenced/socket"
    assert hooks(spec)["update-ldcache"]["args"][-2:] == ["--folder", "/usr/local/nvidia/lib64"]
    assert "libcuda.so.1::/usr/local/nvidia/lib64/libcuda.so" in hooks(spec)["create-symlinks"]["args"]


def test_ubuntu_paths_stay_where_they_are():
    facts = cos_facts()
    facts["driver_root"] = "/"
    facts["libraries"] = [{"path": "/usr/lib/x86_64-linux-gnu/libcuda.so." + VERSION, "soname": "libcuda.so.1"}]
    facts["config_files"] = ["/usr/share/vulkan/icd.d/nvidia_icd.json"]
    facts["firmware"] = ["/lib/firmware/nvidia/%s/gsp_ga10x.bin" % VERSION]
    m = mounts(cdi.build_spec(facts))
    assert all(path == mount["containerPath"] for path, mount in m.items() if path != DRIVER_ROOT + "/bin/nvidia-smi")


def test_three_hooks():
    spec = cdi.build_spec(cos_facts(), hook_path=DRIVER_ROOT + "/toolkit/nvidia-cdi-hook")
    names = [h["args"][1] for h in spec["containerEdits"]["hooks"]]
    assert names == ["create-symlinks", "enable-cuda-compat", "update-ldcache"]
    for hook in spec["containerEdits"]["hooks"]:
        assert hook["hookName"] == "createContainer"
        assert hook["path"] == DRIVER_ROOT + "/toolkit/nvidia-cdi-hook"
        assert hook["args"][0] == "nvidia-cdi-hook"
    links = hooks(spec)["create-symlinks"]["args"][2:]
    assert links[::2] == ["--link"] * (len(links) // 2)
    assert links[1::2] == [
        "libEGL_nvidia.so.%s::/lib64/libEGL_nvidia.so.0" % VERSION,
        "libGLX_nvidia.so.%s::/lib64/libGLX_nvidia.so.0" % VERSION,
        "libGLX_nvidia.so.0::/lib64/libGLX_indirect.so.0",
        "libcuda.so.%s::/lib64/libcuda.so.1" % VERSION,
        "libcuda.so.1::/lib64/libcuda.so",
    ]
    assert hooks(spec)["enable-cuda-compat"]["args"][2:] == ["--host-driver-version=" + VERSION]
    assert hooks(spec)["update-ldcache"]["args"][2:] == ["--folder", "/lib64"]


def test_nvidia_ctk_and_ldconfig_path():
    spec = cdi.build_spec(cos_facts(), hook_path="/usr/bin/nvidia-ctk", ldconfig_path="/sbin/ldconfig")
    for hook in spec["containerEdits"]["hooks"]:
        assert hook["args"][:2] == ["nvidia-ctk", "hook"]
    ld = next(h for h in spec["containerEdits"]["hooks"] if "update-ldcache" in h["args"])
    assert ld["args"] == ["nvidia-ctk", "hook", "update-ldcache", "--ldconfig-path", "/sbin/ldconfig",
                          "--folder", "/lib64"]


@pytest.mark.parametrize("disabled, left", [
    ([], ["create-symlinks", "enable-cuda-compat", "update-ldcache"]),
    (["update-ldcache"], ["create-symlinks", "enable-cuda-compat"]),
    (["create-symlinks", "enable-cuda-compat"], ["update-ldcache"]),
    (["all"], []),
])
def test_disable_hooks(disabled, left):
    spec = cdi.build_spec(cos_facts(), disable_hooks=disabled)
    assert list(hooks(spec)) == left
    assert ("hooks" in spec["containerEdits"]) == bool(left)


def test_vendor_class_and_default_paths():
    spec = cdi.build_spec(cos_facts(), mode="gpu", vendor="example.com", cls="accel")
    assert spec["kind"] == "example.com/accel"
    assert cdi.default_path("management") == "/var/run/cdi/management.nvidia.com-gpu.yaml"
    assert cdi.default_path("gpu") == "/etc/cdi/nvidia.yaml"
    assert cdi.default_path("gpu", "example.com", "accel") == "/etc/cdi/example.com-accel.yaml"
    assert cdi.qualified_names(spec)[-1] == "example.com/accel=all"


@pytest.mark.parametrize("spec, version", [
    ({"kind": "a.com/b", "devices": [{"name": "x", "containerEdits": {}}]}, "0.3.0"),
    ({"kind": "a.com/b", "devices": [{"name": "0", "containerEdits": {}}]}, "0.5.0"),
    ({"kind": "a.com/b", "devices": [], "containerEdits": {"deviceNodes": [{"path": "/d", "hostPath": "/e"}]}}, "0.5.0"),
    ({"kind": "a.com/b", "devices": [],
      "containerEdits": {"mounts": [{"hostPath": "/a", "containerPath": "/b", "type": "bind"}]}}, "0.4.0"),
    ({"kind": "a.com/b", "devices": [{"name": "x", "annotations": {"a": "b"}}]}, "0.6.0"),
    ({"kind": "a.com/b", "annotations": {"a": "b"}, "devices": []}, "0.6.0"),
    ({"kind": "a.com/b.c", "devices": []}, "0.6.0"),
])
def test_minimum_version(spec, version):
    assert cdi.minimum_version(spec) == version


def test_no_device_nodes_names_dev_root_and_cos_hint():
    facts = cos_facts(dev_root="/home/kubernetes/bin/nvidia")
    facts["device_nodes"] = []
    with pytest.raises(cdi.CdiError) as caught:
        cdi.build_spec(facts)
    assert "under dev_root /home/kubernetes/bin/nvidia" in str(caught.value)
    assert "set dev_root: /" in str(caught.value)


def test_no_device_nodes_under_slash_says_what_was_looked_for():
    facts = cos_facts()
    facts["device_nodes"] = []
    with pytest.raises(cdi.CdiError) as caught:
        cdi.build_spec(facts)
    message = str(caught.value)
    assert "no NVIDIA device nodes under dev_root / (dev_root came from: auto): looked for /dev/nvidia*, " \
           "/dev/nvidia-caps/*, /dev/nvidia-caps-imex-channels/*" in message
    assert "set dev_root: /" not in message and "device_nodes module" in message and len(message) < 500
    assert caught.value.details["looked_for"][0] == "/dev/nvidia*"


def test_kernel_module_not_loaded_says_so_not_set_dev_root():
    facts = cos_facts()
    facts["device_nodes"] = []
    facts["kernel_module_loaded"] = False
    with pytest.raises(cdi.CdiError) as caught:
        cdi.build_spec(facts)
    message = str(caught.value)
    assert message.startswith("no NVIDIA device nodes under dev_root /: the nvidia kernel module is not loaded")
    assert "set dev_root" not in message and len(message) < 500


def test_libraries_of_another_version_than_the_kernel_module_fail():
    facts = cos_facts()
    facts["driver_version"] = "550.54.15"
    facts["library_version"] = VERSION
    with pytest.raises(cdi.CdiError) as caught:
        cdi.build_spec(facts)
    message = str(caught.value)
    assert message.startswith("kernel module 550.54.15, libraries %s found under %s" % (VERSION, DRIVER_ROOT))
    assert len(message) < 500
    facts["library_version"] = facts["driver_version"]
    cdi.build_spec(dict(facts, libraries=[dict(lib, path=lib["path"].replace(VERSION, "550.54.15"))
                                          for lib in facts["libraries"]]))


def test_only_excluded_nodes_is_no_nodes():
    facts = cos_facts()
    facts["device_nodes"] = [n for n in facts["device_nodes"] if "nvswitch" in n["path"]]
    with pytest.raises(cdi.CdiError, match="no NVIDIA device nodes"):
        cdi.build_spec(facts)


def test_no_libcuda_lists_paths_searched():
    facts = cos_facts()
    facts["libraries"] = [lib for lib in facts["libraries"] if "libcuda" not in lib["path"]]
    with pytest.raises(cdi.CdiError) as caught:
        cdi.build_spec(facts)
    message = str(caught.value)
    assert "no libcuda.so.%s under driver_root %s" % (VERSION, DRIVER_ROOT) in message and len(message) < 500
    assert caught.value.details["searched"] == [DRIVER_ROOT + "/lib64/libcuda.so.*", DRIVER_ROOT + "/usr/lib64/libcuda.so.*",
                                                DRIVER_ROOT + "/etc/ld.so.cache"]


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "gpu", "devices": ["7"]}, "unknown GPU in devices: 7. The node's GPUs are: 0 (GPU-aaaa"),
    ({"mode": "gpu", "devices": ["GPU-nope"]}, "unknown GPU in devices: GPU-nope"),
    ({"mode": "management", "devices": ["0"]}, "mode management has one device"),
    ({"mode": "gpu", "device_name_strategy": []}, "device_name_strategy must name"),
    ({"mode": "gpu", "device_name_strategy": ["serial"]}, "unknown device_name_strategy 'serial'"),
    ({"mode": "gpu", "device_name_strategy": ["index"], "all_device": False, "devices": []}, None),
    ({"mode": "other"}, "unknown mode 'other'"),
])
def test_bad_options(kwargs, message):
    if message is None:
        cdi.build_spec(cos_facts(), **kwargs)
        return
    with pytest.raises(cdi.CdiError) as caught:
        cdi.build_spec(cos_facts(), **kwargs)
    assert message in str(caught.value)


@pytest.mark.parametrize("vendor, cls, message", [
    ("", "gpu", "invalid CDI empty vendor"),
    ("1nvidia.com", "gpu", "vendor '1nvidia.com' must start with a letter"),
    ("nvidia.com/x", "gpu", "vendor 'nvidia.com/x' holds '/'; allowed are letters, digits and _ - ."),
    ("nvidia.com.", "gpu", "vendor 'nvidia.com.' must end with a letter or digit"),
    ("nvidia.com", "", "invalid CDI empty class"),
    ("nvidia.com", "-gpu", "class '-gpu' must start with a letter"),
    ("nvidia.com", "g p u", "class 'g p u' holds ' '"),
    ("nvidia.com", "gpu_", "class 'gpu_' must end with a letter or digit"),
    ("x", "gpu", "vendor 'x' is too short: at least 2 characters"),
    ("nvidia.com", "g", "class 'g' is too short"),
    ("xy", "zw", None),
    ("a-b_c.d", "e-f_g", None),
])
def test_kind_names_follow_cdi_rules(vendor, cls, message):
    if message is None:
        assert cdi.kind("gpu", vendor, cls) == "%s/%s" % (vendor, cls)
        return
    with pytest.raises(cdi.CdiError) as caught:
        cdi.build_spec(cos_facts(), mode="gpu", vendor=vendor, cls=cls)
    assert message in str(caught.value)


@pytest.mark.parametrize("name, message", [
    ("0", None), ("GPU-1b2c", None), ("0:1", None), ("mig0:1", None), ("a.b_c-d", None),
    ("", "empty device name"), ("-0", "must start with a letter or digit"), ("GPU-a b", "holds ' '"),
    ("0:", "must end with a letter or digit"),
])
def test_device_names_follow_cdi_rules(name, message):
    if message is None:
        cdi.check_name("device name", name)
        return
    with pytest.raises(cdi.CdiError, match=message):
        cdi.check_name("device name", name)


def test_garbled_uuid_is_a_clear_failure():
    facts = cos_facts()
    facts["gpus"][0]["uuid"] = "GPU-garbled uuid"
    with pytest.raises(cdi.CdiError, match="invalid CDI device name 'GPU-garbled uuid' holds ' '"):
        cdi.build_spec(facts, mode="gpu")
    assert cdi.build_spec(facts, mode="gpu", device_name_strategy=["index"])["devices"][0]["name"] == "0"


def test_gpu_mode_without_gpus_or_without_their_nodes():
    with pytest.raises(cdi.CdiError, match="no GPUs found in /proc/driver/nvidia/gpus"):
        cdi.build_spec(cos_facts(gpus=0), mode="gpu")
    facts = cos_facts()
    facts["device_nodes"] = [n for n in facts["device_nodes"] if n["path"] != "/dev/nvidia1"]
    with pytest.raises(cdi.CdiError, match=r"GPU 1 .* has no device node /dev/nvidia1 under dev_root /"):
        cdi.build_spec(facts, mode="gpu")


@pytest.mark.parametrize("path, inside", [
    ("/etc/cdi/nvidia.yaml", True), ("/var/run/cdi/x.json", True), ("/run/cdi/x.yaml", True),
    ("/etc/cdi/sub/x.yaml", False), ("/tmp/x.yaml", False), ("/etc/cdi", False),
])
def test_in_spec_dir(path, inside):
    assert cdi.in_spec_dir(path) is inside


@pytest.mark.parametrize("path, fmt", [("/etc/cdi/a.json", "json"), ("/etc/cdi/a.JSON", "json"),
                                       ("/etc/cdi/a.yaml", "yaml"), ("/etc/cdi/a.yml", "yaml"), ("/etc/cdi/a", "yaml")])
def test_format_from_path(path, fmt):
    assert cdi.format_from_path(path) == fmt


def test_render_yaml_and_json_read_back_the_same():
    facts = cos_facts(mig=True)
    spec = cdi.build_spec(facts, mode="gpu")
    text = cdi.render(spec, "yaml", facts)
    assert text.startswith("# Generated by gpu_node.container_toolkit.cdi_spec")
    assert yaml.safe_load(text) == spec
    assert json.loads(cdi.render(spec, "json")) == spec
    assert cdi.render(spec, "yaml") == cdi.render(cdi.build_spec(facts, mode="gpu"), "yaml")
    with pytest.raises(cdi.CdiError, match="unknown format"):
        cdi.render(spec, "toml")


def test_recorded_driver_version():
    facts = cos_facts()
    spec = cdi.build_spec(facts)
    assert cdi.recorded_driver_version(cdi.render(spec, "yaml", facts)) == VERSION
    assert cdi.recorded_driver_version(cdi.render(spec, "json")) == VERSION
    assert cdi.recorded_driver_version(cdi.render(cdi.build_spec(facts, disable_hooks=["all"]), "json")) is None
    assert cdi.recorded_driver_version("") is None


def test_output_is_deterministic():
    facts = cos_facts()
    first = cdi.render(cdi.build_spec(facts, mode="gpu"), "yaml", facts)
    assert first == cdi.render(cdi.build_spec(cos_facts(), mode="gpu"), "yaml", cos_facts())


@pytest.mark.parametrize("text, kind", [
    ("# driver_version: 1\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n", "nvidia.com/gpu"),
    ('{\n  "cdiVersion": "0.5.0",\n  "kind": "nvidia.com/gpu"\n}\n', "nvidia.com/gpu"),
    ('{"cdiVersion": "0.5.0", "kind": "example.com/accel", "devices": []}', "example.com/accel"),
    ("kind: 'vendor.com/x'\n", "vendor.com/x"),
    ("cdiVersion: 0.5.0\n", None),
    ("", None),
    (None, None),
])
def test_declared_kind(text, kind):
    assert cdi.declared_kind(text) == kind


def test_same_kind_warnings():
    others = {"/etc/cdi/nvidia.yaml": "kind: nvidia.com/gpu\n", "/etc/cdi/mgmt.yaml": "kind: management.nvidia.com/gpu\n",
              "/var/run/cdi/nvidia.json": '{"kind": "nvidia.com/gpu"}', "/var/run/cdi/own.yaml": "kind: nvidia.com/gpu\n"}
    warnings = cdi.same_kind_warnings("/var/run/cdi/own.yaml", "nvidia.com/gpu", others)
    assert [w.split()[0] for w in warnings] == ["/etc/cdi/nvidia.yaml", "/var/run/cdi/nvidia.json"]
    assert "prefer /var/run/cdi over /etc/cdi, so /var/run/cdi/own.yaml may not be used" in warnings[0]
    assert cdi.same_kind_warnings("/etc/cdi/x.yaml", "other.com/gpu", others) == []


@pytest.mark.parametrize("prefix, link", cdi.COMPAT_LINKS)
def test_each_compatibility_link_points_at_the_soname(prefix, link):
    """Every entry of COMPAT_LINKS, on a library of the kind it names, under container paths both
    with the driver root stripped and re-rooted at /usr/local/nvidia."""
    soname = {"libcuda.so.": "libcuda.so.1", "libnvidia-opticalflow.so.": "libnvidia-opticalflow.so.1",
              "libGLX_nvidia.so.": "libGLX_nvidia.so.0"}[prefix]
    library = {"path": DRIVER_ROOT + "/lib64/%s%s" % (prefix, VERSION), "soname": soname}
    assert cdi.library_links([library], DRIVER_ROOT) == [
        "%s%s::/lib64/%s" % (prefix, VERSION, soname), "%s::/lib64/%s" % (soname, link)]
    assert cdi.library_links([library], DRIVER_ROOT, "/usr/local/nvidia")[1] == "%s::/usr/local/nvidia/lib64/%s" % (
        soname, link)


def test_the_management_spec_of_a_cos_node_has_every_compatibility_link(cos_node):
    """As nvidia-ctk's management spec has them (issue 16 compared the two on a simulated COS node:
    libnvidia-opticalflow.so was the one missing)."""
    from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import discovery

    facts = discovery.discover_node(str(cos_node.root), "auto", "auto", None)
    links = hooks(cdi.build_spec(facts))["create-symlinks"]["args"][3::2]
    for _prefix, link in cdi.COMPAT_LINKS:
        assert any(pair.endswith("::/lib64/" + link) for pair in links), link
    assert "libnvidia-opticalflow.so.1::/lib64/libnvidia-opticalflow.so" in links


# --- issue 31: dev links, vdpau ---------------------------------------------------------------

def test_dev_links_go_beside_their_library_after_the_compat_links_each_once():
    lib = DRIVER_ROOT + "/lib64/"
    libraries = [{"path": lib + "libcuda.so." + VERSION, "soname": "libcuda.so.1"},
                 {"path": lib + "libnvidia-ml.so." + VERSION, "soname": "libnvidia-ml.so.1"},
                 {"path": lib + "libnvidia-tls.so." + VERSION, "soname": None}]
    dev_links = [{"path": lib + "libcuda.so", "library": lib + "libcuda.so." + VERSION},
                 {"path": "/elsewhere/libnvidia-ml.so", "library": lib + "libnvidia-ml.so." + VERSION},
                 {"path": lib + "libnvidia-ml.so", "library": lib + "libnvidia-ml.so." + VERSION},
                 {"path": lib + "libnvidia-tls.so", "library": lib + "libnvidia-tls.so." + VERSION}]
    assert cdi.library_links(libraries, DRIVER_ROOT, None, dev_links) == [
        "libcuda.so.%s::/lib64/libcuda.so.1" % VERSION,
        "libcuda.so.1::/lib64/libcuda.so",
        "libnvidia-ml.so.%s::/lib64/libnvidia-ml.so.1" % VERSION,
        "libnvidia-ml.so.1::/lib64/libnvidia-ml.so",
        "libnvidia-tls.so.%s::/lib64/libnvidia-tls.so" % VERSION,
    ]
    assert cdi.library_links(libraries, DRIVER_ROOT, "/usr/local/nvidia", dev_links)[3] == \
        "libnvidia-ml.so.1::/usr/local/nvidia/lib64/libnvidia-ml.so"


def test_facts_without_the_new_fields_make_the_spec_they_made():
    facts = cos_facts()
    spec = cdi.build_spec(facts)
    assert cdi.build_spec(dict(facts, dev_links=[], vdpau_links=[])) == spec


def test_vdpau_links_and_their_folder():
    lib = "/usr/lib/x86_64-linux-gnu/"
    facts = dict(cos_facts(), driver_root="/", libraries=[
        {"path": lib + "nvidia/current/libcuda.so." + VERSION, "soname": "libcuda.so.1"},
        {"path": lib + "nvidia/current/libvdpau_nvidia.so." + VERSION, "soname": "libvdpau_nvidia.so.1"}],
        vdpau_links=[{"path": lib + "vdpau/libvdpau_nvidia.so.1",
                      "library": lib + "nvidia/current/libvdpau_nvidia.so." + VERSION}])
    spec = cdi.build_spec(facts)
    args = hooks(spec)["create-symlinks"]["args"]
    assert "%snvidia/current/libvdpau_nvidia.so.%s::%svdpau/libvdpau_nvidia.so.1" % (lib, VERSION, lib) in args
    folders = hooks(spec)["update-ldcache"]["args"]
    assert [a for a in folders if a.startswith("/")] == [lib + "nvidia/current", lib + "vdpau"]
