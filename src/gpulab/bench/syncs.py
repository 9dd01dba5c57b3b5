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
from collections.abc import Callable
from contextlib import redirect_stdout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from gpulab.bench import timing
from gpulab.core.validate import OneOf, PositiveInt, checked

if TYPE_CHECKING:
    import torch

__all__ = [
    "HOST_READS",
    "VARIANTS",
    "SyncConfig",
    "SyncResult",
    "compare",
    "count_reads",
    "describe",
    "run_variant",
    "unsynchronised_seconds",
]

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
    host_reads: int = 0  # device -> host reads in one run, counted as the loop makes them


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


# The tensor methods that copy a value to the host (and so wait for the device): `__repr__` is
# what print() calls; a float() of a tensor already on the host waits for nothing.
HOST_READS = ("item", "cpu", "tolist", "numpy", "__repr__")


def _read_counter():
    """A TorchFunctionMode counting the host reads made by code outside torch (and prints)."""
    import os
    import sys
    from collections import Counter

    import torch
    from torch.overrides import TorchFunctionMode

    torch_dir = os.path.dirname(torch.__file__)

    class ReadCounter(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.calls: Counter = Counter()

        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            if name in HOST_READS and args and isinstance(args[0], torch.Tensor):
                caller = sys._getframe(1).f_code.co_filename
                # torch's own reads are not the loop's; a print always comes through torch
                if name == "__repr__" or not caller.startswith(torch_dir):
                    self.calls[name] += 1
            return func(*args, **(kwargs or {}))

    return ReadCounter()


@checked
def count_reads(
    variant: Annotated[str, OneOf(tuple(VARIANTS), "variant")],
    device: torch.device | str,
    config: SyncConfig = SyncConfig(),
) -> tuple[float, int]:
    """Run the loop once from a fresh model; (the summed loss, the host reads it made)."""
    counter = _read_counter()
    with counter:
        total = _loop(variant, *_setup(config, device), config.steps)
    return total, sum(counter.calls.values())


@checked
def run_variant(
    variant: Annotated[str, OneOf(tuple(VARIANTS), "variant")],
    device: torch.device | str,
    config: SyncConfig = SyncConfig(),
) -> float:
    """Run the loop once from a fresh model, reading the loss as `variant` says; the summed loss."""
    return count_reads(variant, device, config)[0]


@checked
def compare(
    device: torch.device | str, config: SyncConfig = SyncConfig(), rounds: PositiveInt = 7
) -> list[SyncResult]:
    """Time each variant's loop against the others, interleaved (timing.interleaved), on one device.

    Each variant trains its own copy of the model from the same seed, so no variant inherits
    another's warmed-up state; the summed loss and the host reads are from a separate fresh run
    of each.
    """
    counted = {name: count_reads(name, device, config) for name in VARIANTS}
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
            counted[name][0],
            description,
            measured[name].iqr / config.steps,
            counted[name][1],
        )
        for name, description in VARIANTS.items()
    ]


@checked
def unsynchronised_seconds(
    fn: Callable[[], Any],
    device: torch.device | str,
    calls: PositiveInt = 10,
    repeats: PositiveInt = 5,
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
