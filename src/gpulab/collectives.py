"""The all-reduce cost model, and what sharding leaves on each rank (chapter 7).

    from gpulab.collectives import allreduce_seconds, bus_bandwidth

    allreduce_seconds(nbytes=2 * 7e9, world_size=2, bus_bytes_per_s=25e9)  # ring model, seconds
    bus_bandwidth(algorithm_bytes_per_s=12.5e9, world_size=2)               # what the link carried

A ring all-reduce of S bytes over n ranks runs a reduce-scatter then an all-gather; in each
phase every rank sends (and receives) n - 1 chunks of S / n bytes, so each rank moves
2 (n - 1) / n x S bytes over its link. NCCL's tests (nccl-tests, doc/PERFORMANCE.md) report
"algorithm bandwidth" S / t and "bus bandwidth" = algorithm bandwidth x 2 (n - 1) / n: the
latter is comparable to the link's speed whatever the rank count, which is why a cost model
takes the bus bandwidth as the hardware's property.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpulab.errors import GpulabConfigError, require_positive, require_positive_ints

__all__ = ["RingFit", "ZERO_STAGES", "algorithm_bandwidth", "allreduce_bus_factor",
           "allreduce_seconds", "bus_bandwidth", "fit_ring_model", "sharded_bytes_per_rank"]


def _require_world_size(world_size: int) -> None:
    require_positive_ints(world_size=world_size)


def allreduce_bus_factor(world_size: int) -> float:
    """Bytes each rank sends in a ring all-reduce, per byte reduced: 2 (n - 1) / n."""
    _require_world_size(world_size)
    return 2 * (world_size - 1) / world_size


def algorithm_bandwidth(nbytes: float, seconds: float) -> float:
    """Algorithm bandwidth of a collective: the message size over the time it took (bytes/s)."""
    require_positive(nbytes=nbytes, seconds=seconds)
    return nbytes / seconds


def bus_bandwidth(algorithm_bytes_per_s: float, world_size: int) -> float:
    """Bus bandwidth (bytes/s) of an all-reduce: algorithm bandwidth x 2 (n - 1) / n.

    With one rank nothing crosses a link, so the bus bandwidth is 0.
    """
    require_positive(algorithm_bytes_per_s=algorithm_bytes_per_s)
    return algorithm_bytes_per_s * allreduce_bus_factor(world_size)


def allreduce_seconds(nbytes: float, world_size: int, bus_bytes_per_s: float,
                      latency_s: float = 0.0) -> float:
    """Ring-model time of an all-reduce: latency + 2 (n - 1) / n x nbytes / bus bandwidth."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or not 0 <= nbytes < float("inf"):
        raise GpulabConfigError(f"nbytes={nbytes!r} must be a number of bytes >= 0")
    require_positive(bus_bytes_per_s=bus_bytes_per_s)
    if isinstance(latency_s, bool) or not isinstance(latency_s, (int, float)) \
            or not 0 <= latency_s < float("inf"):
        raise GpulabConfigError(f"latency_s={latency_s!r} must be a number of seconds >= 0")
    factor = allreduce_bus_factor(world_size)
    if factor == 0:  # one rank: nothing to exchange, not even a latency
        return 0.0
    return latency_s + factor * nbytes / bus_bytes_per_s



@dataclass(frozen=True)
class RingFit:
    """The ring model's two parameters fitted to measured all-reduce times."""

    latency_s: float  # fixed cost per call, seconds (the fit's intercept, at least 0)
    bus_bytes_per_s: float  # bus bandwidth the large messages reach, bytes/s

    def seconds(self, nbytes: float, world_size: int) -> float:
        """The fitted model's time for an all-reduce of nbytes."""
        return allreduce_seconds(nbytes, world_size, self.bus_bytes_per_s, self.latency_s)


def fit_ring_model(nbytes: Sequence[float], seconds: Sequence[float], world_size: int) -> RingFit:
    """Fit t = latency + 2 (n - 1) / n x nbytes / bus bandwidth to measured times.

    Least squares on relative errors (each point weighted by 1 / t), because the sizes span
    decades and an absolute fit would ignore the small messages. A negative intercept (noise)
    is clipped to 0 and the slope refitted through the origin.
    """
    import numpy as np

    factor = allreduce_bus_factor(world_size)
    if factor == 0:
        raise GpulabConfigError("world_size=1: a single rank moves no bytes; fit with 2 or more")
    x, t = np.asarray(nbytes, dtype=float) * factor, np.asarray(seconds, dtype=float)
    if x.shape != t.shape or len(x) < 2:
        raise GpulabConfigError("nbytes and seconds must be two equally long lists of 2 or more")
    if not (np.isfinite(x).all() and np.isfinite(t).all() and (x > 0).all() and (t > 0).all()):
        raise GpulabConfigError("nbytes and seconds must be positive finite numbers")
    w = 1 / t
    slope, intercept = np.polyfit(x, t, 1, w=w)
    if intercept < 0:
        intercept, slope = 0.0, float(np.sum(w * w * x * t) / np.sum(w * w * x * x))
    if slope <= 0:
        raise GpulabConfigError("the times do not grow with the size: no bandwidth to fit")
    return RingFit(float(intercept), float(1 / slope))

# What each ZeRO stage shards across the ranks (Rajbhandari et al., ZeRO, arXiv:1910.02054):
# stage 0 is plain data parallel, 1 shards the optimizer states, 2 also the gradients, 3 also
# the parameters (PyTorch's FSDP with full sharding is stage 3).
ZERO_STAGES = {
    0: "data parallel: every rank holds everything",
    1: "ZeRO-1: optimizer states sharded",
    2: "ZeRO-2: optimizer states and gradients sharded",
    3: "ZeRO-3 / FSDP full shard: optimizer states, gradients and parameters sharded",
}


def sharded_bytes_per_rank(param_bytes: int, grad_bytes: int, optimizer_bytes: int,
                           world_size: int, stage: int) -> dict[str, int]:
    """Bytes of parameters, gradients and optimizer states one rank holds under a ZeRO stage.

    A sharded part is split into n equal shards, rounded up (frameworks pad the last shard).
    Returns a dict with keys params, grads, optimizer and total.
    """
    for name, value in (("param_bytes", param_bytes), ("grad_bytes", grad_bytes),
                        ("optimizer_bytes", optimizer_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise GpulabConfigError(f"{name}={value!r} must be an integer number of bytes >= 0")
    _require_world_size(world_size)
    if stage not in ZERO_STAGES:
        raise GpulabConfigError(f"stage={stage!r} must be one of {sorted(ZERO_STAGES)} "
                                f"({'; '.join(f'{k}: {v}' for k, v in ZERO_STAGES.items())})")

    def shard(nbytes: int, sharded: bool) -> int:
        return -(-nbytes // world_size) if sharded else nbytes

    out = {
        "params": shard(param_bytes, stage >= 3),
        "grads": shard(grad_bytes, stage >= 2),
        "optimizer": shard(optimizer_bytes, stage >= 1),
    }
    out["total"] = out["params"] + out["grads"] + out["optimizer"]
    return out
