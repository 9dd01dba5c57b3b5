"""GPU spec sheets and CPU peak estimates: the denominators of "% of peak" (chapter 1).

The GPU table lives in ``data/gpu_specs.json`` (chapter 1 owns its schema, chapter 6 adds
rows): one row per GPU with its memory, bandwidth, dense peak FLOP/s per precision, the units
and clocks that explain those peaks, power, interconnect, launch price and a source for every
figure. Nothing here makes a number up: a figure that no source gave is ``None``, and a device
that is not in the table gets "peak unknown" with the reason.

Two identities the chapter checks against the table:

- peak FLOP/s = units x clock x FLOPs per unit per cycle (an FMA counts as 2 FLOPs);
- bandwidth = bus width x data rate per pin.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from gpulab import roofline
from gpulab.errors import GpulabConfigError

if TYPE_CHECKING:  # only for annotations: importing hardware is not needed to read the table
    from gpulab.hardware import HardwareReport

__all__ = [
    "APPLE_GPU_SHARE",
    "DTYPES",
    "CPUPeakEstimate",
    "CPUSpec",
    "CoreGroup",
    "GPUSpec",
    "cpu_peak",
    "device_peak",
    "find_gpu",
    "get_cpu",
    "get_gpu",
    "load_cpus",
    "load_gpus",
    "spec_table",
]

# Precisions a peak can be asked for, in the order the table lists them. int8 is in OPS.
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8")

# Reported memory over marketed memory for the same GPU: NVML counts GiB (x1.074) minus what
# the driver reserves and ECC takes; anything outside this band is another variant or a slice.
_MEMORY_RATIO = (0.85, 1.12)
# macOS lets the GPU wire about 75% of unified memory on machines with more than 36 GB (Metal's
# recommendedMaxWorkingSetSize; Ollama reports about 96 GB usable on a 128 GB Mac: stencel.io,
# "Apple silicon limitations with usage on local LLM"; thinkdifferent.blog: ~65-70% at 36 GB or
# less). `sudo sysctl iogpu.wired_limit_mb=...` raises it, at the OS's expense.
APPLE_GPU_SHARE = 0.75


@dataclass(frozen=True)
class GPUSpec:
    """One GPU's spec sheet, as in data/gpu_specs.json (units in the file's ``_units``)."""

    name: str  # the table's key: "RTX 4090", "H100 SXM", ...
    vendor: str  # "NVIDIA", "AMD" or "Apple"
    architecture: str  # "Ada Lovelace (AD102)"
    compute_capability: str | None  # CUDA's "8.9"; None off NVIDIA
    memory_gb: float  # decimal GB as marketed
    memory_type: str | None  # "GDDR6X", "HBM3", "LPDDR5", ...
    memory_bus_bits: int | None
    memory_data_rate_gbps: float | None  # per pin, Gbit/s
    bandwidth_gbs: float  # GB/s, decimal
    # Dense (no 2:4 sparsity) TFLOP/s per precision; int8 in TOPS; read-only.
    peak_tflops: MappingProxyType = field(hash=False)
    cuda_cores: int | None  # FP32 lanes ("CUDA cores"); None off NVIDIA
    tensor_cores: int | None
    boost_clock_ghz: float | None
    board_power_w: float | None
    idle_power_w: float | None
    # {"pcie_gen", "pcie_lanes", "nvlink_gbs"}; read-only.
    interconnect: MappingProxyType = field(hash=False)
    launch_price_usd: float | None
    launch_date: str | None  # "YYYY-MM"
    source: str  # where every figure comes from
    note: str | None = None
    cpu_cores: int | None = None  # Apple SoCs only: the chip bin this row describes

    def peak_flops(self, dtype: str) -> float | None:
        """Dense peak in FLOP/s (OPS for int8) for ``dtype``; None when none is published."""
        _check_dtype(dtype)
        tflops = self.peak_tflops.get(dtype)
        return None if tflops is None else tflops * 1e12

    @property
    def model_memory_bytes(self) -> int:
        """Memory one card offers a model: marketed decimal GB (Apple: the GPU's share of it).

        The memory estimates' overhead already counts what the runtime takes, so nothing
        else is subtracted here.
        """
        share = APPLE_GPU_SHARE if self.vendor == "Apple" else 1.0
        return int(self.memory_gb * 1e9 * share)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Peak memory bandwidth in bytes per second."""
        return self.bandwidth_gbs * 1e9

    def ridge_point(self, dtype: str = "bf16") -> float | None:
        """FLOP per byte where the compute and memory roofs meet: peak / bandwidth."""
        peak = self.peak_flops(dtype)
        return None if peak is None else roofline.ridge_point(peak, self.bandwidth_bytes_per_s)

    def derived_bandwidth_gbs(self) -> float | None:
        """Bandwidth from bus width x data rate (bits/8 x Gbit/s), None if a field is missing."""
        if self.memory_bus_bits is None or self.memory_data_rate_gbps is None:
            return None
        return self.memory_bus_bits / 8 * self.memory_data_rate_gbps

    def derived_fp32_tflops(self) -> float | None:
        """FP32 peak from cores x boost clock x 2 (an FMA is 2 FLOPs), in TFLOP/s."""
        if self.cuda_cores is None or self.boost_clock_ghz is None:
            return None
        return self.cuda_cores * self.boost_clock_ghz * 2 / 1e3

    def to_dict(self) -> dict[str, Any]:
        """The row as plain JSON-serialisable data (``dataclasses.asdict`` cannot copy it)."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["peak_tflops"] = dict(self.peak_tflops)
        out["interconnect"] = dict(self.interconnect)
        return out


def _check_dtype(dtype: str) -> None:
    """Raise GpulabConfigError unless ``dtype`` is one of DTYPES."""
    if dtype not in DTYPES:
        raise GpulabConfigError(
            f"dtype={dtype!r} is not a precision the spec table knows; "
            f"use one of {', '.join(repr(d) for d in DTYPES)}."
        )


# --------------------------------------------------------------------------- loading


_OPTIONAL = ("note", "cpu_cores")
_MAPPINGS = ("peak_tflops", "interconnect")


def _row(name: str, row: dict[str, Any]) -> GPUSpec:
    """Build a GPUSpec from one JSON row; a missing required key raises KeyError naming the row."""
    required = [f.name for f in fields(GPUSpec) if f.name not in ("name", *_OPTIONAL)]
    missing = [key for key in required if key not in row]
    if missing:
        raise KeyError(f"gpu_specs.json row {name!r} lacks the key {missing[0]!r}")
    values = {key: row[key] for key in required}
    values.update({key: MappingProxyType(dict(row[key])) for key in _MAPPINGS})  # read-only
    return GPUSpec(name=name, **values, **{key: row.get(key) for key in _OPTIONAL})


@lru_cache(maxsize=1)
def _table() -> dict[str, GPUSpec]:
    """Parse the packaged JSON once."""
    path = resources.files("gpulab") / "data" / "gpu_specs.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return {name: _row(name, row) for name, row in data["gpus"].items()}


def load_gpus() -> dict[str, GPUSpec]:
    """All GPU rows by name (a fresh dict each call over cached, immutable rows)."""
    # A copy, so that a notebook adding or deleting keys cannot change what others see.
    return dict(_table())


# --------------------------------------------------------------------------- name matching

# Words that NVML/torch names carry but that do not tell two GPUs apart.
_NOISE = {"nvidia", "geforce", "tesla", "amd", "radeon", "instinct", "apple", "graphics", "gpu"}
# Words that name a board variant rather than the chip: they decide between rows.
_SXM = {"sxm", "sxm2", "sxm4", "sxm5"}
_OTHER_FORMS = {"pcie", "nvl"}
_MEMORY_TYPES = {"hbm2", "hbm2e", "hbm3", "hbm3e"}
_MEMORY_TOKEN = re.compile(r"^(\d+)gb$")


def _tokens(name: str) -> list[str]:
    """Lower-case words of a GPU name, with "80 GB" joined to "80gb" and punctuation dropped."""
    text = re.sub(r"(\d+)\s*gb\b", r"\1gb", name.lower())
    return [t for t in re.split(r"[^a-z0-9]+", text) if t and t not in _NOISE]


def _split(tokens: list[str]) -> tuple[frozenset[str], set[str], set[int]]:
    """(model words, form words, memory sizes in GB) of a tokenised name."""
    forms = {t for t in tokens if t in _SXM | _OTHER_FORMS | _MEMORY_TYPES}
    memory = {int(m.group(1)) for t in tokens if (m := _MEMORY_TOKEN.match(t))}
    model = frozenset(t for t in tokens if t not in forms and not _MEMORY_TOKEN.match(t))
    return model, forms, memory


def _matches(spec: GPUSpec, query: str, memory_bytes: int | None) -> bool:
    """True when ``query`` (an NVML/torch/sysctl name) can only mean this row."""
    row_model, row_forms, row_memory = _split(_tokens(spec.name))
    model, forms, memory = _split(_tokens(query))
    if model != row_model:
        return False  # "RTX 4090 D", "RTX 3060 Ti", "A10G" are other GPUs
    if row_forms & _SXM:
        # NVML says "A100-SXM4-80GB" but "H100 80GB HBM3" for the SXM boards; a name with
        # neither could be the PCIe card, whose clocks and bandwidth differ.
        if not forms & (_SXM | {"hbm3"}) or forms & _OTHER_FORMS:
            return False
    elif forms & (_SXM | {"nvl"}):
        return False  # "H200 NVL" is the 600 W PCIe board, not the SXM row
    if memory and memory != {round(spec.memory_gb)}:
        return False
    if memory_bytes is not None:
        ratio = memory_bytes / (spec.memory_gb * 1e9)
        if not _MEMORY_RATIO[0] <= ratio <= _MEMORY_RATIO[1]:
            return False  # an 8 GB RTX 3060, or a MIG slice, is not this row
    elif row_memory and not memory:
        return False  # the row is one memory variant of several and nothing says which
    return True


def find_gpu(name: str, memory_bytes: int | None = None) -> GPUSpec | None:
    """The row a reported GPU name means ("NVIDIA GeForce RTX 4090"), or None if not exactly one.

    ``memory_bytes`` (NVML's or torch's total) tells memory variants apart, such as the 8 GB
    and 12 GB RTX 3060, which report the same name.
    """
    if not isinstance(name, str) or not name.strip():
        return None
    hits = [spec for spec in _table().values() if _matches(spec, name, memory_bytes)]
    # Two hits means the name is ambiguous: no answer is better than a wrong one.
    return hits[0] if len(hits) == 1 else None


def get_gpu(name: str) -> GPUSpec:
    """The row for a table key or a reported name; GpulabConfigError when there is none."""
    table = _table()
    for key, spec in table.items():
        if isinstance(name, str) and key.lower() == name.strip().lower():
            return spec
    spec = find_gpu(name)
    if spec is None:
        raise GpulabConfigError(f"unknown GPU {name!r}; known: {', '.join(table)}.")
    return spec


def _short_source(source: str, limit: int = 70) -> str:
    """The start of a source string, cut at a word boundary."""
    if len(source) <= limit:
        return source
    return source[:limit].rsplit(" ", 1)[0] + " ..."


def spec_table(names: list[str] | None = None) -> list[dict[str, Any]]:
    """Rows for a notebook table: memory, bandwidth, fp32/bf16 peaks, ridge point, source."""
    specs = list(_table().values()) if names is None else [get_gpu(n) for n in names]
    rows = []
    for spec in specs:
        # Turing (T4) has no bf16: its ridge point is the fp16 one, and the row says so.
        ridge_dtype = "bf16" if "bf16" in spec.peak_tflops else "fp16"
        rows.append(
            {
                "name": spec.name,
                "memory_gb": spec.memory_gb,
                "bandwidth_gbs": spec.bandwidth_gbs,
                "fp32_tflops": spec.peak_tflops.get("fp32"),
                "bf16_tflops": spec.peak_tflops.get("bf16"),
                "ridge_flop_per_byte": spec.ridge_point(ridge_dtype),
                "ridge_dtype": ridge_dtype,
                "source": _short_source(spec.source),
            }
        )
    return rows


# --------------------------------------------------------------------------- CPU estimate

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


@dataclass(frozen=True)
class CPUPeakEstimate:
    """The CPU's peak from cores x clock x FLOPs per cycle: an estimate, with its arithmetic."""

    fp32_flops: float | None  # FLOP/s, None when unknown
    bf16_flops: float | None  # FLOP/s, only with AMX or AVX-512 BF16, else None
    cores: int | None
    clock_ghz: float | None
    fp32_flops_per_cycle_per_core: int | None
    assumptions: str  # the arithmetic and what it assumes, or "peak unknown: <why>"
    is_estimate: bool = True


def _fmt_rate(flops: float) -> str:
    """1.5e12 -> '1.5 TFLOP/s', 2.56e11 -> '256 GFLOP/s'."""
    if flops >= 1e12:
        return f"{flops / 1e12:.3g} TFLOP/s"
    return f"{flops / 1e9:.3g} GFLOP/s"


def cpu_peak(report: HardwareReport) -> CPUPeakEstimate:
    """Estimate the CPU's fp32 (and bf16) peak from a hardware report; never invents a figure."""
    cpu = report.cpu
    cores = cpu.physical_cores
    extensions = set(cpu.vector_extensions)
    clock_mhz = cpu.max_frequency_mhz
    clock_note = "that every core holds this clock"
    if clock_mhz is None:
        # In a VM no maximum is exposed; /proc/cpuinfo's figure is the host's nominal clock.
        clock_mhz = getattr(cpu, "reported_frequency_mhz", None)
        clock_note = "that every core holds the clock /proc/cpuinfo reports (turbo may be higher)"
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
        )

    _, per_cycle, why = vector
    fp32 = cores * clock_ghz * 1e9 * per_cycle
    text = (
        f"{cores} cores x {clock_ghz:.2f} GHz x {per_cycle} FLOP/cycle ({why}) = "
        f"{_fmt_rate(fp32)} fp32"
    )
    bf16 = None
    if "AMX" in extensions:
        bf16 = cores * clock_ghz * 1e9 * _AMX_BF16_PER_CYCLE
        text += (
            f"; bf16 with AMX: {cores} x {clock_ghz:.2f} GHz x {_AMX_BF16_PER_CYCLE} FLOP/cycle "
            f"(Intel's figure for a 4th-gen Xeon core) = {_fmt_rate(bf16)}"
        )
    elif "AVX-512 BF16" in extensions:
        bf16 = 2 * fp32
        text += f"; bf16 with AVX-512 BF16 (2 bf16 products per fp32 lane): {_fmt_rate(bf16)}"
    text += f". An estimate: it assumes the FMA unit count above and {clock_note}."
    return CPUPeakEstimate(
        fp32_flops=fp32,
        bf16_flops=bf16,
        cores=cores,
        clock_ghz=clock_ghz,
        fp32_flops_per_cycle_per_core=per_cycle,
        assumptions=text,
    )


# --------------------------------------------------------------------------- device peak


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
    return peak, spec.bandwidth_bytes_per_s, label


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
    return peak, spec.bandwidth_bytes_per_s, label


def device_peak(
    report: HardwareReport, device: Any, dtype: str = "fp32"
) -> tuple[float | None, float | None, str]:
    """(peak FLOP/s, peak bytes/s, label) for the device a notebook runs on; None when unknown."""
    _check_dtype(dtype)
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
            f"{per_cycle:.0f} {dtype} FLOP/cycle"
        )
        return peak, None, label
    return None, None, f"peak unknown: gpulab has no spec table for device {str(device)!r}"


# --------------------------------------------------------------------------- CPU table


@dataclass(frozen=True)
class CoreGroup:
    """Cores of one kind in a CPU (hybrid CPUs have performance and efficiency cores)."""

    name: str  # "P-cores"
    count: int
    fp32_flops_per_cycle: int  # per core: SIMD lanes x FMA units x 2
    base_ghz: float
    turbo_ghz: float
    why: str  # how the FLOPs per cycle follow from the vector units


@dataclass(frozen=True)
class CPUSpec:
    """A CPU from data/cpu_specs.json, for comparisons the articles make (chapter 1)."""

    name: str
    vendor: str
    architecture: str
    core_groups: tuple[CoreGroup, ...]
    memory_type: str
    memory_channels: int
    memory_max_mts: int
    source: str
    note: str | None = None

    @property
    def cores(self) -> int:
        """Physical cores of every kind."""
        return sum(g.count for g in self.core_groups)

    def _clock(self, group: CoreGroup, clock: str) -> float:
        if clock not in ("base", "turbo"):
            raise GpulabConfigError(f"clock={clock!r} is not 'base' or 'turbo'")
        return group.base_ghz if clock == "base" else group.turbo_ghz

    def peak_fp32_flops(self, clock: str = "base") -> float:
        """FP32 peak in FLOP/s: sum over core groups of cores x FLOPs/cycle x clock."""
        return sum(g.count * g.fp32_flops_per_cycle * self._clock(g, clock) * 1e9
                   for g in self.core_groups)

    def peak_arithmetic(self, clock: str = "base") -> str:
        """The peak's derivation as one line: '8 P-cores x 32 FLOP/cycle x 3.0 GHz + ... = ...'."""
        terms = " + ".join(f"{g.count} {g.name} x {g.fp32_flops_per_cycle} FLOP/cycle x "
                           f"{self._clock(g, clock):g} GHz" for g in self.core_groups)
        return f"{self.name} fp32 peak at {clock} clocks: {terms} = " \
               f"{_fmt_rate(self.peak_fp32_flops(clock))}"

    @property
    def memory_bandwidth_gbs(self) -> float:
        """Peak memory bandwidth: channels x 8 bytes x MT/s, in GB/s."""
        return self.memory_channels * 8 * self.memory_max_mts / 1e3


@lru_cache(maxsize=1)
def _cpu_table() -> dict[str, CPUSpec]:
    """Parse the packaged CPU table once."""
    data = json.loads((resources.files("gpulab") / "data" / "cpu_specs.json").read_text("utf-8"))
    table = {}
    for name, row in data["cpus"].items():
        groups = tuple(CoreGroup(**g) for g in row["core_groups"])
        fields = {k: v for k, v in row.items() if k != "core_groups"}
        table[name] = CPUSpec(name=name, core_groups=groups, **fields)
    return table


def load_cpus() -> dict[str, CPUSpec]:
    """All CPU rows by name."""
    return dict(_cpu_table())


def get_cpu(name: str) -> CPUSpec:
    """The CPU row called `name` (case-insensitive); GpulabConfigError listing the known ones."""
    for key, spec in _cpu_table().items():
        if key.lower() == str(name).strip().lower():
            return spec
    raise GpulabConfigError(f"unknown CPU {name!r}; known: {', '.join(_cpu_table())}")
