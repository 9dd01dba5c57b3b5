"""What ``detect()`` reports about a machine: the report's dataclasses and how they render.

Introduced in the course's first chapter (the hardware summary at the top of every notebook).
A report holds what could be read and, in ``notes``, why anything could not: a field that a
driver returned in an odd form (``"N/A"``, NaN, a negative clock) is ``None``, never a wrong
number, so nothing downstream (the doctor's rules, ``--json``) trips over it. The doctor's
``Finding`` lives here too, next to the report it is about (``gpulab.rules`` makes them).
"""

from __future__ import annotations

import dataclasses
import html
import math
from dataclasses import dataclass, field
from typing import Any

from gpulab.core.constraints import show
from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import GIB
from gpulab.core.validate import checked, lenient

__all__ = [
    "CLOCK_FIELDS",
    "SEVERITIES",
    "THROTTLE_REASONS",
    "VECTOR_EXTENSIONS",
    "CPUInfo",
    "Finding",
    "GPUInfo",
    "HardwareReport",
    "TorchInfo",
    "findings_html",
    "json_safe",
    "plausible",
    "plausible_clock_mhz",
]

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

# Plausible ranges of GPUInfo's numeric fields: a value outside is a driver's placeholder
# ("N/A", 0xFFFFFFFF) and becomes None rather than a wrong number in a table or a rule.
_RANGES: dict[str, tuple[type, float, float]] = {
    "memory_total_bytes": (int, 0, 2**50),
    "memory_free_bytes": (int, 0, 2**50),
    "power_limit_w": (float, 0, 10_000),
    "power_draw_w": (float, 0, 10_000),
    "temperature_c": (float, -60, 200),
    "sm_clock_mhz": (int, 0, 20_000),
    "max_sm_clock_mhz": (int, 0, 20_000),
    "memory_clock_mhz": (int, 0, 50_000),
    "pcie_gen_current": (int, 1, 10),
    "pcie_gen_max": (int, 1, 10),
    "pcie_width_current": (int, 1, 64),
    "pcie_width_max": (int, 1, 64),
    "utilization_gpu_percent": (int, 0, 100),
    "other_processes_memory_bytes": (int, 0, 2**50),
}


_MAX_CPU_CLOCK_MHZ = 20_000  # no CPU clocks above 20 GHz; a larger figure is a misreading


@lenient("reads any value a driver reports: a placeholder or a wrong type is None")
def plausible(name: str, value: Any) -> int | float | None:
    """``value`` as the type GPUInfo's field ``name`` holds, or None when it is not a sane one."""
    if not isinstance(name, str) or name not in _RANGES:  # the field is the caller's to get right
        raise GpulabConfigError(
            f"name={show(name)} is not a numeric GPUInfo field; use one of "
            f"{', '.join(repr(n) for n in _RANGES)}",
            "name",
        )
    kind, low, high = _RANGES[name]
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(number) or not low <= number <= high:
        return None
    if kind is int:
        return int(number) if number == int(number) else None
    return number


def _capability(value: Any) -> str | None:
    """ "8.9" stays; anything that is not two non-negative numbers (e.g. "-1.-1") is None."""
    if not isinstance(value, str):
        return None
    major, dot, minor = value.partition(".")
    return value if dot and major.isdigit() and minor.isdigit() else None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


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

    def __post_init__(self) -> None:
        """Keep only sane values: a placeholder or a wrong type becomes None (see _RANGES)."""
        for name in _RANGES:
            object.__setattr__(self, name, plausible(name, getattr(self, name)))
        total, free = self.memory_total_bytes, self.memory_free_bytes
        if total is not None and free is not None and free > total:
            self.memory_free_bytes = None  # more free than the card has: a driver's slip
        self.compute_capability = _capability(self.compute_capability)
        for name in ("driver_version", "cuda_driver_version", "uuid"):
            setattr(self, name, _text_or_none(getattr(self, name)))
        if not isinstance(self.name, str) or not self.name.strip():
            self.name = f"GPU {self.index}"
        reasons = self.throttle_reasons
        if reasons is not None:
            ok = isinstance(reasons, (list, tuple))
            self.throttle_reasons = [r for r in reasons if r in THROTTLE_REASONS] if ok else None


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
    # "cuda", "rocm", "mps", "xpu", "cpu-only", "not installed", or "unknown" (did not answer)
    build: str = "cpu-only"
    import_error: str | None = None  # why `import torch` failed, when it is installed but broken
    # The module whose failure broke torch, when it is not torch itself: "pynvml" when
    # torch.cuda's own `import pynvml` raised or hung (the fix is nvidia-ml-py's, not torch's).
    broken_by: str | None = None
    # What did not answer within detect()'s time limit, e.g. "`import torch` did not answer
    # within 60 s"; None when torch answered (or is not installed).
    did_not_answer: str | None = None


# The CPUInfo fields that hold a clock, each read from its own source.
CLOCK_FIELDS = ("max_frequency_mhz", "reported_frequency_mhz", "sysfs_max_frequency_mhz")


@dataclass
class CPUInfo:
    """The host CPU: model, core counts and the SIMD extensions that matter for CPU inference."""

    model: str | None
    physical_cores: int | None
    logical_cores: int | None
    vector_extensions: list[str]  # subset of VECTOR_EXTENSIONS; empty when unknown
    # psutil.cpu_freq().max: on Linux the governor's upper limit (scaling_max_freq)
    max_frequency_mhz: float | None = None
    # The highest "cpu MHz" among the cores of /proc/cpuinfo: what each core ran at when it was
    # read; in a VM, where no maximum is exposed, the host's nominal clock (turbo can be higher).
    reported_frequency_mhz: float | None = None
    # The highest cpuinfo_max_freq under /sys/devices/system/cpu/cpu*/cpufreq: the hardware's
    # maximum (single-core turbo) that the kernel's cpufreq driver reports; absent in most VMs.
    sysfs_max_frequency_mhz: float | None = None

    def __post_init__(self) -> None:
        """Keep only sane clocks: 0 MHz (a VM that hides it), NaN or a negative one is None."""
        for name in CLOCK_FIELDS:
            setattr(self, name, plausible_clock_mhz(getattr(self, name)))


@lenient("reads any clock a system reports: text, 0, NaN or a wrong type is None")
def plausible_clock_mhz(value: Any) -> float | None:
    """A CPU clock in MHz as a float, or None when it is not a sane one (0, NaN, negative)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        mhz = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return mhz if math.isfinite(mhz) and 0 < mhz <= _MAX_CPU_CLOCK_MHZ else None


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
        """Return the report as plain, strict JSON data (no NaN or infinity anywhere)."""
        return json_safe(dataclasses.asdict(self))

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


@lenient("copies any nested data, changing only the floats that are not finite")
def json_safe(value: Any) -> Any:
    """A copy of nested data with every non-finite float replaced by None (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


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
    if t.did_not_answer:
        return f"unknown ({t.did_not_answer})"
    if not t.installed:
        return "not installed" if t.import_error is None else f"fails to import ({t.import_error})"
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
    highest = max((v for v in (c.max_frequency_mhz, c.sysfs_max_frequency_mhz) if v), default=None)
    freq = f", max {highest:.0f} MHz" if highest else ""
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


# --------------------------------------------------------------------------- findings

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One problem (or fact) about the setup, with the numbers and the fix."""

    severity: str  # "error", "warning" or "info"
    code: str  # short stable id, e.g. "cpu-only-torch"
    message: str  # what is wrong, one or two sentences with the numbers
    fix: str  # how to fix it

    def _repr_html_(self) -> str:
        """Show the finding as a one-row table in Jupyter."""
        return findings_html([self])


_SEVERITY_COLOURS = {"error": "#b00020", "warning": "#9a6700", "info": "#0969da"}


@checked
def findings_html(findings: list[Finding]) -> str:
    """An HTML table of findings for a notebook; says so when there are none."""
    if not findings:
        return "<p>No findings: no problems found.</p>"
    rows = "".join(
        f'<tr><td style="color:{_SEVERITY_COLOURS.get(f.severity, "inherit")};font-weight:bold">'
        f"{html.escape(f.severity.upper())}</td><td><code>{html.escape(f.code)}</code></td>"
        f'<td style="text-align:left">{html.escape(f.message)}</td>'
        f'<td style="text-align:left">{html.escape(f.fix)}</td></tr>'
        for f in findings
    )
    head = "<tr><th>severity</th><th>code</th><th>what</th><th>fix</th></tr>"
    return f'<table class="gpulab-findings">{head}{rows}</table>'
