"""GPU and CPU spec sheets, each figure with its source: the "% of peak" denominators (chapter 1).

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
import math
import re
from dataclasses import dataclass, field, fields
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Annotated, Any

from gpulab.core.constraints import did_you_mean_text, show
from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import format_rate
from gpulab.core.validate import NonNegativeFloat, OneOf, check_value, checked, lenient

__all__ = [
    "ALLOCATOR_SLACK",
    "CPU_CLOCK_SETTINGS",
    "APPLE_GPU_SHARE",
    "CUDA_CONTEXT_BYTES",
    "DTYPES",
    "CPUSpec",
    "CoreGroup",
    "GPUSpec",
    "PeakDtype",
    "check_dtype",
    "find_gpu",
    "get_cpu",
    "get_gpu",
    "load_gpus",
    "resolve_gpu",
    "sorted_gpu_names",
    "tensor_capacity",
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

# What the runtime takes from a card before a model's tensors get any of it. Counted here, on
# the capacity side, and nowhere else: the memory estimates (gpulab.memory) count tensors only.
# The CUDA context (driver state and the kernels loaded into it) takes memory that no PyTorch
# counter shows: "from 200+ MB to 700+ MB" depending on the machine (pytorch/pytorch#28113),
# about 300 MB since CUDA 11.7's lazy module loading (pytorch/pytorch#107667, a maintainer's
# reply). 0.5 GiB is taken here; lab 02 measures yours (nvidia-smi's figure minus PyTorch's).
CUDA_CONTEXT_BYTES = 2**29
# PyTorch's caching allocator keeps freed blocks and rounds sizes up; the gap between reserved
# and allocated memory is workload-dependent. 5% of the tensors is an assumption, stated as
# such; lab 02 measures it as torch.cuda.memory_reserved() - memory_allocated().
ALLOCATOR_SLACK = 0.05
MIB = 2**20


@dataclass(frozen=True)
class GPUSpec:
    """One GPU's spec sheet, as in data/gpu_specs.json (units in the file's ``_units``)."""

    __validation_hint__ = "get one with gpulab.specs.get_gpu(name)"

    name: str  # the table's key: "RTX 4090", "H100 SXM", ...
    vendor: str  # "NVIDIA", "AMD", "Intel" or "Apple"
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
    sms: int | None = None  # streaming multiprocessors (NVIDIA), where the row's source gives them
    # Capacity as the driver reports it (the row's "memory_reported"): MiB, whether a published
    # driver output ("reported") or the marketed GB read as GiB ("nominal-gib"), and its source.
    memory_mib: int | None = None
    memory_kind: str | None = None
    memory_source: str | None = None

    def peak_flops(self, dtype: str) -> float | None:
        """Dense peak in FLOP/s (OPS for int8) for ``dtype``; None when none is published."""
        check_dtype(dtype)
        tflops = self.peak_tflops.get(dtype)
        return None if tflops is None else tflops * 1e12

    @property
    def memory_bytes(self) -> int:
        """Capacity in bytes as the driver reports it (nvidia-smi's total), not as marketed."""
        if self.memory_mib is None:  # a GPUSpec built by hand, without a driver figure: GB as GiB
            return int(self.memory_gb * 2**30)
        return self.memory_mib * MIB

    @property
    def model_memory_bytes(self) -> int:
        """The tensors one card can hold: its capacity less the runtime's context and slack.

        On Apple silicon the GPU may wire only a share of unified memory (APPLE_GPU_SHARE) and
        there is no CUDA context; elsewhere the context comes off first. The allocator's
        slack is a share of the tensors, so the tensors that fit are what is left over
        (1 + ALLOCATOR_SLACK). The memory estimates count tensors only, so each term is
        counted once, here.
        """
        return tensor_capacity(self.memory_bytes, apple=self.vendor == "Apple")

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Peak memory bandwidth in bytes per second."""
        return self.bandwidth_gbs * 1e9

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


@checked
def tensor_capacity(memory_bytes: NonNegativeFloat, apple: bool = False) -> int:
    """The tensors a device of `memory_bytes` (as its driver reports it) can hold.

    The CUDA context comes off first (on Apple silicon, the GPU may wire only APPLE_GPU_SHARE
    of unified memory, and there is no CUDA context); the allocator's slack is a share of the
    tensors, so what fits is what is left over (1 + ALLOCATOR_SLACK).
    """
    usable = memory_bytes * APPLE_GPU_SHARE if apple else memory_bytes - CUDA_CONTEXT_BYTES
    return max(0, int(usable / (1 + ALLOCATOR_SLACK)))


# A precision a peak can be asked for.
PeakDtype = Annotated[str, OneOf(DTYPES, "precision the spec table knows")]


@lenient("is itself a check")
def check_dtype(dtype: str) -> None:
    """Raise GpulabConfigError unless ``dtype`` is one of DTYPES."""
    check_value("dtype", dtype, PeakDtype)


# --------------------------------------------------------------------------- loading


_OPTIONAL = ("note", "cpu_cores", "sms")
_REPORTED = ("memory_mib", "memory_kind", "memory_source")  # from the row's "memory_reported"
_MAPPINGS = ("peak_tflops", "interconnect")


def _row(name: str, row: dict[str, Any]) -> GPUSpec:
    """Build a GPUSpec from one JSON row; a missing required key raises KeyError naming the row."""
    required = [f.name for f in fields(GPUSpec) if f.name not in ("name", *_OPTIONAL, *_REPORTED)]
    missing = [key for key in (*required, "memory_reported") if key not in row]
    if missing:
        raise KeyError(f"gpu_specs.json row {name!r} lacks the key {missing[0]!r}")
    values = {key: row[key] for key in required}
    values.update({key: MappingProxyType(dict(row[key])) for key in _MAPPINGS})  # read-only
    reported = row["memory_reported"]
    return GPUSpec(
        name=name,
        **values,
        **{key: row.get(key) for key in _OPTIONAL},
        memory_mib=reported["mib"],
        memory_kind=reported["kind"],
        memory_source=reported["source"],
    )


def _data(name: str) -> dict[str, Any]:
    return json.loads((resources.files("gpulab") / "data" / name).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _table() -> dict[str, GPUSpec]:
    """Parse the packaged JSON once."""
    return {name: _row(name, row) for name, row in _data("gpu_specs.json")["gpus"].items()}


def load_gpus() -> dict[str, GPUSpec]:
    """All GPU rows by name (a fresh dict each call over cached, immutable rows)."""
    # A copy, so that a notebook adding or deleting keys cannot change what others see.
    return dict(_table())


def sorted_gpu_names() -> list[str]:
    """The table's GPU names by vendor, then memory (smallest first), then name: a list to read."""
    return [
        g.name for g in sorted(_table().values(), key=lambda g: (g.vendor, g.memory_gb, g.name))
    ]


# --------------------------------------------------------------------------- name matching

# Words that NVML/torch names carry but that do not tell two GPUs apart ("r" and "tm" are the
# marks in Intel's "Intel(R) Arc(TM) A770 Graphics").
_NOISE = {
    "nvidia",
    "geforce",
    "tesla",
    "amd",
    "radeon",
    "instinct",
    "apple",
    "graphics",
    "gpu",
    "r",
    "tm",
}
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
    if row_forms & _OTHER_FORMS and not forms & row_forms:
        return False  # a PCIe row needs "PCIe" in the name: "H100 80GB HBM3" is the SXM board
    if memory and memory != {round(spec.memory_gb)}:
        return False
    if memory_bytes is not None:
        ratio = memory_bytes / (spec.memory_gb * 1e9)
        if not _MEMORY_RATIO[0] <= ratio <= _MEMORY_RATIO[1]:
            return False  # an 8 GB RTX 3060, or a MIG slice, is not this row
    elif row_memory and not memory:
        return False  # the row is one memory variant of several and nothing says which
    return True


# No GPU name a driver reports comes near this long; a longer one is no name, and is not read
# once per row of the table (a 5-million-character name took seconds).
_MAX_NAME_LENGTH = 200


def _readable_memory(memory_bytes: object) -> bool:
    """A size find_gpu can compare: a real number, not a bool, a string or an infinity."""
    if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, (int, float)):
        return False
    try:
        return math.isfinite(float(memory_bytes))
    except OverflowError:  # an int too large for a float is no card's memory
        return False


@lenient("matches whatever name a driver reports; None when no row does")
def find_gpu(name: str, memory_bytes: int | None = None) -> GPUSpec | None:
    """The row a reported GPU name means ("NVIDIA GeForce RTX 4090"), or None if not exactly one.

    ``memory_bytes`` (NVML's or torch's total) tells memory variants apart, such as the 8 GB
    and 12 GB RTX 3060, which report the same name; a size that is not a finite number
    (``"24GB"``, NaN) tells nothing, so the answer is None, as for any name it cannot read.
    """
    if not isinstance(name, str) or not name.strip() or len(name) > _MAX_NAME_LENGTH:
        return None
    if memory_bytes is not None and not _readable_memory(memory_bytes):
        return None
    hits = [spec for spec in _table().values() if _matches(spec, name, memory_bytes)]
    # Two hits means the name is ambiguous: no answer is better than a wrong one.
    return hits[0] if len(hits) == 1 else None


@checked
def get_gpu(name: str) -> GPUSpec:
    """The row for a table key or a reported name; GpulabConfigError when there is none.

    A near miss gets a suggestion: "RTX4090" -> did you mean 'RTX 4090'?
    """
    table = _table()
    wanted = name.strip().lower()
    for key, spec in table.items():
        if key.lower() == wanted:
            return spec
    spec = find_gpu(name)
    if spec is None:
        hint = did_you_mean_text(name, table)
        raise GpulabConfigError(
            f"name={show(name)} is not a GPU in the spec table; "
            f"{hint + ' ' if hint else ''}known: "
            f"{', '.join(sorted_gpu_names())}.",
            "name",
        )
    return spec


@checked
def resolve_gpu(gpu: GPUSpec | str, field: str = "gpu") -> GPUSpec:
    """A row given as itself or by name; an unknown name's error names the caller's `field`."""
    if isinstance(gpu, GPUSpec):
        return gpu
    try:
        return get_gpu(gpu)
    except GpulabConfigError as err:
        raise GpulabConfigError(str(err).replace("name=", f"{field}=", 1), field) from None


# --------------------------------------------------------------------------- CPU table


@dataclass(frozen=True)
class CoreGroup:
    """Cores of one kind in a CPU (hybrid CPUs have performance and efficiency cores)."""

    name: str  # "P-cores"
    count: int
    fp32_flops_per_cycle: int  # per core: SIMD lanes x FMA units x 2
    base_ghz: float
    turbo_ghz: float  # the one- or few-core maximum: the top of the range
    why: str  # how the FLOPs per cycle follow from the vector units
    # The clock with every core of the group busy, where published: the realistic peak's clock.
    all_core_ghz: float | None = None


# The clock settings a CPU peak can be taken at, lowest first.
CPU_CLOCK_SETTINGS = ("base", "all-core", "turbo")


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
        if clock not in CPU_CLOCK_SETTINGS:
            raise GpulabConfigError(
                f"clock={clock!r} is not one of {', '.join(CPU_CLOCK_SETTINGS)}", "clock"
            )
        if clock == "all-core":
            if group.all_core_ghz is None:
                raise GpulabConfigError(
                    f"clock='all-core': the table has no all-core clock for "
                    f"{self.name}'s {group.name}; use 'base' or 'turbo'",
                    "clock",
                )
            return group.all_core_ghz
        return group.base_ghz if clock == "base" else group.turbo_ghz

    def peak_fp32_flops(self, clock: str = "base") -> float:
        """FP32 peak in FLOP/s: sum over core groups of cores x FLOPs/cycle x clock.

        `clock`: "base" and "turbo" are the two ends of the range (turbo is the one- or
        few-core maximum, which no all-core load sustains); "all-core" is every core busy at
        its published all-core turbo, the realistic peak of a parallel kernel.
        """
        return sum(
            g.count * g.fp32_flops_per_cycle * self._clock(g, clock) * 1e9 for g in self.core_groups
        )

    def peak_arithmetic(self, clock: str = "base") -> str:
        """The peak's derivation as one line: '8 P-cores x 32 FLOP/cycle x 3.0 GHz + ... = ...'."""
        terms = " + ".join(
            f"{g.count} {g.name} x {g.fp32_flops_per_cycle} FLOP/cycle x "
            f"{self._clock(g, clock):g} GHz"
            for g in self.core_groups
        )
        return (
            f"{self.name} fp32 peak at {clock} clocks: {terms} = "
            f"{format_rate(self.peak_fp32_flops(clock))}"
        )

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


@checked
def get_cpu(name: str) -> CPUSpec:
    """The CPU row called `name` (case-insensitive); GpulabConfigError listing the known ones."""
    wanted = name.strip().lower()
    for key, spec in _cpu_table().items():
        if key.lower() == wanted:
            return spec
    hint = did_you_mean_text(name, _cpu_table())
    raise GpulabConfigError(
        f"name={show(name)} is not a CPU in the table; "
        f"{hint + ' ' if hint else ''}known: {', '.join(_cpu_table())}",
        "name",
    )
