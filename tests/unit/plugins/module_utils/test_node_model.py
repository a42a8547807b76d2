from __future__ import annotations

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import node_model as nm


@pytest.mark.parametrize("path, expected", [
    ("", "/"), ("/", "/"), ("dev/nvidiactl", "/dev/nvidiactl"), ("//usr//lib/", "/usr/lib"),
    ("/a/./b/../c", "/a/c"), ("/../etc", "/etc"),
])
def test_normalize_host_path(path, expected):
    assert nm.normalize_host_path(path) == expected


@pytest.mark.parametrize("host_root, host_path, expected", [
    ("/", "/dev/nvidiactl", "/dev/nvidiactl"),
    ("/host", "/dev/nvidiactl", "/host/dev/nvidiactl"),
    ("/host/", "dev", "/host/dev"),
    ("/tmp/node", "/", "/tmp/node"),
    ("/tmp/node", "/../../etc/passwd", "/tmp/node/etc/passwd"),
])
def test_node_path(host_root, host_path, expected):
    assert nm.node_path(host_root, host_path) == expected


@pytest.mark.parametrize("host_root, on_node, expected", [
    ("/", "/dev/x", "/dev/x"), ("/host", "/host/dev/x", "/dev/x"), ("/host/", "/host", "/"),
])
def test_host_path_of(host_root, on_node, expected):
    assert nm.host_path_of(host_root, on_node) == expected


def test_host_path_of_outside_root_fails():
    with pytest.raises(ValueError, match="not under host_root"):
        nm.host_path_of("/host", "/hostile/dev")


@pytest.mark.parametrize("path, root, expected", [
    ("/a/b", "/a", True), ("/a", "/a", True), ("/ab", "/a", False), ("/x", "/", True),
])
def test_is_under(path, root, expected):
    assert nm.is_under(path, root) is expected


@pytest.mark.parametrize("host_path, driver_root, prefix, expected", [
    ("/home/kubernetes/bin/nvidia/lib64/libcuda.so.1", "/home/kubernetes/bin/nvidia", None, "/lib64/libcuda.so.1"),
    ("/home/kubernetes/bin/nvidia/lib64/libcuda.so.1", "/home/kubernetes/bin/nvidia", "/usr/local/nvidia",
     "/usr/local/nvidia/lib64/libcuda.so.1"),
    ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/", None, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
    ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/", "/usr/local/nvidia", "/usr/local/nvidia/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
    ("/run/nvidia-persistenced/socket", "/run/nvidia/driver", None, "/run/nvidia-persistenced/socket"),
    ("/run/nvidia/driver", "/run/nvidia/driver", None, "/"),
])
def test_container_path(host_path, driver_root, prefix, expected):
    assert nm.container_path(host_path, driver_root, prefix) == expected


def test_choose_driver_root_takes_first_match_in_order():
    seen = []

    def has_driver(candidate):
        seen.append(candidate)
        return candidate in ("/var/lib/nvidia", "/")

    assert nm.choose_driver_root(nm.DRIVER_ROOT_CANDIDATES, has_driver) == "/var/lib/nvidia"
    assert seen == ["/run/nvidia/driver", "/home/kubernetes/bin/nvidia", "/var/lib/nvidia"]
    assert nm.choose_driver_root(nm.DRIVER_ROOT_CANDIDATES, lambda c: False) is None


@pytest.mark.parametrize("driver_root, has_ctl, expected", [
    ("/run/nvidia/driver", True, "/run/nvidia/driver"),
    ("/home/kubernetes/bin/nvidia", False, "/"),
    ("/", True, "/"),
])
def test_choose_dev_root(driver_root, has_ctl, expected):
    assert nm.choose_dev_root(driver_root, has_ctl)[0] == expected


def test_node_argument_spec_matches_doc_fragment_defaults():
    spec = nm.node_argument_spec(driver=True)
    assert spec["host_root"]["default"] == "/"
    assert spec["driver_root"]["default"] == "auto"
    assert spec["library_search_paths"]["default"][0] == "lib64"
    assert set(nm.node_argument_spec()) == {"host_root"}


def test_version_order_and_choice():
    assert nm.version_key("535.104.12") == (535, 104, 12) and nm.version_key("550.x") == (550, 0)
    assert nm.sorted_versions(["535.104.12", "550.54.15", "535.86.10"]) == ["550.54.15", "535.104.12", "535.86.10"]
    assert nm.choose_library_version("535.104.12", {"550.54.15": "", "535.104.12": ""}) == "535.104.12"
    assert nm.choose_library_version("560.1.1", ["550.54.15", "535.104.12"]) == "550.54.15"
    assert nm.choose_library_version(None, ["535.104.12"]) == "535.104.12"
    assert nm.choose_library_version("535.104.12", []) is None


def test_version_mismatch_message():
    message = nm.version_mismatch_message("550.54.15", ["535.104.12"], "/home/kubernetes/bin/nvidia")
    assert message.startswith("kernel module 550.54.15, libraries 535.104.12 found under /home/kubernetes/bin/nvidia")
    assert "reboot or reload the nvidia kernel module" in message and len(message) < 500


@pytest.mark.parametrize("text, expected", [
    ('NAME="Container-Optimized OS"\nID=cos\nVERSION_ID=109\n', "cos"),
    ('PRETTY_NAME="Ubuntu 22.04.4 LTS"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\n', "ubuntu"),
    ('ID="rhel"\n', "rhel"),
    ("ID='opensuse-leap'\n", "opensuse-leap"),
    ("ID=Cos\n", "cos"),
    ("  ID=debian  \r\n", "debian"),
    ("ID=flatcar", "flatcar"),
    ("ID=first\nID=second\n", "first"),
    ("# ID=commented\nID_LIKE=debian\nVERSION_ID=12\nID\n", ""),
    ("ID=\n", ""),
    ('ID=""\n', ""),
    ("", ""),
    (None, ""),
])
def test_os_release_id(text, expected):
    assert nm.os_release_id(text) == expected


def test_container_engines_in_configuration_order_with_what_showed_them():
    present = {"/usr/local/bin/dockerd", "/etc/containerd/config.toml", "/usr/bin/containerd", "/etc/crio/crio.conf.d"}
    found = nm.container_engines(present.__contains__)
    assert list(found) == ["containerd", "docker", "crio"]
    assert found == {"containerd": ["/usr/bin/containerd", "/etc/containerd/config.toml"],
                     "docker": ["/usr/local/bin/dockerd"], "crio": ["/etc/crio/crio.conf.d"]}
    assert nm.container_engines(lambda path: False) == {}
    assert nm.container_engines({"/etc/docker/daemon.json"}.__contains__) == {"docker": ["/etc/docker/daemon.json"]}
