"""Detect the machine a notebook runs on: CPU, RAM, GPUs, the torch build and its backend.

Introduced in the course's first chapter (the hardware summary at the top of every notebook)
and used by ``gpulab.doctor``. Everything here reports instead of raising: a missing driver,
library or file becomes ``None`` in a field and a sentence in ``HardwareReport.notes``.
Nothing here prints.
"""

from __future__ import annotations

import dataclasses
import glob
import html
import os
import platform
import re
import subprocess
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulab.errors import GpulabConfigError

__all__ = [
    "CPUInfo",
    "GPUInfo",
    "HardwareReport",
    "TorchInfo",
    "VisibleDevices",
    "cpu_cache_sizes",
    "detect",
    "parse_visible_devices",
    "pick_device",
]

GIB = 1024**3
VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
# Order in which CPUInfo.vector_extensions lists what it found.
VECTOR_EXTENSIONS = ("AVX2", "AVX-512", "AVX-512 BF16", "AMX", "NEON", "FMA")
# Why the clocks are below maximum, as GPUInfo.throttle_reasons names them. NVML calls the bits
# nvmlClocksEventReason<Name> (nvidia-ml-py >= 12.535) or nvmlClocksThrottleReason<Name>.
THROTTLE_REASONS = (
    "GpuIdle",
    "ApplicationsClocksSetting",
    "SwPowerCap",
    "HwSlowdown",
    "SyncBoost",
    "SwThermalSlowdown",
    "HwThermalSlowdown",
    "HwPowerBrakeSlowdown",
)


@dataclass
class GPUInfo:
    """One GPU as NVML (NVIDIA) or torch (ROCm, MPS, or NVIDIA without NVML) reports it."""

    index: int  # NVML's index (PCI bus order), or torch's device ordinal when source="torch"
    name: str
    memory_total_bytes: int | None = None
    memory_free_bytes: int | None = None
    driver_version: str | None = None  # e.g. "550.54.14"
    cuda_driver_version: str | None = None  # highest CUDA the driver supports, e.g. "12.4"
    compute_capability: str | None = None  # "8.9"
    power_limit_w: float | None = None
    power_draw_w: float | None = None
    temperature_c: float | None = None
    sm_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    source: str = "nvml"  # "nvml" or "torch"
    uuid: str | None = None  # "GPU-..." as CUDA_VISIBLE_DEVICES may name it
    utilization_gpu_percent: int | None = None  # share of the last sample period a kernel ran
    throttle_reasons: list[str] | None = None  # names from THROTTLE_REASONS; [] when none
    other_processes_memory_bytes: int | None = None  # held by compute processes other than this


@dataclass
class TorchInfo:
    """What the installed torch was built for and what it can use right now."""

    installed: bool
    version: str | None = None
    cuda_version: str | None = None  # torch.version.cuda: the CUDA runtime the wheel bundles
    hip_version: str | None = None  # torch.version.hip
    cuda_available: bool = False
    mps_built: bool = False
    mps_available: bool = False
    xpu_available: bool = False
    device_count: int = 0
    arch_list: list[str] = field(default_factory=list)  # e.g. ["sm_80", "sm_90"]
    build: str = "cpu-only"  # "cuda", "rocm", "mps", "xpu", "cpu-only" or "not installed"


@dataclass
class CPUInfo:
    """The host CPU: model, core counts and the SIMD extensions that matter for CPU inference."""

    model: str | None
    physical_cores: int | None
    logical_cores: int | None
    vector_extensions: list[str]  # subset of VECTOR_EXTENSIONS; empty when unknown
    max_frequency_mhz: float | None = None
    # The clock Linux reports in /proc/cpuinfo ("cpu MHz"): in a VM, where no maximum is
    # exposed, it is the host's nominal clock; turbo clocks can be higher.
    reported_frequency_mhz: float | None = None


@dataclass
class HardwareReport:
    """Everything ``detect()`` found, with ``notes`` saying why anything is missing."""

    os: str  # platform.platform()
    python: str  # platform.python_version()
    torch: TorchInfo
    cpu: CPUInfo
    ram_total_bytes: int | None
    ram_available_bytes: int | None
    # The GPUs CUDA/torch will see: NVML's list filtered by CUDA_VISIBLE_DEVICES.
    gpus: list[GPUInfo]
    backend: str  # "cuda", "rocm", "mps", "xpu" or "cpu"
    in_colab: bool
    visible_devices: dict[str, str]  # the *_VISIBLE_DEVICES variables that are set
    nvidia_device_files: bool  # any /dev/nvidia[0-9]* exists
    notes: list[str]  # why something could not be read
    gpus_present: int = 0  # GPUs NVML saw before CUDA_VISIBLE_DEVICES filtering; 0 when unknown
    amd_device_files: bool = False  # /dev/kfd exists (the ROCm compute interface)

    def to_dict(self) -> dict[str, Any]:
        """Return the report as plain JSON-serialisable data."""
        return dataclasses.asdict(self)

    def summary_rows(self) -> list[tuple[str, str]]:
        """Return the machine-level (key, value) rows shown by ``__str__`` and ``_repr_html_``."""
        return [
            ("OS", self.os),
            ("Python", self.python),
            ("torch", _torch_summary(self.torch)),
            ("backend", self.backend),
            ("CPU", _cpu_summary(self.cpu)),
            ("RAM", _ram_summary(self.ram_total_bytes, self.ram_available_bytes)),
            ("GPUs", _gpu_count_summary(self)),
            ("Colab", "yes" if self.in_colab else "no"),
            ("visible devices", _visible_summary(self.visible_devices)),
        ]

    def __str__(self) -> str:
        """Plain-text table: aligned key: value lines, one block per GPU, then the notes."""
        lines = _aligned(self.summary_rows())
        for gpu in self.gpus:
            lines.append("")
            lines.append(f"GPU {gpu.index}: {gpu.name}")
            lines.extend("  " + line for line in _aligned(_gpu_rows(gpu)))
        if self.notes:
            lines.append("")
            lines.append("Notes:")
            lines.extend(f"  - {note}" for note in self.notes)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """HTML table for Jupyter; every string is escaped."""
        parts = ['<table class="gpulab-hardware">']
        parts.extend(_html_row(k, v) for k, v in self.summary_rows())
        for gpu in self.gpus:
            parts.append(
                f'<tr><th colspan="2" style="text-align:left">GPU {gpu.index}: '
                f"{html.escape(gpu.name)}</th></tr>"
            )
            parts.extend(_html_row(k, v) for k, v in _gpu_rows(gpu))
        if self.notes:
            items = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
            parts.append(
                f'<tr><th>notes</th><td style="text-align:left"><ul>{items}</ul></td></tr>'
            )
        parts.append("</table>")
        return "".join(parts)


# --------------------------------------------------------------------------- formatting helpers


def _gib(n: int | None) -> str:
    """Format a byte count in GiB with one decimal, or "?" when unknown."""
    return "?" if n is None else f"{n / GIB:.1f} GiB"


def _aligned(rows: list[tuple[str, str]]) -> list[str]:
    """Align ``key: value`` lines on the colon."""
    width = max((len(k) for k, _ in rows), default=0)
    return [f"{k.ljust(width)} : {v}" for k, v in rows]


def _html_row(key: str, value: str) -> str:
    """One escaped HTML table row."""
    return (
        f'<tr><th style="text-align:left">{html.escape(key)}</th>'
        f'<td style="text-align:left">{html.escape(value)}</td></tr>'
    )


def _torch_summary(t: TorchInfo) -> str:
    """One line on the torch build."""
    if not t.installed:
        return "not installed"
    extra = []
    if t.cuda_version:
        extra.append(f"CUDA {t.cuda_version}")
    if t.hip_version:
        extra.append(f"HIP {t.hip_version}")
    if t.arch_list:
        extra.append("archs " + " ".join(t.arch_list))
    suffix = f", {', '.join(extra)}" if extra else ""
    return f"{t.version} (build: {t.build}{suffix}; devices usable: {t.device_count})"


def _cpu_summary(c: CPUInfo) -> str:
    """One line on the CPU."""
    cores = f"{c.physical_cores or '?'} physical / {c.logical_cores or '?'} logical cores"
    ext = ", ".join(c.vector_extensions) if c.vector_extensions else "no vector extensions known"
    freq = f", max {c.max_frequency_mhz:.0f} MHz" if c.max_frequency_mhz else ""
    return f"{c.model or 'unknown model'} ({cores}{freq}; {ext})"


def _ram_summary(total: int | None, available: int | None) -> str:
    """One line on RAM."""
    if total is None:
        return "unknown"
    return f"{_gib(total)} total, {_gib(available)} available"


def _gpu_count_summary(r: HardwareReport) -> str:
    """How many GPUs are usable and how many are present."""
    if not r.gpus:
        if r.gpus_present:
            return f"none visible ({r.gpus_present} present)"
        return "none found"
    text = f"{len(r.gpus)} visible"
    if r.gpus_present > len(r.gpus):
        text += f" of {r.gpus_present} present"
    return text


def _visible_summary(visible: dict[str, str]) -> str:
    """The *_VISIBLE_DEVICES variables that are set, or "not set"."""
    if not visible:
        return "not set"
    return ", ".join(f"{k}={v!r}" for k, v in visible.items())


def _gpu_rows(g: GPUInfo) -> list[tuple[str, str]]:
    """The (key, value) rows of one GPU block; unknown fields are left out."""
    rows: list[tuple[str, str]] = []
    if g.memory_total_bytes is not None:
        rows.append(("memory", f"{_gib(g.memory_free_bytes)} free of {_gib(g.memory_total_bytes)}"))
    if g.compute_capability:
        rows.append(("compute capability", g.compute_capability))
    if g.driver_version:
        cuda = f" (supports CUDA {g.cuda_driver_version})" if g.cuda_driver_version else ""
        rows.append(("driver", g.driver_version + cuda))
    if g.power_limit_w is not None or g.power_draw_w is not None:
        draw = "?" if g.power_draw_w is None else f"{g.power_draw_w:.0f} W"
        limit = "?" if g.power_limit_w is None else f"{g.power_limit_w:.0f} W"
        rows.append(("power", f"{draw} of {limit} limit"))
    if g.temperature_c is not None:
        rows.append(("temperature", f"{g.temperature_c:.0f} C"))
    if g.sm_clock_mhz is not None or g.max_sm_clock_mhz is not None:
        rows.append(("SM clock", f"{g.sm_clock_mhz or '?'} MHz (max {g.max_sm_clock_mhz or '?'})"))
    if g.memory_clock_mhz is not None:
        rows.append(("memory clock", f"{g.memory_clock_mhz} MHz"))
    if g.utilization_gpu_percent is not None:
        rows.append(("utilization", f"{g.utilization_gpu_percent} %"))
    if g.throttle_reasons:
        rows.append(("clocks held back by", ", ".join(g.throttle_reasons)))
    if g.other_processes_memory_bytes is not None:
        rows.append(("other processes", f"{_gib(g.other_processes_memory_bytes)} of GPU memory"))
    if g.pcie_gen_current is not None or g.pcie_width_current is not None:
        rows.append(
            (
                "PCIe",
                f"gen {g.pcie_gen_current or '?'} x{g.pcie_width_current or '?'} "
                f"(max gen {g.pcie_gen_max or '?'} x{g.pcie_width_max or '?'})",
            )
        )
    rows.append(("read through", g.source))
    return rows


# --------------------------------------------------------------------------- visible devices


@dataclass
class VisibleDevices:
    """How CUDA will read a CUDA_VISIBLE_DEVICES value."""

    all_visible: bool  # the variable is not set
    entries: list[int | str] = field(default_factory=list)  # indices, "GPU-..." / "MIG-..." ids
    note: str | None = None  # why some or all entries were dropped

    @property
    def hides_all(self) -> bool:
        """True when the value leaves CUDA no GPU at all."""
        return not self.all_visible and not self.entries


def parse_visible_devices(value: str | None, name: str = "CUDA_VISIBLE_DEVICES") -> VisibleDevices:
    """Parse a *_VISIBLE_DEVICES value the way CUDA does: read entries until the first invalid one."""
    if value is None:
        return VisibleDevices(all_visible=True)
    text = value.strip()
    if text == "":
        return VisibleDevices(all_visible=False, note=f"GPUs hidden: {name} is set to ''")
    entries: list[int | str] = []
    for raw in text.split(","):
        item = raw.strip()
        if re.fullmatch(r"\d+", item):
            entries.append(int(item))
        elif item.startswith(("GPU-", "MIG-")) and len(item) > 4:
            entries.append(item)
        else:
            # CUDA stops at the first entry it cannot use ("-1" is the usual way to hide all).
            break
    if not entries:
        if text == "-1":
            note = f"GPUs hidden: {name} is set to '-1'"
        else:
            note = (
                f"{name}={value!r} is not a list of GPU indices or UUIDs; "
                f"{'CUDA' if name == 'CUDA_VISIBLE_DEVICES' else 'the runtime'} will see no GPU"
            )
        return VisibleDevices(all_visible=False, note=note)
    if len(entries) < len(text.split(",")):
        kept = ",".join(str(e) for e in entries)
        return VisibleDevices(
            all_visible=False,
            entries=entries,
            note=f"{name}={value!r}: only the entries before the first invalid one count ({kept})",
        )
    return VisibleDevices(all_visible=False, entries=entries)


def _select_visible(
    indices_uuids: list[tuple[int, str | None]], visible: VisibleDevices
) -> tuple[list[int], list[str]]:
    """Return the NVML indices that CUDA_VISIBLE_DEVICES leaves visible, in its order, and notes."""
    if visible.all_visible:
        return [i for i, _ in indices_uuids], []
    known = {i for i, _ in indices_uuids}
    chosen: list[int] = []
    notes: list[str] = []
    for entry in visible.entries:
        if isinstance(entry, int):
            if entry not in known:
                # CUDA also stops at an index that does not exist.
                notes.append(f"CUDA_VISIBLE_DEVICES names GPU {entry}, which does not exist")
                break
            match = entry
        elif entry.startswith("MIG-"):
            # MIG instances are slices of a GPU; NVML lists the parent, which we cannot pick out here.
            notes.append("CUDA_VISIBLE_DEVICES names MIG instances; all GPUs NVML lists are shown")
            return [i for i, _ in indices_uuids], notes
        else:
            # CUDA accepts any unique prefix of a GPU UUID.
            hits = [i for i, uuid in indices_uuids if uuid and uuid.startswith(entry)]
            if len(hits) != 1:
                notes.append(f"CUDA_VISIBLE_DEVICES entry {entry!r} matches {len(hits)} GPUs")
                break
            match = hits[0]
        if match not in chosen:
            chosen.append(match)
    return chosen, notes


# --------------------------------------------------------------------------- NVML


def _text(value: Any) -> str:
    """NVML returns bytes in old nvidia-ml-py releases and str in new ones."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _cuda_version_from_int(value: int) -> str:
    """Turn NVML's CUDA version integer (12040) into "12.4"."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def _nvml_init_note(nvml: Any, exc: BaseException) -> str:
    """Explain why nvmlInit failed, in the reader's terms."""
    if isinstance(exc, getattr(nvml, "NVMLError_LibraryNotFound", ())):
        return "NVML library not found (no NVIDIA driver installed?)"
    if isinstance(exc, getattr(nvml, "NVMLError_DriverNotLoaded", ())):
        return "NVIDIA driver is installed but not loaded (reboot, or check `nvidia-smi`)"
    if isinstance(exc, getattr(nvml, "NVMLError_NoPermission", ())):
        return "NVML: no permission to talk to the NVIDIA driver"
    return f"NVML could not start: {exc}"


def _read_field(nvml: Any, label: str, notes: list[str], fn: Any, *args: Any) -> Any:
    """Call one NVML function; on any failure record a note and return None."""
    try:
        return fn(*args)
    except Exception as exc:  # one unsupported call must not lose the whole GPU
        if isinstance(exc, getattr(nvml, "NVMLError_NotSupported", ())):
            notes.append(f"{label}: not supported by this GPU or driver")
        else:
            notes.append(f"{label} could not be read: {exc}")
        return None


def _milli_to_unit(value: Any) -> float | None:
    """Convert NVML's milliwatts to watts, passing None through."""
    return None if value is None else value / 1000


def _decode_throttle_reasons(nvml: Any, bits: int) -> list[str]:
    """Name the set bits of an NVML clocks-event (throttle) reasons mask; skip unknown constants."""
    names = []
    for name in THROTTLE_REASONS:
        mask = getattr(nvml, f"nvmlClocksEventReason{name}", None)
        if mask is None:
            mask = getattr(nvml, f"nvmlClocksThrottleReason{name}", None)
        if mask is not None and int(bits) & int(mask):
            names.append(name)
    return names


def _nvml_throttle_reasons(
    nvml: Any, handle: Any, label: str, notes: list[str]
) -> list[str] | None:
    """Why the clocks are held back: the "ClocksEvent" call first, then the older "Throttle" one."""
    errors = []
    for fn_name in (
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
    ):
        fn = getattr(nvml, fn_name, None)
        if fn is None:
            continue
        try:
            return _decode_throttle_reasons(nvml, fn(handle))
        except Exception as exc:
            errors.append(exc)
    if not errors:
        notes.append(f"{label} clock throttle reasons: this nvidia-ml-py has no call for them")
    elif isinstance(errors[-1], getattr(nvml, "NVMLError_NotSupported", ())):
        notes.append(f"{label} clock throttle reasons: not supported by this GPU or driver")
    else:
        notes.append(f"{label} clock throttle reasons could not be read: {errors[-1]}")
    return None


def _other_processes_memory(processes: Any) -> int:
    """GPU memory held by the compute processes in ``processes`` other than this one."""
    me = os.getpid()
    # usedGpuMemory is None where the driver does not tell (e.g. under WSL or without permission).
    return sum(int(p.usedGpuMemory or 0) for p in processes if p.pid != me)


def _nvml_device(nvml: Any, index: int, handle: Any, notes: list[str]) -> GPUInfo:
    """Read every field of one NVML device, each in its own try."""
    label = f"GPU {index}"

    def read(what: str, fn_name: str, *args: Any) -> Any:
        fn = getattr(nvml, fn_name, None)
        if fn is None:
            notes.append(f"{label} {what}: this nvidia-ml-py has no {fn_name}")
            return None
        return _read_field(nvml, f"{label} {what}", notes, fn, handle, *args)

    name = read("name", "nvmlDeviceGetName")
    mem = read("memory", "nvmlDeviceGetMemoryInfo")
    cc = read("compute capability", "nvmlDeviceGetCudaComputeCapability")
    sm_clock = getattr(nvml, "NVML_CLOCK_SM", 1)
    mem_clock = getattr(nvml, "NVML_CLOCK_MEM", 2)
    temperature = read(
        "temperature", "nvmlDeviceGetTemperature", getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
    )
    utilization = read("utilization", "nvmlDeviceGetUtilizationRates")
    processes = read("compute processes", "nvmlDeviceGetComputeRunningProcesses")
    return GPUInfo(
        index=index,
        name=_text(name) if name is not None else f"NVIDIA GPU {index}",
        memory_total_bytes=int(mem.total) if mem is not None else None,
        memory_free_bytes=int(mem.free) if mem is not None else None,
        compute_capability=f"{cc[0]}.{cc[1]}" if cc is not None else None,
        power_limit_w=_milli_to_unit(read("power limit", "nvmlDeviceGetPowerManagementLimit")),
        power_draw_w=_milli_to_unit(read("power draw", "nvmlDeviceGetPowerUsage")),
        temperature_c=float(temperature) if temperature is not None else None,
        sm_clock_mhz=read("SM clock", "nvmlDeviceGetClockInfo", sm_clock),
        max_sm_clock_mhz=read("max SM clock", "nvmlDeviceGetMaxClockInfo", sm_clock),
        memory_clock_mhz=read("memory clock", "nvmlDeviceGetClockInfo", mem_clock),
        pcie_gen_current=read("PCIe generation", "nvmlDeviceGetCurrPcieLinkGeneration"),
        pcie_gen_max=read("max PCIe generation", "nvmlDeviceGetMaxPcieLinkGeneration"),
        pcie_width_current=read("PCIe width", "nvmlDeviceGetCurrPcieLinkWidth"),
        pcie_width_max=read("max PCIe width", "nvmlDeviceGetMaxPcieLinkWidth"),
        source="nvml",
        utilization_gpu_percent=int(utilization.gpu) if utilization is not None else None,
        throttle_reasons=_nvml_throttle_reasons(nvml, handle, label, notes),
        other_processes_memory_bytes=(
            _other_processes_memory(processes) if processes is not None else None
        ),
    )


def _nvml_system(nvml: Any, notes: list[str]) -> tuple[str | None, str | None]:
    """Read the driver version and the highest CUDA version it supports."""
    driver = _read_field(nvml, "driver version", notes, nvml.nvmlSystemGetDriverVersion)
    cuda = _read_field(nvml, "CUDA driver version", notes, nvml.nvmlSystemGetCudaDriverVersion)
    return (
        _text(driver) if driver is not None else None,
        _cuda_version_from_int(int(cuda)) if cuda is not None else None,
    )


def _nvml_gpus(
    visible: VisibleDevices, nvml: Any = None
) -> tuple[list[GPUInfo] | None, int, list[str]]:
    """List GPUs through NVML, filtered by CUDA_VISIBLE_DEVICES.

    Returns (gpus, present, notes); gpus is None when NVML itself is unavailable, so that the
    caller can fall back to torch. ``present`` counts every GPU NVML saw, hidden or not.
    """
    if nvml is None:
        try:
            import pynvml as nvml  # from the nvidia-ml-py package
        except ImportError:
            return None, 0, ["nvidia-ml-py (pynvml) is not installed"]
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return None, 0, [_nvml_init_note(nvml, exc)]
    notes: list[str] = []
    try:
        return _nvml_list(nvml, visible, notes)
    except Exception as exc:  # never let a driver oddity escape detect()
        notes.append(f"NVML failed while listing GPUs: {exc}")
        return [], 0, notes
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def _nvml_list(
    nvml: Any, visible: VisibleDevices, notes: list[str]
) -> tuple[list[GPUInfo], int, list[str]]:
    """Count, filter and read the NVML devices (NVML already initialised)."""
    count = _read_field(nvml, "GPU count", notes, nvml.nvmlDeviceGetCount)
    if count is None:
        return [], 0, notes
    handles: dict[int, Any] = {}
    uuids: list[tuple[int, str | None]] = []
    for i in range(int(count)):
        handle = _read_field(nvml, f"GPU {i} handle", notes, nvml.nvmlDeviceGetHandleByIndex, i)
        if handle is None:
            continue
        handles[i] = handle
        uuid = _read_field(nvml, f"GPU {i} UUID", notes, nvml.nvmlDeviceGetUUID, handle)
        uuids.append((i, _text(uuid) if uuid is not None else None))
    chosen, select_notes = _select_visible(uuids, visible)
    notes.extend(select_notes)
    if visible.note:
        notes.append(visible.note)
    driver, cuda = _nvml_system(nvml, notes)
    gpus = []
    for i in chosen:
        gpu = _nvml_device(nvml, i, handles[i], notes)
        gpu.driver_version, gpu.cuda_driver_version = driver, cuda
        gpu.uuid = dict(uuids).get(i)
        gpus.append(gpu)
    return gpus, int(count), notes


# --------------------------------------------------------------------------- torch


def _import_torch() -> Any | None:
    """Import torch, or return None when it is not installed."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def _call(fn: Any, default: Any, notes: list[str] | None = None) -> Any:
    """Call a torch probe; collect its warnings as notes and return ``default`` on failure."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
        except Exception as exc:
            result = default
            if notes is not None:
                notes.append(f"torch: {exc}")
    if notes is not None:
        for w in caught:
            text = str(w.message).strip().splitlines()[0] if str(w.message).strip() else ""
            if text and f"torch: {text}" not in notes:
                notes.append(f"torch: {text}")
    return result


def _torch_build(torch: Any, mps_built: bool, xpu_available: bool) -> str:
    """Name what this torch wheel was built for."""
    if getattr(torch.version, "hip", None):
        return "rocm"
    if getattr(torch.version, "cuda", None):
        return "cuda"
    if mps_built:
        return "mps"
    if xpu_available or getattr(torch.version, "xpu", None):
        return "xpu"
    return "cpu-only"


def _torch_info(torch: Any = None) -> tuple[TorchInfo, list[str]]:
    """Describe the torch build; never raises."""
    torch = torch if torch is not None else _import_torch()
    if torch is None:
        note = "torch is not installed, so only the CPU can be used (pip install torch)"
        return TorchInfo(installed=False, build="not installed"), [note]
    notes: list[str] = []
    cuda_available = bool(_call(torch.cuda.is_available, False, notes))
    mps = getattr(torch.backends, "mps", None)
    mps_built = bool(_call(mps.is_built, False)) if mps is not None else False
    mps_available = bool(_call(mps.is_available, False)) if mps is not None else False
    xpu = getattr(torch, "xpu", None)
    xpu_available = bool(_call(xpu.is_available, False)) if xpu is not None else False
    info = TorchInfo(
        installed=True,
        version=str(getattr(torch, "__version__", "?")),
        cuda_version=getattr(torch.version, "cuda", None),
        hip_version=getattr(torch.version, "hip", None),
        cuda_available=cuda_available,
        mps_built=mps_built,
        mps_available=mps_available,
        xpu_available=xpu_available,
        arch_list=list(_call(torch.cuda.get_arch_list, []) or []),
    )
    info.build = _torch_build(torch, mps_built, xpu_available)
    info.device_count = _torch_device_count(torch, info)
    notes.extend(_torch_notes(info))
    return info, notes


def _torch_device_count(torch: Any, info: TorchInfo) -> int:
    """How many devices of the best backend torch can use."""
    if info.cuda_available:
        return int(_call(torch.cuda.device_count, 0))
    if info.xpu_available:
        return int(_call(torch.xpu.device_count, 0))
    return 1 if info.mps_available else 0


def _torch_notes(info: TorchInfo) -> list[str]:
    """Sentences that explain why torch cannot use an accelerator."""
    if info.build == "cpu-only":
        return [f"torch {info.version} is a CPU-only build"]
    if info.build in ("cuda", "rocm") and not info.cuda_available:
        return [f"torch {info.version} is a {info.build.upper()} build, but it sees no usable GPU"]
    if info.build == "mps" and not info.mps_available:
        return ["torch was built with MPS, but MPS is not available (needs macOS on Apple silicon)"]
    return []


def _backend(info: TorchInfo) -> str:
    """The best backend torch can use now."""
    if info.cuda_available:
        return "rocm" if info.hip_version else "cuda"
    if info.mps_available:
        return "mps"
    if info.xpu_available:
        return "xpu"
    return "cpu"


def _torch_gpus(torch: Any, info: TorchInfo, notes: list[str]) -> list[GPUInfo]:
    """List GPUs through torch, for ROCm and for NVIDIA machines without NVML."""
    if torch is None:
        return []
    if info.cuda_available:
        return [_torch_cuda_device(torch, i, notes) for i in range(info.device_count)]
    if info.mps_available:
        total = _call(lambda: torch.mps.recommended_max_memory(), None)
        return [GPUInfo(index=0, name="Apple GPU (MPS)", memory_total_bytes=total, source="torch")]
    return []


def _torch_cuda_device(torch: Any, index: int, notes: list[str]) -> GPUInfo:
    """One CUDA/ROCm device as torch describes it."""
    props = _call(lambda: torch.cuda.get_device_properties(index), None, notes)
    if props is None:
        return GPUInfo(index=index, name=f"GPU {index}", source="torch")
    free = _call(lambda: torch.cuda.mem_get_info(index), None, notes)
    return GPUInfo(
        index=index,
        name=str(props.name),
        memory_total_bytes=int(props.total_memory),
        memory_free_bytes=int(free[0]) if free is not None else None,
        compute_capability=f"{props.major}.{props.minor}",
        source="torch",
    )


# --------------------------------------------------------------------------- CPU and RAM


def _read_meminfo(path: str = "/proc/meminfo") -> tuple[int, int | None] | None:
    """Read (MemTotal, MemAvailable) in bytes from a Linux meminfo file; None if unreadable."""
    values: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if key in ("MemTotal", "MemAvailable") and parts and parts[0].isdigit():
                    values[key] = int(parts[0]) * 1024  # the file says kB and means KiB
    except OSError:
        return None
    if "MemTotal" not in values:
        return None
    return values["MemTotal"], values.get("MemAvailable")


def _ram(meminfo_path: str, notes: list[str]) -> tuple[int | None, int | None]:
    """Total and available RAM: /proc/meminfo first, then psutil."""
    parsed = _read_meminfo(meminfo_path)
    if parsed is not None:
        return parsed
    try:
        import psutil

        vm = psutil.virtual_memory()
        return int(vm.total), int(vm.available)
    except Exception as exc:
        notes.append(f"RAM size unknown: no {meminfo_path} and psutil failed ({exc})")
        return None, None


def _read_cpuinfo(path: str = "/proc/cpuinfo") -> tuple[str | None, set[str] | None]:
    """Read the CPU model name and the feature flags from a Linux cpuinfo file."""
    model, flags, _ = _read_cpuinfo_fields(path)
    return model, flags


def _read_cpuinfo_fields(path: str) -> tuple[str | None, set[str] | None, float | None]:
    """Model name, feature flags and the first 'cpu MHz' value of a Linux cpuinfo file."""
    model: str | None = None
    flags: set[str] | None = None
    mhz: float | None = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key in ("flags", "Features") and flags is None:
                    flags = set(value.split())  # x86 says "flags", ARM says "Features"
                elif key == "cpu MHz" and mhz is None:
                    try:
                        mhz = float(value)
                    except ValueError:
                        pass
    except OSError:
        return None, None, None
    return model, flags, mhz


def _read_cpu_flags(path: str = "/proc/cpuinfo") -> set[str] | None:
    """Return the CPU feature flags from a Linux cpuinfo file, or None if unreadable."""
    return _read_cpuinfo(path)[1]


def _extensions_from_flags(flags: set[str]) -> list[str]:
    """Map Linux cpuinfo flags to the vector extensions the course talks about."""
    found = {
        "AVX2": "avx2" in flags,
        "AVX-512": "avx512f" in flags,
        "AVX-512 BF16": "avx512_bf16" in flags,
        "AMX": bool({"amx_tile", "amx_bf16"} & flags),
        "NEON": "asimd" in flags,
        "FMA": "fma" in flags,
    }
    return [name for name in VECTOR_EXTENSIONS if found[name]]


def _macos_sysctl(prefix: str) -> dict[str, str]:
    """Read ``sysctl <prefix>`` on macOS as a dict; empty on any failure."""
    try:
        out = subprocess.run(
            ["sysctl", prefix], capture_output=True, text=True, timeout=2, check=False
        ).stdout
    except Exception:
        return {}
    pairs = (line.partition(":") for line in out.splitlines())
    return {k.strip(): v.strip() for k, _, v in pairs if k.strip()}


def _extensions_from_sysctl(values: Mapping[str, str], machine: str) -> list[str]:
    """Map macOS hw.optional.* values to vector extensions."""
    on = {k for k, v in values.items() if v == "1"}
    found = {
        "AVX2": "hw.optional.avx2_0" in on,
        "AVX-512": "hw.optional.avx512f" in on,
        "AVX-512 BF16": False,
        "AMX": False,
        "NEON": machine == "arm64" or "hw.optional.neon" in on,
        "FMA": "hw.optional.fma" in on,
    }
    return [name for name in VECTOR_EXTENSIONS if found[name]]


def _core_counts() -> tuple[int | None, int | None, float | None]:
    """Physical and logical cores and the max frequency, through psutil where it works."""
    physical = logical = None
    freq = None
    try:
        import psutil

        physical = psutil.cpu_count(logical=False)
        logical = psutil.cpu_count(logical=True)
        f = psutil.cpu_freq()
        freq = float(f.max) if f is not None and f.max else None
    except Exception:
        pass
    return physical, logical or os.cpu_count(), freq


def _cpu_info(cpuinfo_path: str) -> CPUInfo:
    """Describe the CPU from /proc/cpuinfo (Linux), sysctl (macOS) and psutil."""
    model, flags, reported_mhz = _read_cpuinfo_fields(cpuinfo_path)
    extensions = _extensions_from_flags(flags) if flags is not None else []
    if sys.platform == "darwin":
        model = model or _macos_sysctl("machdep.cpu.brand_string").get("machdep.cpu.brand_string")
        extensions = extensions or _extensions_from_sysctl(
            _macos_sysctl("hw.optional"), platform.machine()
        )
    physical, logical, freq = _core_counts()
    return CPUInfo(
        model=model or platform.processor() or None,
        physical_cores=physical,
        logical_cores=logical,
        vector_extensions=extensions,
        max_frequency_mhz=freq,
        reported_frequency_mhz=reported_mhz,
    )


# --------------------------------------------------------------------------- detect


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

    gpus, present, nvml_notes = _nvml_gpus(cuda_visible, nvml)
    notes.extend(nvml_notes)
    torch = torch_module if torch_module is not None else _import_torch()
    torch_info, torch_notes = _torch_info(torch)
    notes.extend(torch_notes)
    if gpus is None:  # NVML unavailable: torch is the only other witness (ROCm, MPS, no NVML)
        gpus = _torch_gpus(torch, torch_info, notes)
        if cuda_visible.note:
            notes.append(cuda_visible.note)
    notes.extend(_visibility_notes(visible_devices))
    ram_total, ram_available = _ram(meminfo_path, notes)
    return HardwareReport(
        os=platform.platform(),
        python=platform.python_version(),
        torch=torch_info,
        cpu=_cpu_info(cpuinfo_path),
        ram_total_bytes=ram_total,
        ram_available_bytes=ram_available,
        gpus=gpus,
        backend=_backend(torch_info),
        in_colab=_in_colab(env),
        visible_devices=visible_devices,
        nvidia_device_files=_nvidia_device_files(dev_dir),
        notes=[n for n in notes if n],
        gpus_present=max(present, len(gpus)),
        amd_device_files=os.path.exists(os.path.join(dev_dir, "kfd")),
    )


# --------------------------------------------------------------------------- pick_device

_DEVICE_CHOICES = "'auto', 'cpu', 'cuda', 'cuda:N', 'mps', 'xpu'"


def pick_device(name: str = "auto") -> Any:
    """Return the ``torch.device`` for a notebook's ``device`` parameter.

    "auto" picks cuda (ROCm included) > mps > xpu > cpu. A name that is unknown, or a device
    this machine cannot use, raises GpulabConfigError with one sentence saying what to do.
    """
    import torch

    if not isinstance(name, str):
        raise GpulabConfigError(
            f"device={name!r} ({type(name).__name__}) is not a device name; "
            f"use one of {_DEVICE_CHOICES}."
        )
    key = name.strip()
    if key == "auto":
        return torch.device(_auto_device(torch))
    if key == "cpu":
        return torch.device("cpu")
    match = re.fullmatch(r"cuda(?::(\d+))?", key)
    if match:
        _require_cuda(torch, key, int(match.group(1)) if match.group(1) else None)
        return torch.device(key)
    if key == "mps":
        _require_mps(torch)
        return torch.device("mps")
    if key == "xpu":
        _require_xpu(torch)
        return torch.device("xpu")
    raise GpulabConfigError(f"device={name!r} is not a known device; use one of {_DEVICE_CHOICES}.")


def _auto_device(torch: Any) -> str:
    """The best available device name."""
    if _call(torch.cuda.is_available, False):
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and _call(mps.is_available, False):
        return "mps"
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and _call(xpu.is_available, False):
        return "xpu"
    return "cpu"


def _require_cuda(torch: Any, key: str, ordinal: int | None) -> None:
    """Raise GpulabConfigError unless CUDA (or ROCm) device ``key`` can be used."""
    asked = f"device={key!r} was asked for, but"
    if not (torch.version.cuda or getattr(torch.version, "hip", None)):
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and _call(mps.is_built, False):
            raise GpulabConfigError(
                f"{asked} this torch build has no CUDA support (torch {torch.__version__} is a "
                "macOS build); use device='mps' or device='auto'."
            )
        raise GpulabConfigError(
            f"{asked} this torch build is CPU-only (torch {torch.__version__}); "
            "install a CUDA build of torch or use device='auto'."
        )
    if not _call(torch.cuda.is_available, False):
        raise GpulabConfigError(f"{asked} {_why_no_cuda_gpu()}")
    count = int(_call(torch.cuda.device_count, 0))
    if ordinal is not None and ordinal >= count:
        raise GpulabConfigError(
            f"{asked} torch sees only {count} GPU(s) (cuda:0 to cuda:{count - 1}); "
            "pick one of those or use device='cuda'."
        )


def _why_no_cuda_gpu() -> str:
    """Say why a CUDA build of torch sees no GPU, and what to do."""
    for var in VISIBILITY_VARS:
        value = os.environ.get(var)
        if value is not None and parse_visible_devices(value, var).hides_all:
            return (
                f"no CUDA GPU is visible ({var}={value!r}); unset {var} "
                "(or pick the gpulab kernel instead of gpulab-cpu) or use device='auto'."
            )
    return (
        "torch.cuda.is_available() is False (no GPU or no working NVIDIA driver found); "
        "run `python -m gpulab doctor` to see why, or use device='auto'."
    )


def _require_mps(torch: Any) -> None:
    """Raise GpulabConfigError unless Apple's MPS backend can be used."""
    mps = getattr(torch.backends, "mps", None)
    if mps is None or not _call(mps.is_built, False):
        raise GpulabConfigError(
            f"device='mps' was asked for, but this torch build has no MPS support "
            f"(torch {torch.__version__}; MPS needs macOS on Apple silicon); use device='auto'."
        )
    if not _call(mps.is_available, False):
        raise GpulabConfigError(
            "device='mps' was asked for, but MPS is not available on this Mac "
            "(it needs Apple silicon and macOS 12.3 or later); use device='auto'."
        )


def _require_xpu(torch: Any) -> None:
    """Raise GpulabConfigError unless an Intel XPU can be used."""
    xpu = getattr(torch, "xpu", None)
    if xpu is None or not _call(xpu.is_available, False):
        raise GpulabConfigError(
            f"device='xpu' was asked for, but this torch build sees no Intel XPU "
            f"(torch {torch.__version__}); install the XPU build of torch or use device='auto'."
        )


def cpu_cache_sizes(sysfs: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[str, int]:
    """Data and unified cache sizes of one core in bytes, e.g. {"L1d": 49152, "L2": ..., "L3": ...}.

    Read from Linux sysfs; empty where it is not exposed (macOS, Windows, some containers).
    In a VM the last level is the host's, shared by every core of the socket.
    """
    sizes: dict[str, int] = {}
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    for index in sorted(Path(sysfs).glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        number, unit = (size[:-1], size[-1]) if size[-1] in units else (size, "")
        try:
            value = int(number) * units.get(unit, 1)
        except ValueError:
            continue
        sizes[f"L{level}d" if kind == "Data" else f"L{level}"] = value
    return sizes
