"""The fact-check's registry of derivations: functions that recompute a claim's correct value.

A claim in ``data/fact_check.json`` whose derivation is ``{"computed": "<name>"}`` names a
function registered here with ``@register("<name>")``; it takes no argument and returns a
``Computed`` (the value, its unit, the headline text and the arithmetic). The functions live
in ``gpulab.claims_hardware`` (chapters 1 and 4-6) and ``gpulab.claims_models`` (chapters 2
and 3); ``gpulab.factcheck`` loads both, so the registry is full whenever it is used.

Inputs that gpulab's tables do not hold are constants below, each with its source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import GB
from gpulab.estimate import memory
from gpulab.reference import models, specs
from gpulab.reference.formats import bits_per_weight

__all__ = ["BERT_BASE_PARAMS", "DDR4_3200_DUAL_GBS", "DDR5_4800_DUAL_GBS", "GTX1650_GDDR6_GBS",
           "LINEAR_BENCH_FLOP", "REGISTRY", "Computed", "compute", "cpu_13900k", "gpu",
           "nominal_weight_gb", "register", "weight_gb"]


@dataclass(frozen=True)
class Computed:
    """A value recomputed in the page, with the arithmetic that gives it."""

    value: float  # the headline number, in `unit`
    unit: str  # "GB", "tokens/s", "x" (a ratio), ...
    text: str  # the headline as printed; must appear in the claim's correct_value
    how: str  # the arithmetic, with where each input comes from



REGISTRY: dict[str, Callable[[], Computed]] = {}  # name -> function; filled by @register


def register(name: str) -> Callable[[Callable[[], Computed]], Callable[[], Computed]]:
    """Decorator: make a no-argument function returning Computed usable as a derivation."""
    def add(fn: Callable[[], Computed]) -> Callable[[], Computed]:
        if name in REGISTRY:
            raise ValueError(f"factcheck function {name!r} registered twice")
        REGISTRY[name] = fn
        return fn
    return add


def compute(name: str) -> Computed:
    """Run the registered function `name`."""
    if name not in REGISTRY:
        raise GpulabConfigError(f"computed={name!r} is not a registered function; "
                                f"known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]()



# Inputs that gpulab's tables do not hold, with their sources (as cited in chapters 1-4).
DDR4_3200_DUAL_GBS = 2 * 8 * 3200 / 1e3  # 51.2: two 64-bit channels x 3200 MT/s (i7-12700H, ch. 3)
DDR5_4800_DUAL_GBS = 2 * 8 * 4800 / 1e3  # 76.8: the same at 4800 MT/s
GTX1650_GDDR6_GBS = 192.0  # 128-bit x 12 Gbps (pcpartdb, gigabyte-gtx-1650-eagle-oc-gddr6)
BERT_BASE_PARAMS = 110e6  # Devlin et al. 2018, "Total Parameters=110M"
LINEAR_BENCH_FLOP = 2 * 10000 * 4096 * 4096  # the article's nn.Linear(4096, 4096) on 10000 rows


def gpu(name: str) -> specs.GPUSpec:
    """A spec-table row, by name."""
    return specs.get_gpu(name)


def cpu_13900k() -> specs.CPUSpec:
    """The CPU the tutorial compares GPUs with: a Core i9-13900K."""
    return specs.get_cpu("Core i9-13900K")


def weight_gb(model: str, fmt: str) -> float:
    """Weight bytes of a catalogue model in a format, in GB."""
    return memory.weight_bytes(models.get(model), fmt) / GB


def nominal_weight_gb(params: float, fmt: str) -> float:
    """GB of weights for a nominal parameter count in a format (no catalogue model at that size)."""
    return params * bits_per_weight(fmt) / 8 / GB
