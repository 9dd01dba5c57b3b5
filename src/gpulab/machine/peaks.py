"""The peaks of the device a notebook runs on: the denominators of "% of peak" (chapter 1).

A GPU's peak comes from its spec-sheet row (``gpulab.specs``), found through the name the
driver reports; a CPU's is estimated from this machine's cores, clock and vector units, with
the arithmetic and its assumptions spelled out. Nothing is made up: an unknown device gets
"peak unknown" and the reason. A known peak is a ``Peak``: a float that also names its source
and says what a measured rate above it would mean (the page prints that beside such a share).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.core.units import format_rate
from gpulab.core.validate import checked
from gpulab.machine.report import HardwareReport, plausible_clock_mhz
from gpulab.reference.specs import PeakDtype, find_gpu

if TYPE_CHECKING:  # torch is imported where a device is used, not by this layer's formulas
    import torch

__all__ = ["CPUPeakEstimate", "Peak", "cpu_peak", "device_peak"]

# fp32 FLOPs per cycle per core = SIMD lanes x FMA units x 2 FLOPs per FMA.
_CPU_VECTOR = (
    (
        "AVX-512",
        64,
        "AVX-512: 16 fp32 lanes x 2 FMA units x 2 FLOPs per FMA, assuming two AVX-512 FMA "
        "units per core as on server Xeons; parts with one unit have half this",
    ),
    (
        "AVX2",
        32,
        "AVX2+FMA: 8 fp32 lanes x 2 FMA units x 2 FLOPs per FMA, assuming two FMA ports per core",
    ),
    (
        "NEON",
        16,
        "NEON: 4 fp32 lanes x 2 FMA pipes x 2 FLOPs per FMA, assuming two NEON FMA pipes per "
        "core; Apple's performance cores have four, twice this",
    ),
)
# Intel: a 4th-gen Xeon core's AMX unit does 2048 INT8 or 1024 BF16 operations per cycle
# (Intel's AMX figures, as quoted in Wikipedia's "Advanced Matrix Extensions").
_AMX_BF16_PER_CYCLE = 1024


CPUINFO_CLOCK = "/proc/cpuinfo's cpu MHz"
# Where a CPU clock comes from, by CPUInfo field, in the order that wins a tie: its name as a
# page shows it, and what that clock is.
_CLOCK_SOURCES = (
    (
        "sysfs_max_frequency_mhz",
        "sysfs cpuinfo_max_freq",
        "the hardware's maximum as the kernel's cpufreq driver reports it (the single-core turbo)",
    ),
    ("max_frequency_mhz", "psutil.cpu_freq().max", "the operating system's upper clock limit"),
    (
        "reported_frequency_mhz",
        CPUINFO_CLOCK,
        "the highest clock a core showed when it was read; in a VM, the host's nominal clock",
    ),
)
_NO_MAXIMUM = " (no maximum is exposed here)"


class Peak(float):
    """A peak in FLOP/s that says where it comes from; a plain float to every calculation.

    ``source`` names the figure ("RTX 4090 spec sheet", "CPU estimate: ..."); ``above`` says
    what a measured rate above it means, so ``roofline.percent_of_peak`` can put that on the
    page beside a share over 100 %.
    """

    source: str
    above: str

    def __new__(cls, value: float, source: str, above: str) -> Peak:
        peak = super().__new__(cls, value)
        peak.source, peak.above = source, above
        return peak

    def __getnewargs__(self) -> tuple[float, str, str]:
        return float(self), self.source, self.above


@dataclass(frozen=True)
class CPUPeakEstimate:
    """The CPU's peak from cores x clock x FLOPs per cycle: an estimate, with its arithmetic."""

    fp32_flops: float | None  # FLOP/s, None when unknown
    bf16_flops: float | None  # FLOP/s, only with AMX or AVX-512 BF16, else None
    cores: int | None
    clock_ghz: float | None
    fp32_flops_per_cycle_per_core: int | None
    assumptions: (
        str  # the arithmetic, what it assumes and the clock's source, or "peak unknown: <why>"
    )
    is_estimate: bool = True
    clock_source: str | None = None  # where the clock was read: "/proc/cpuinfo's cpu MHz", ...
    above_peak: str = ""  # what a measured rate above this estimate means, given that source


def _highest_clock(cpu: Any) -> tuple[float | None, str | None, str]:
    """(MHz, source name, what it is) of the highest sane clock a CPUInfo holds; None when none."""
    best: tuple[float | None, str | None, str] = (None, None, "")
    found = 0
    for field, name, meaning in _CLOCK_SOURCES:
        # Checked again here, not only in CPUInfo: a clock of 0 MHz or NaN set after
        # construction must give "peak unknown", not a division by zero or a NaN peak.
        mhz = plausible_clock_mhz(getattr(cpu, field, None))
        found += mhz is not None
        if mhz is not None and (best[0] is None or mhz > best[0]):
            best = (mhz, name, meaning)
    if best[1] == CPUINFO_CLOCK and found == 1:
        best = (best[0], best[1], best[2] + _NO_MAXIMUM)
    return best


def _above_cpu_peak(
    source: str, meaning: str, ghz: float, per_cycle: float, dtype: str = "fp32"
) -> str:
    """What a rate above the CPU estimate means, given where its clock came from."""
    if source == CPUINFO_CLOCK:
        nominal = "in a VM the nominal clock" + (
            "; no maximum is exposed here" if meaning.endswith(_NO_MAXIMUM) else ""
        )
        return (
            f"the estimate uses {ghz:.2f} GHz, the clock /proc/cpuinfo shows ({nominal}), "
            f"and this CPU ran faster than that (it boosts higher), so its real peak is "
            f"above the estimate"
        )
    return (
        f"the estimate already uses the highest clock this machine reports ({ghz:.2f} GHz, "
        f"{source}), so the cores did more than the {per_cycle:.0f} {dtype} FLOP/cycle it "
        f"assumes"
    )


@checked
def cpu_peak(report: HardwareReport) -> CPUPeakEstimate:
    """Estimate the CPU's fp32 (and bf16) peak from a hardware report; never invents a figure."""
    cpu = report.cpu
    cores = cpu.physical_cores
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        cores = None
    extensions = set(cpu.vector_extensions)
    # The highest clock any source reports: a peak is a ceiling, and a VM's nominal clock
    # under-states it (a rate measured above the estimate then says so, see above_peak).
    clock_mhz, source, meaning = _highest_clock(cpu)
    clock_ghz = None if clock_mhz is None else clock_mhz / 1000

    vector = next(
        (v for v in _CPU_VECTOR if v[0] in extensions and (v[0] != "AVX2" or "FMA" in extensions)),
        None,
    )
    missing = []
    if cores is None:
        missing.append("the number of cores")
    if clock_ghz is None:
        missing.append("the clock")
    if vector is None:
        missing.append("the vector width (no AVX-512, AVX2+FMA or NEON detected)")
    if missing:
        return CPUPeakEstimate(
            fp32_flops=None,
            bf16_flops=None,
            cores=cores,
            clock_ghz=clock_ghz,
            fp32_flops_per_cycle_per_core=None if vector is None else vector[1],
            assumptions=f"peak unknown: {' and '.join(missing)} could not be read.",
            clock_source=source,
        )

    _, per_cycle, why = vector
    fp32 = cores * clock_ghz * 1e9 * per_cycle
    text = (
        f"{cores} cores x {clock_ghz:.2f} GHz x {per_cycle} FLOP/cycle ({why}) = "
        f"{format_rate(fp32)} fp32"
    )
    bf16 = None
    if "AMX" in extensions:
        bf16 = cores * clock_ghz * 1e9 * _AMX_BF16_PER_CYCLE
        text += (
            f"; bf16 with AMX: {cores} x {clock_ghz:.2f} GHz x {_AMX_BF16_PER_CYCLE} FLOP/cycle "
            f"(Intel's figure for a 4th-gen Xeon core) = {format_rate(bf16)}"
        )
    elif "AVX-512 BF16" in extensions:
        bf16 = 2 * fp32
        text += f"; bf16 with AVX-512 BF16 (2 bf16 products per fp32 lane): {format_rate(bf16)}"
    text += (
        f". Clock: {source}, {meaning}. An estimate: it assumes the FMA unit count above "
        f"and that every core holds that clock."
    )
    return CPUPeakEstimate(
        fp32_flops=fp32,
        bf16_flops=bf16,
        cores=cores,
        clock_ghz=clock_ghz,
        fp32_flops_per_cycle_per_core=per_cycle,
        assumptions=text,
        clock_source=source,
        above_peak=_above_cpu_peak(source, meaning, clock_ghz, per_cycle),
    )


def _device_name(report: HardwareReport, device: Any) -> str:
    """'cuda', 'cuda:1', 'cpu', 'mps' ... from a string or torch.device; 'auto' -> the backend."""
    name = str(device).strip().lower()
    if name == "auto":
        return {"cuda": "cuda", "rocm": "cuda", "mps": "mps", "cpu": "cpu"}.get(
            report.backend, report.backend
        )
    return name


def _gpu_peak(
    report: HardwareReport, name: str, dtype: str
) -> tuple[float | None, float | None, str]:
    """Peak of the CUDA/ROCm device ``name`` ('cuda' or 'cuda:N') from its spec-sheet row."""
    match = re.fullmatch(r"cuda(?::(\d+))?", name)
    index = int(match.group(1)) if match and match.group(1) else 0
    if index >= len(report.gpus):
        return None, None, f"peak unknown: the hardware report lists no GPU {name}"
    gpu = report.gpus[index]
    spec = find_gpu(gpu.name, memory_bytes=gpu.memory_total_bytes)
    if spec is None:
        return None, None, f"peak unknown: {gpu.name!r} is not in gpulab's spec table"
    peak = spec.peak_flops(dtype)
    label = f"{spec.name} spec sheet"
    if peak is None:
        label += f" (no {dtype} peak published)"
        return None, spec.bandwidth_bytes_per_s, label
    return Peak(peak, label, _above_sheet(spec, dtype)), spec.bandwidth_bytes_per_s, label


def _above_sheet(spec: Any, dtype: str) -> str:
    """What a rate above a spec sheet's peak means."""
    clock = f" at its {spec.boost_clock_ghz:g} GHz boost clock" if spec.boost_clock_ghz else ""
    faster = " (TF32 on Tensor Cores, for an fp32 product)" if dtype == "fp32" else ""
    return (
        f"the {spec.name} spec sheet gives its {dtype} peak{clock}, so the device ran above "
        f"that clock or in a faster mode than plain {dtype}{faster}"
    )


def _mps_peak(report: HardwareReport, dtype: str) -> tuple[float | None, float | None, str]:
    """Peak of an Apple GPU, found through the chip name the CPU reports ("Apple M3 Max")."""
    model = report.cpu.model or ""
    spec = find_gpu(model) if model.lower().startswith("apple") else None
    if spec is None:
        return None, None, f"peak unknown: no spec-table row for the Apple chip {model!r}"
    cores = report.cpu.physical_cores or report.cpu.logical_cores
    if spec.cpu_cores is not None and cores != spec.cpu_cores:
        # The same chip name covers bins with fewer GPU cores and less bandwidth.
        why = (
            f"peak unknown: the table's {spec.name} row is the {spec.cpu_cores}-core-CPU bin, "
            f"this one reports {cores} cores"
        )
        return None, None, why
    peak = spec.peak_flops(dtype)
    label = f"{spec.name} spec sheet"
    if peak is None:
        label += " (Apple publishes bandwidth, not FLOP/s)"
        return None, spec.bandwidth_bytes_per_s, label
    return Peak(peak, label, _above_sheet(spec, dtype)), spec.bandwidth_bytes_per_s, label


@checked
def device_peak(
    report: HardwareReport, device: torch.device | str, dtype: PeakDtype = "fp32"
) -> tuple[float | None, float | None, str]:
    """(peak FLOP/s, peak bytes/s, label) for the device a notebook runs on; None when unknown."""
    name = _device_name(report, device)
    if name == "cuda" or name.startswith("cuda:"):
        return _gpu_peak(report, name, dtype)
    if name == "mps":
        return _mps_peak(report, dtype)
    if name == "cpu":
        estimate = cpu_peak(report)
        if estimate.fp32_flops is None:
            return None, None, estimate.assumptions
        peak = {"fp32": estimate.fp32_flops, "bf16": estimate.bf16_flops}.get(dtype)
        if peak is None:
            return None, None, f"peak unknown: no {dtype} peak is estimated for this CPU"
        per_cycle = peak / (estimate.cores * estimate.clock_ghz * 1e9)
        # RAM bandwidth is not in the report (channels and DIMM speed are not read).
        label = (
            f"CPU estimate: {estimate.cores} cores x {estimate.clock_ghz:.2f} GHz x "
            f"{per_cycle:.0f} {dtype} FLOP/cycle; clock from {estimate.clock_source}"
        )
        above = _above_cpu_peak(
            estimate.clock_source,
            _highest_clock(report.cpu)[2],
            estimate.clock_ghz,
            per_cycle,
            dtype,
        )
        return Peak(peak, label, above), None, label
    return None, None, f"peak unknown: gpulab has no spec table for device {str(device)!r}"
