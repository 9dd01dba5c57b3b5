"""Hidden synchronisations: what `.item()`, `.cpu()` and printing cost inside a loop (chapter 5).

A GPU runs the work Python queues for it while Python moves on; anything that needs a value on
the host (`loss.item()`, `tensor.cpu()`, `print(tensor)`, `if tensor > 0:`) makes Python wait
until the queue drains, so the next step cannot be queued while the device finishes this one.
On the CPU every operation already finishes before the next line runs, so the same loops cost
the same: the measurement shows it instead of claiming it.
"""

from __future__ import annotations

import functools
import io
from contextlib import redirect_stdout
from dataclasses import dataclass
from typing import Any

from gpulab.bench import timing
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import PositiveInt, checked, require_positive_ints

# Each variant reads the loss in a different way, once per step.
VARIANTS = {
    "on-device": "keeps a running total on the device; one .item() after the loop",
    "item": "calls loss.item() every step (a device -> host copy and a wait)",
    "cpu": "calls loss.detach().cpu() every step (the same wait)",
    "print": "prints the loss tensor every step (formats it on the host: the same wait)",
}


@checked
@dataclass(frozen=True)
class SyncConfig:
    """The small training loop whose loss is read in each way."""

    batch: PositiveInt = 64  # samples per step
    width: PositiveInt = 256  # hidden width of the two-layer MLP
    steps: PositiveInt = 50  # steps per timed run
    seed: int = 0


@dataclass(frozen=True)
class SyncResult:
    """One variant's time per step and its final running loss (the same for all variants)."""

    variant: str
    seconds_per_step: float
    total_loss: float
    description: str
    spread_per_step: float = 0.0  # interquartile range of the rounds, per step


@checked
def describe(rows: list[SyncResult], device_type: str) -> str:
    """The verdict of the measurement on `.item()` against the on-device sum, in one line.

    The two differ when their gap is larger than the two spreads added; the words follow the
    result on this machine, not what a GPU would show (the notebook says why either can happen).
    """
    by_name = {r.variant: r for r in rows}
    base, item = by_name["on-device"], by_name["item"]
    ratio = item.seconds_per_step / base.seconds_per_step
    gap = item.seconds_per_step - base.seconds_per_step
    within = abs(gap) <= base.spread_per_step + item.spread_per_step
    head = (
        f"measured on {device_type}: reading the loss with .item() every step took {ratio:.2f} "
        "times the on-device loop's time per step, "
    )
    if within:
        return head + "within the spread of the timings: the two cost the same here"
    if gap > 0:
        return head + "more than the spread of the timings: the reads cost time here"
    return (
        head + "faster, by more than the spread of the timings: the on-device sum costs more here"
    )


def _setup(config: SyncConfig, device: Any):
    import torch

    torch.manual_seed(config.seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(config.width, config.width),
        torch.nn.ReLU(),
        torch.nn.Linear(config.width, 1),
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(config.batch, config.width, device=device)
    y = torch.randn(config.batch, 1, device=device)
    return model, opt, x, y


def _loop(variant: str, model, opt, x, y, steps: int) -> float:
    """`steps` training steps reading the loss as `variant` says; the summed loss."""
    import torch

    total = torch.zeros((), device=x.device)
    host_total = 0.0
    sink = io.StringIO()  # printed losses go here, not into the reader's notebook
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if variant == "on-device":
            total += loss.detach()
        elif variant == "item":
            host_total += loss.item()
        elif variant == "cpu":
            host_total += float(loss.detach().cpu())
        else:
            with redirect_stdout(sink):
                print(loss)
            total += loss.detach()
    return float(total.item()) + host_total


@checked
def run_variant(variant: str, device: Any, config: SyncConfig = SyncConfig()) -> float:
    """Run the loop once from a fresh model, reading the loss as `variant` says; the summed loss."""
    if variant not in VARIANTS:
        raise GpulabConfigError(
            f"variant={variant!r} is not known; use one of {', '.join(VARIANTS)}"
        )
    return _loop(variant, *_setup(config, device), config.steps)


@checked
def compare(
    device: Any, config: SyncConfig = SyncConfig(), rounds: PositiveInt = 7
) -> list[SyncResult]:
    """Time each variant's loop against the others, interleaved (timing.interleaved), on one device.

    Each variant trains its own copy of the model from the same seed, so no variant inherits
    another's warmed-up state; the summed loss is from a separate fresh run of each.
    """
    require_positive_ints(batch=config.batch, width=config.width, steps=config.steps)
    totals = {name: run_variant(name, device, config) for name in VARIANTS}
    states = {name: _setup(config, device) for name in VARIANTS}
    measured = timing.interleaved(
        {name: functools.partial(_loop, name, *states[name], config.steps) for name in VARIANTS},
        device,
        rounds=rounds,
    )
    return [
        SyncResult(
            name,
            measured[name].median / config.steps,
            totals[name],
            description,
            measured[name].iqr / config.steps,
        )
        for name, description in VARIANTS.items()
    ]


@checked
def unsynchronised_seconds(
    fn, device: Any, calls: PositiveInt = 10, repeats: PositiveInt = 5
) -> tuple[float, float]:
    """Time `calls` calls of fn two ways: without a device sync (the mistake), and with one.

    Returns the medians over `repeats` rounds of (seconds per call read without synchronising,
    seconds per call with a sync after the last call). On a GPU the first is only the time to
    queue the work; on a CPU they agree up to noise.
    """
    import statistics
    import time

    fn()
    unsynced, synced = [], []
    for _ in range(repeats):
        timing.synchronize(device)  # start from an idle device, as both readings should
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        unsynced.append((time.perf_counter() - start) / calls)
        timing.synchronize(device)
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        timing.synchronize(device)
        synced.append((time.perf_counter() - start) / calls)
    return statistics.median(unsynced), statistics.median(synced)
