"""Small work per launch: how throughput grows with the batch until the device is busy (chapter 5).

Every operation costs a fixed price to launch (Python, the framework's dispatch, and on a GPU the
kernel launch, a few microseconds) whatever its size. With a tiny batch that fixed price is most
of the time and the device idles between launches; throughput then grows almost in proportion
to the batch until the arithmetic itself dominates, and flattens where the device is full.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.bench import timing
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import PositiveFloat, PositiveInt, checked
from gpulab.machine import budget

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = ["BatchPoint", "mlp", "sweep"]


@dataclass(frozen=True)
class BatchPoint:
    """One batch size: time per forward pass and samples per second."""

    batch: int
    seconds: float
    samples_per_s: float
    flops_per_s: float  # matrix-product FLOP/s of the pass: 2 x batch x weights


@checked
def mlp(width: PositiveInt, depth: PositiveInt, device: torch.device | str, seed: int = 0):
    """A stack of `depth` width x width linear layers with ReLU: the workload of the sweep."""
    import torch

    torch.manual_seed(seed)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).to(device).eval()


@checked
def sweep(
    device: torch.device | str,
    batches: Sequence[PositiveInt],
    width: PositiveInt = 512,
    depth: PositiveInt = 4,
    min_run_time: PositiveFloat = 0.1,
) -> list[BatchPoint]:
    """Time one inference pass of the MLP at each batch size (skipping sizes over the budget)."""
    import torch

    batches = list(batches)
    if not batches:
        raise GpulabConfigError(
            "batches is empty; give at least one batch size, e.g. [1, 8, 64]", "batches"
        )
    model = mlp(width, depth, device)
    weights = depth * width * width
    allowed = budget.allowance(device)
    points = []
    for b in batches:
        # input, output and one activation per layer alive at once, fp32
        if 4 * b * width * (depth + 2) > allowed:
            continue
        x = torch.randn(b, width, device=device)
        with torch.inference_mode():
            m = timing.benchmark(
                model, x, device=device, min_run_time=min_run_time, label=f"batch {b}"
            )
        points.append(BatchPoint(b, m.median, b / m.median, 2 * b * weights / m.median))
    return points
