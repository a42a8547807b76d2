# -*- coding: utf-8 -*-
"""node_files.receive_command, run by a real /bin/sh: the payload toolkit_install sends on a
command's standard input lands in a new private directory, or nothing is left behind."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.plugin_utils.node_files import receive_command

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB, every byte value


def run(command, data, home):
    return subprocess.run(["/bin/sh", "-c", command], input=data, capture_output=True, check=False,
                          env=dict(os.environ, HOME=str(home)))


@pytest.mark.parametrize("remote_tmp", ["{tmp}/remote tmp", "~/.ansible/tmp", "~/it's here"])
def test_the_payload_lands_in_a_new_private_dir(tmp_path, remote_tmp):
    base = remote_tmp.replace("{tmp}", str(tmp_path)).replace("~", str(tmp_path / "home"), 1)
    proc = run(receive_command(remote_tmp.replace("{tmp}", str(tmp_path)), "toolkit-payload.tar"), PAYLOAD,
               tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    directory = proc.stdout.decode().strip().splitlines()[-1]
    assert os.path.dirname(directory) == base
    assert "-tmp-" in os.path.basename(directory)  # Ansible's clean-up removes only such names
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    with open(os.path.join(directory, "toolkit-payload.tar"), "rb") as handle:
        assert handle.read() == PAYLOAD
    # Each run gets a directory of its own.
    again = run(receive_command(remote_tmp.replace("{tmp}", str(tmp_path)), "toolkit-payload.tar"), b"x",
                tmp_path / "home")
    assert again.stdout.decode().strip() != directory


def test_a_payload_that_cannot_be_written_leaves_nothing_behind(tmp_path):
    base = tmp_path / "tmp"
    base.mkdir()
    # The file name is a directory that exists: cat cannot write it.
    proc = run(receive_command(str(base), "."), PAYLOAD, tmp_path)
    assert proc.returncode != 0
    assert os.listdir(base) == []
    assert proc.stdout.strip() == b""


def test_an_unusable_remote_tmp_fails(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    proc = run(receive_command(str(blocker / "tmp"), "toolkit-payload.tar"), PAYLOAD, tmp_path)
    assert proc.returncode != 0 and proc.stdout.strip() == b""
