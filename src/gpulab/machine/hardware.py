"""Detect the machine a notebook runs on: CPU, RAM, GPUs, the torch build and its backend.

The machine layer's front door: ``detect()`` assembles the report from the readers (``nvml``,
``torch_probe``, ``cpu``, ``visible``), and ``pick_device`` turns a notebook's ``device``
parameter into a torch device. Notebooks call ``hardware.detect()`` and
``hardware.pick_device(device)``; the report's classes are importable from here too.
Detection reports instead of raising: whatever a driver, a library or a file does (a missing
library, an exception of any kind, an odd value, a hang), the answer is a report whose
``notes`` say what could not be read. NVML and torch answer within one time limit
(GPULAB_DETECT_TIMEOUT_S, default 60 s). Nothing here prints.
"""

from __future__ import annotations

import glob
import math
import os
import platform
import sys
import time
from collections.abc import Mapping
from typing import Any

from gpulab.core.validate import checked
from gpulab.machine.device import check_quick, pick_device
from gpulab.machine.host import cpu_cache_sizes, cpu_info, ram
from gpulab.machine.nvml import (
    NVMLBinding,
    in_daemon_thread,
    join_until,
    nvml_read,
    nvml_timeout_note,
)
from gpulab.machine.report import (
    THROTTLE_REASONS,
    CPUInfo,
    GPUInfo,
    HardwareReport,
    TorchInfo,
)
from gpulab.machine.torch_probe import (
    TorchModule,
    backend_of,
    torch_gpus,
    torch_read,
    torch_timeout_info,
)
from gpulab.machine.visible import VISIBILITY_VARS, VisibleDevices, parse_visible_devices

__all__ = [
    "THROTTLE_REASONS",
    "VISIBILITY_VARS",
    "CPUInfo",
    "GPUInfo",
    "HardwareReport",
    "TorchInfo",
    "VisibleDevices",
    "DETECT_TIMEOUT_S",
    "DETECT_TIMEOUT_VAR",
    "check_quick",
    "cpu_cache_sizes",
    "detect",
    "detect_timeout",
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


DETECT_TIMEOUT_S = 60.0  # NVML and torch together: a healthy machine answers in seconds, and
# a first import of torch from a cold disk can take half a minute
DETECT_TIMEOUT_VAR = "GPULAB_DETECT_TIMEOUT_S"  # sets it, e.g. 120 on a slow machine
_MAX_DETECT_TIMEOUT_S = 3600.0


@checked
def detect_timeout(environ: Mapping[str, str]) -> tuple[float, list[str]]:
    """The time limit of detection from GPULAB_DETECT_TIMEOUT_S; a bad value gives the default."""
    raw = environ.get(DETECT_TIMEOUT_VAR)
    if raw is None:
        return DETECT_TIMEOUT_S, []
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and 0 < value <= _MAX_DETECT_TIMEOUT_S:
        return value, []
    return DETECT_TIMEOUT_S, [
        f"{DETECT_TIMEOUT_VAR}={raw!r} is not a number of seconds above 0 (at most "
        f"{_MAX_DETECT_TIMEOUT_S:g}); using the default, {DETECT_TIMEOUT_S:g} s"
    ]


@checked
def detect(
    *,
    environ: Mapping[str, str] | None = None,
    meminfo_path: str = "/proc/meminfo",
    cpuinfo_path: str = "/proc/cpuinfo",
    dev_dir: str = "/dev",
    nvml: NVMLBinding | None = None,
    torch_module: TorchModule | None = None,
) -> HardwareReport:
    """Detect CPU, RAM, GPUs, torch and the backend; never raises, never hangs.

    NVML (its import included) and torch (its import and its probes included) run at the same
    time in daemon threads under one time limit, GPULAB_DETECT_TIMEOUT_S (default 60 s);
    whatever has not answered by then is left behind, and a note says so. The keyword
    arguments exist for tests: another environment, other /proc files, a fake ``pynvml``
    module or a fake ``torch``.
    """
    env = os.environ if environ is None else environ
    visible_devices = {k: env[k] for k in VISIBILITY_VARS if k in env}
    cuda_visible = parse_visible_devices(env.get("CUDA_VISIBLE_DEVICES"))
    timeout_s, notes = detect_timeout(env)
    # The host first, in this thread: a hung torch thread holding an import lock must not be
    # able to block it.
    host_notes: list[str] = []
    cpu = cpu_info(cpuinfo_path, host_notes)
    ram_total, ram_available = ram(meminfo_path, host_notes)

    deadline = time.monotonic() + timeout_s
    nvml_progress: dict[str, Any] = {}
    torch_progress: dict[str, Any] = {}
    nvml_thread, nvml_result = in_daemon_thread(
        lambda: nvml_read(cuda_visible, nvml, nvml_progress), "gpulab-nvml-probe"
    )
    torch_thread, torch_result = in_daemon_thread(
        lambda: torch_read(torch_module, torch_progress), "gpulab-torch-probe"
    )
    join_until(nvml_thread, deadline)
    join_until(torch_thread, deadline)

    if nvml_result:
        gpus, present, nvml_notes = nvml_result[0]
    else:
        gpus, present, nvml_notes = None, 0, [nvml_timeout_note(nvml_progress, timeout_s)]
    notes.extend(nvml_notes)
    if torch_result:
        torch, info, torch_notes = torch_result[0]
    else:
        # torch.cuda imports pynvml: when that import hangs, torch's import hangs with it
        pynvml_hung = not nvml_result and nvml_progress.get("stage") == "import"
        info, note = torch_timeout_info(torch_progress, timeout_s, pynvml_hung)
        torch, torch_notes = None, [note]
    notes.extend(torch_notes)
    if gpus is None:  # NVML unavailable: torch is the only other witness (ROCm, MPS, no NVML)
        gpus = _torch_gpus_until(torch, info, notes, deadline, timeout_s)
        if cuda_visible.note:
            notes.append(cuda_visible.note)
    notes.extend(_visibility_notes(visible_devices))
    notes.extend(host_notes)
    return HardwareReport(
        os=platform.platform(),
        python=platform.python_version(),
        torch=info,
        cpu=cpu,
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


def _torch_gpus_until(
    torch: Any, info: TorchInfo, notes: list[str], deadline: float, timeout_s: float
) -> list[GPUInfo]:
    """torch's GPU list, read in a daemon thread within what is left of detection's time."""
    if torch is None:
        return []
    listing_notes: list[str] = []  # the thread's own list: it may still write after we leave
    worker, result = in_daemon_thread(
        lambda: torch_gpus(torch, info, listing_notes), "gpulab-torch-gpus"
    )
    join_until(worker, deadline)
    if not result:
        notes.append(f"torch did not list its GPUs within {timeout_s:g} s (a hung driver?)")
        return []
    notes.extend(listing_notes)
    return result[0]
