"""The all-reduce cost model, and what sharding leaves on each rank (chapter 7).

    from gpulab import collectives

    collectives.allreduce_seconds(nbytes=2 * 7e9, world_size=2, bus_bytes_per_s=25e9)  # seconds
    collectives.bus_bandwidth(algorithm_bytes_per_s=12.5e9, world_size=2)  # what the link carried

A ring all-reduce of S bytes over n ranks runs a reduce-scatter then an all-gather; in each
phase every rank sends (and receives) n - 1 chunks of S / n bytes, so each rank moves
2 (n - 1) / n x S bytes over its link. NCCL's tests (nccl-tests, doc/PERFORMANCE.md) report
"algorithm bandwidth" S / t and "bus bandwidth" = algorithm bandwidth x 2 (n - 1) / n: the
latter is comparable to the link's speed whatever the rank count, which is why a cost model
takes the bus bandwidth as the hardware's property.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import (
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    PositiveInt,
    checked,
)

__all__ = [
    "RingFit",
    "ZERO_STAGES",
    "algorithm_bandwidth",
    "allreduce_bus_factor",
    "allreduce_seconds",
    "bus_bandwidth",
    "fit_ring_model",
    "sharded_bytes_per_rank",
]


@checked
def allreduce_bus_factor(world_size: PositiveInt) -> float:
    """Bytes each rank sends in a ring all-reduce, per byte reduced: 2 (n - 1) / n."""
    return 2 * (world_size - 1) / world_size


@checked
def algorithm_bandwidth(nbytes: PositiveFloat, seconds: PositiveFloat) -> float:
    """Algorithm bandwidth of a collective: the message size over the time it took (bytes/s)."""
    return nbytes / seconds


@checked
def bus_bandwidth(algorithm_bytes_per_s: PositiveFloat, world_size: PositiveInt) -> float:
    """Bus bandwidth (bytes/s) of an all-reduce: algorithm bandwidth x 2 (n - 1) / n.

    With one rank nothing crosses a link, so the bus bandwidth is 0.
    """
    return algorithm_bytes_per_s * allreduce_bus_factor(world_size)


@checked
def allreduce_seconds(
    nbytes: NonNegativeFloat,
    world_size: PositiveInt,
    bus_bytes_per_s: PositiveFloat,
    latency_s: NonNegativeFloat = 0.0,
) -> float:
    """Ring-model time of an all-reduce: latency + 2 (n - 1) / n x nbytes / bus bandwidth."""
    factor = allreduce_bus_factor(world_size)
    if factor == 0:  # one rank: nothing to exchange, not even a latency
        return 0.0
    return latency_s + factor * nbytes / bus_bytes_per_s


@dataclass(frozen=True)
class RingFit:
    """The ring model's two parameters fitted to measured all-reduce times."""

    latency_s: float  # fixed cost per call, seconds (the fit's intercept, at least 0)
    bus_bytes_per_s: float  # bus bandwidth the large messages reach, bytes/s
    fitted: bool = True  # False: the times did not grow with the size, this is an average rate

    def seconds(self, nbytes: float, world_size: int) -> float:
        """The fitted model's time for an all-reduce of nbytes."""
        return allreduce_seconds(nbytes, world_size, self.bus_bytes_per_s, self.latency_s)


@checked
def fit_ring_model(
    nbytes: Sequence[PositiveFloat],
    seconds: Sequence[PositiveFloat],
    world_size: PositiveInt,
    if_flat: Annotated[str, OneOf(("raise", "rate"))] = "raise",
) -> RingFit:
    """Fit t = latency + 2 (n - 1) / n x nbytes / bus bandwidth to measured times.

    Least squares on relative errors (each point weighted by 1 / t), because the sizes span
    decades and an absolute fit would ignore the small messages. A negative intercept (noise)
    is clipped to 0 and the slope refitted through the origin. Plain Python (no numpy), so
    the estimate layer runs in a browser; the tests check it against numpy.polyfit.

    Times that do not grow with the size (a busy machine's noise drowning the bytes) have no
    bandwidth to fit: ``if_flat="raise"`` refuses them; ``"rate"`` returns the line through the
    origin instead (no fixed cost, the points' weighted average rate), marked ``fitted=False``,
    so that a notebook on a busy laptop can say so and go on.
    """
    factor = allreduce_bus_factor(world_size)
    if factor == 0:
        raise GpulabConfigError("world_size=1: a single rank moves no bytes; fit with 2 or more")
    if len(nbytes) != len(seconds) or len(nbytes) < 2:
        raise GpulabConfigError(
            f"seconds has {len(seconds)} values and nbytes {len(nbytes)}: "
            "give two equally long lists of 2 or more",
            "seconds",
        )
    x = [float(n) * factor for n in nbytes]
    t = [float(s) for s in seconds]
    weight = [1 / ti**2 for ti in t]  # (1 / t) squared: least squares on t's relative error
    total = math.fsum(weight)
    x_mean = math.fsum(w * xi for w, xi in zip(weight, x, strict=True)) / total
    t_mean = math.fsum(w * ti for w, ti in zip(weight, t, strict=True)) / total
    # centred sums keep the arithmetic exact enough over sizes that span decades
    sxx = math.fsum(w * (xi - x_mean) ** 2 for w, xi in zip(weight, x, strict=True))
    sxt = math.fsum(
        w * (xi - x_mean) * (ti - t_mean) for w, xi, ti in zip(weight, x, t, strict=True)
    )
    if sxx == 0:
        raise GpulabConfigError(
            "nbytes: every message has the same size; fit over several sizes", "nbytes"
        )
    slope = sxt / sxx
    intercept = t_mean - slope * x_mean
    if intercept < 0 or (slope <= 0 and if_flat == "rate"):
        intercept = 0.0
        slope = math.fsum(w * xi * ti for w, xi, ti in zip(weight, x, t, strict=True)) / math.fsum(
            w * xi * xi for w, xi in zip(weight, x, strict=True)
        )
    if slope <= 0:
        raise GpulabConfigError(
            "seconds: the times do not grow with the size, so there is no bandwidth to fit "
            '(if_flat="rate" gives the average rate instead)',
            "seconds",
        )
    return RingFit(float(intercept), float(1 / slope), fitted=sxt > 0)


# What each ZeRO stage shards across the ranks (Rajbhandari et al., ZeRO, arXiv:1910.02054):
# stage 0 is plain data parallel, 1 shards the optimizer states, 2 also the gradients, 3 also
# the parameters (PyTorch's FSDP with full sharding is stage 3).
ZERO_STAGES = {
    0: "data parallel: every rank holds everything",
    1: "ZeRO-1: optimizer states sharded",
    2: "ZeRO-2: optimizer states and gradients sharded",
    3: "ZeRO-3 / FSDP full shard: optimizer states, gradients and parameters sharded",
}


@checked
def sharded_bytes_per_rank(
    param_bytes: NonNegativeInt,
    grad_bytes: NonNegativeInt,
    optimizer_bytes: NonNegativeInt,
    world_size: PositiveInt,
    stage: int,
) -> dict[str, int]:
    """Bytes of parameters, gradients and optimizer states one rank holds under a ZeRO stage.

    A sharded part is split into n equal shards, rounded up (frameworks pad the last shard).
    Returns a dict with keys params, grads, optimizer and total.
    """
    if stage not in ZERO_STAGES:
        raise GpulabConfigError(
            f"stage={stage!r} must be one of {sorted(ZERO_STAGES)} "
            f"({'; '.join(f'{k}: {v}' for k, v in ZERO_STAGES.items())})"
        )

    def shard(nbytes: int, sharded: bool) -> int:
        return -(-nbytes // world_size) if sharded else nbytes

    out = {
        "params": shard(param_bytes, stage >= 3),
        "grads": shard(grad_bytes, stage >= 2),
        "optimizer": shard(optimizer_bytes, stage >= 1),
    }
    out["total"] = out["params"] + out["grads"] + out["optimizer"]
    return out
