from __future__ import annotations

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import mounts

COS = """\
22 1 254:3 / / ro,relatime shared:1 - ext2 /dev/root ro
27 22 8:1 /var /var rw,nosuid,nodev,noexec,relatime shared:17 - ext4 /dev/sda1 rw,commit=30
28 22 8:1 /home /home rw,nosuid,nodev,noexec,relatime shared:18 - ext4 /dev/sda1 rw,commit=30
29 28 8:1 /home/kubernetes/bin /home/kubernetes/bin rw,nosuid,nodev,relatime shared:25 - ext4 /dev/sda1 rw
30 22 0:40 / /mnt/with\\040space rw,relatime - tmpfs tmpfs rw
31 22 0:41 / /roflag rw,relatime - ext4 /dev/sdb ro
32 28 8:1 /home /home rw,nosuid,relatime - ext4 /dev/sda1 rw
"""


def test_parse():
    table = mounts.parse_mountinfo(COS + "\n")
    assert len(table) == 7
    first = table[0]
    assert first == {"mount_id": 22, "parent_id": 1, "root": "/", "mount_point": "/", "options": ["ro", "relatime"],
                     "fs_type": "ext2", "source": "/dev/root", "super_options": ["ro"]}
    assert table[4]["mount_point"] == "/mnt/with space"


def test_parse_without_super_options_and_optional_fields():
    (mount,) = mounts.parse_mountinfo("40 1 0:1 / /x rw master:1 propagate_from:2 - tmpfs none")
    assert mount["fs_type"] == "tmpfs" and mount["super_options"] == []


@pytest.mark.parametrize("line", ["garbage", "1 2 3 4 5 6 7", "x 1 0:1 / /x rw - tmpfs t rw"])
def test_parse_errors(line):
    with pytest.raises(mounts.MountinfoError, match="line 1"):
        mounts.parse_mountinfo(line)


@pytest.mark.parametrize("path, mount_point, ro, noexec", [
    ("/home/kubernetes/bin/nvidia/toolkit", "/home/kubernetes/bin", False, False),
    ("/home/kubernetes", "/home", False, False),  # the later /home mount hides the earlier
    ("/usr/local/nvidia/toolkit", "/", True, False),
    ("/var/lib/nvidia", "/var", False, True),
    ("/variable", "/", True, False),
    ("/roflag/x", "/roflag", True, False),
])
def test_find_mount(path, mount_point, ro, noexec):
    mount = mounts.find_mount(mounts.parse_mountinfo(COS), path)
    assert mount["mount_point"] == mount_point
    assert mounts.is_read_only(mount) is ro
    assert mounts.is_noexec(mount) is noexec


def test_find_mount_empty():
    assert mounts.find_mount([], "/x") is None


def test_locate_node_table_and_live_table():
    node_table = mounts.parse_mountinfo(COS)
    mount, path = mounts.locate(node_table, "/tmp/node", "/var/lib/nvidia")
    assert (mount["mount_point"], path) == ("/var", "/var/lib/nvidia")
    live = mounts.parse_mountinfo("1 0 0:1 / / rw - ext4 a rw\n2 1 0:2 / /tmp/node/var rw,noexec - ext4 b rw\n")
    mount, path = mounts.locate(live, "/tmp/node", "/var/lib/nvidia")
    assert (mount["mount_point"], path) == ("/tmp/node/var", "/tmp/node/var/lib/nvidia")
    mount, path = mounts.locate(live, "/", "/var/lib/nvidia")
    assert (mount["mount_point"], path) == ("/", "/var/lib/nvidia")


def test_remount_options_and_describe():
    mount = mounts.find_mount(mounts.parse_mountinfo(COS), "/var/lib")
    assert mounts.remount_exec_options(mount) == "remount,bind,exec,rw,nosuid,nodev,relatime"
    assert mounts.describe(mount) == "/var (ext4, options rw,nosuid,nodev,noexec,relatime)"
