from __future__ import annotations

import fakenode
import pytest

from ansible_collections.gpu_node.container_toolkit.plugins.module_utils import procfs


@pytest.mark.parametrize("text, expected", [
    (fakenode.proc_version("535.104.12"), "535.104.12"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16)  Tue Mar  5\n",
     "550.54.15"),
    ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  470.82", "470.82"),
])
def test_parse_driver_version(text, expected):
    assert procfs.parse_driver_version(text) == expected


@pytest.mark.parametrize("text", ["", "GCC version: 12\n", "NVRM version: no number here\n"])
def test_parse_driver_version_garbled(text):
    with pytest.raises(procfs.ProcFormatError):
        procfs.parse_driver_version(text)


def test_parse_gpu_information():
    text = fakenode.gpu_information("Tesla T4", "GPU-0b9e4a0c-4e4f-0d34-2b4c-3a9d6c1d2e3f", "0000:00:04.0", 3)
    assert procfs.parse_gpu_information(text) == {
        "uuid": "GPU-0b9e4a0c-4e4f-0d34-2b4c-3a9d6c1d2e3f", "pci_bus_id": "0000:00:04.0", "minor": 3, "model": "Tesla T4",
    }


def test_parse_gpu_information_falls_back_to_directory_name():
    text = "Model: A\nGPU UUID: GPU-1\nDevice Minor: 0\n"
    assert procfs.parse_gpu_information(text, "0000:3B:00.0")["pci_bus_id"] == "0000:3b:00.0"


@pytest.mark.parametrize("text, field", [
    ("Model: A\nGPU UUID: ???\nDevice Minor: 0\nBus Location: 0000:00:04.0\n", "GPU UUID"),
    ("Model: A\nGPU UUID: GPU-1\nDevice Minor: x\nBus Location: 0000:00:04.0\n", "Device Minor"),
    ("Model: A\nGPU UUID: GPU-1\nDevice Minor: 1\n", "Bus Location"),
])
def test_parse_gpu_information_garbled(text, field):
    with pytest.raises(procfs.ProcFormatError, match=field):
        procfs.parse_gpu_information(text)


@pytest.mark.parametrize("version, name", [("535.104.12", "nvidia-frontend"), ("550.54.15", "nvidia")])
def test_parse_devices_and_nvidia_major(version, name):
    devices = procfs.parse_devices(fakenode.proc_devices(version, True, True))
    assert devices["character"][name] == 195
    assert devices["character"]["nvidia-uvm"] == fakenode.UVM_MAJOR
    assert devices["block"]["loop"] == 7
    assert procfs.nvidia_major(devices) == 195


def test_parse_devices_without_nvidia():
    devices = procfs.parse_devices(fakenode.proc_devices("535.104.12", False, False))
    assert procfs.nvidia_major(devices) is None


def test_parse_devices_garbled():
    with pytest.raises(procfs.ProcFormatError, match="unexpected line"):
        procfs.parse_devices("Character devices:\nnot-a-number mem\n")


def test_parse_modules():
    assert procfs.parse_modules("nvidia 1 0 - Live 0x0\nnvidia_uvm 1 0 - Live 0x0\n\n") == {"nvidia", "nvidia_uvm"}
