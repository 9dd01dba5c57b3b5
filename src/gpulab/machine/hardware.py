"""Detect the machine a notebook runs on: CPU, RAM, GPUs, the torch build and its backend.

The machine layer's front door: ``detect()`` assembles the report from the readers (``nvml``,
``torch_probe``, ``cpu``, ``visible``), and ``pick_device`` turns a notebook's ``device``
parameter into a torch device. Notebooks call ``hardware.detect()`` and
``hardware.pick_device(device)``; the report's classes are importable from here too.
Detection reports instead of raising: whatever a driver, a library or a file does (a missing
library, an exception of any kind, an odd value, a hang), the answer is a report whose
``notes`` say what could not be read. Nothing here prints.
"""

from __future__ import annotations

import glob
import os
import platform
import sys
from collections.abc import Mapping
from typing import Any

from gpulab.machine.device import check_quick, pick_device
from gpulab.machine.host import cpu_cache_sizes, cpu_info, ram
from gpulab.machine.nvml import nvml_gpus
from gpulab.machine.report import (
    THROTTLE_REASONS,
    CPUInfo,
    GPUInfo,
    HardwareReport,
    TorchInfo,
)
from gpulab.machine.torch_probe import backend_of, import_torch, torch_gpus, torch_info
from gpulab.machine.visible import VISIBILITY_VARS, VisibleDevices, parse_visible_devices

__all__ = [
    "THROTTLE_REASONS",
    "VISIBILITY_VARS",
    "CPUInfo",
    "GPUInfo",
    "HardwareReport",
    "TorchInfo",
    "VisibleDevices",
    "check_quick",
    "cpu_cache_sizes",
    "detect",
    "parse_visible_devices",
    "pick_device",
]


def _in_colab(environ: Mapping[str, str]) -> bool:
    """True inside Google Colab."""
    return "google.colab" in sys.modules or bool(environ.get("COLAB_RELEASE_TAG"))


def _nvidia_device_files(dev_dir: str) -> bool:
    """True when the NVIDIA kernel driver has created /dev/nvidia0, /dev/nvidia1, ..."""
    return bool(glob.glob(os.path.join(dev_dir, "nvidia[0-9]*")))


def _visibility_notes(visible_devices: Mapping[str, str]) -> list[str]:
    """Notes for the HIP/ROCR variables (CUDA_VISIBLE_DEVICES is explained by the NVML step)."""
    notes = []
    for name in VISIBILITY_VARS[1:]:
        if name in visible_devices:
            parsed = parse_visible_devices(visible_devices[name], name)
            if parsed.hides_all and parsed.note:
                notes.append(parsed.note)
    return notes


def detect(
    *,
    environ: Mapping[str, str] | None = None,
    meminfo_path: str = "/proc/meminfo",
    cpuinfo_path: str = "/proc/cpuinfo",
    dev_dir: str = "/dev",
    nvml: Any = None,
    torch_module: Any = None,
) -> HardwareReport:
    """Detect CPU, RAM, GPUs, torch and the backend; never raises because something is missing.

    The keyword arguments exist for tests: another environment, other /proc files, a fake
    ``pynvml`` module or a fake ``torch``.
    """
    env = os.environ if environ is None else environ
    visible_devices = {k: env[k] for k in VISIBILITY_VARS if k in env}
    cuda_visible = parse_visible_devices(env.get("CUDA_VISIBLE_DEVICES"))
    notes: list[str] = []

    gpus, present, nvml_notes = nvml_gpus(cuda_visible, nvml)
    notes.extend(nvml_notes)
    torch, import_error = (torch_module, None) if torch_module is not None else import_torch()
    info, torch_notes = torch_info(torch, import_error)
    notes.extend(torch_notes)
    if gpus is None:  # NVML unavailable: torch is the only other witness (ROCm, MPS, no NVML)
        gpus = torch_gpus(torch, info, notes)
        if cuda_visible.note:
            notes.append(cuda_visible.note)
    notes.extend(_visibility_notes(visible_devices))
    ram_total, ram_available = ram(meminfo_path, notes)
    return HardwareReport(
        os=platform.platform(),
        python=platform.python_version(),
        torch=info,
        cpu=cpu_info(cpuinfo_path),
        ram_total_bytes=ram_total,
        ram_available_bytes=ram_available,
        gpus=gpus,
        backend=backend_of(info),
        in_colab=_in_colab(env),
        visible_devices=visible_devices,
        nvidia_device_files=_nvidia_device_files(dev_dir),
        notes=[n for n in notes if n],
        gpus_present=max(present, len(gpus)),
        amd_device_files=os.path.exists(os.path.join(dev_dir, "kfd")),
    )
