"""Correct timing of device work (chapter 1; every later chapter measures with it).

A GPU runs work asynchronously: a PyTorch call returns once the kernel is queued, not when it
has finished. The first calls also pay one-off costs (library handles, lazy module loading,
thread-pool start-up). So a measurement here:

1. warms up until those one-off costs are paid;
2. synchronises the device before starting and before stopping the clock (on CUDA it uses
   CUDA events, which time the work on the GPU itself);
3. times many calls in blocks, so a call shorter than the clock's resolution is still timed;
4. reports the median and the interquartile range over blocks, with the thread count and the
   device, rather than one number, and says when the blocks disagree by more than the course's
   tolerance (``SPREAD_TOLERANCE``): the machine was busy while it ran.

The thread count is the process's own (``torch.get_num_threads()``), unlike
``torch.utils.benchmark.Timer``, which times on one thread unless told otherwise.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import format_seconds
from gpulab.core.validate import (
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    checked,
)

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = [
    "MAX_BLOCKS",
    "MIN_BLOCKS",
    "SPREAD_TOLERANCE",
    "TARGET_BLOCK_S",
    "Measurement",
    "benchmark",
    "busy_note",
    "find_device",
    "interleaved",
    "synchronize",
]

# A block of calls should last long enough that the clock's resolution and the cost of
# reading it are negligible (perf_counter: well under a microsecond; CUDA events: ~0.5 us).
TARGET_BLOCK_S = 2e-3
MIN_BLOCKS = 5
MAX_BLOCKS = 10_000
# The course's tolerance on a timing's spread: the slowest timed block may take up to this many
# times the median block. The blocks of one operation repeat the same work, so a block much
# slower than the median was slowed by something else: another process on the cores, the OS
# moving threads, the clock dropping. The median is then still reported, with a note saying
# the machine was busy (busy_note), because the whole run may have been slowed too.
SPREAD_TOLERANCE = 1.5


@dataclass(frozen=True)
class Measurement:
    """Seconds per call of one operation, from several timed blocks of calls."""

    label: str
    times: tuple[float, ...]  # seconds per call, one value per block
    runs: int  # calls timed in total (warm-up excluded)
    threads: int  # torch CPU threads during the measurement
    device: str

    @property
    def median(self) -> float:
        """Median seconds per call over the blocks."""
        return statistics.median(self.times)

    @property
    def iqr(self) -> float:
        """Interquartile range of seconds per call over the blocks (the spread)."""
        if len(self.times) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times, n=4, method="inclusive")
        return q3 - q1

    @property
    def min(self) -> float:
        """Fastest block's seconds per call."""
        return min(self.times)

    @property
    def spread(self) -> float:
        """The slowest block's time over the median block's (1.0: every block took as long)."""
        return max(self.times) / self.median if self.median > 0 else 1.0

    @property
    def busy_note(self) -> str | None:
        """What a spread above SPREAD_TOLERANCE says about this machine; None within it."""
        return busy_note(self.spread, len(self.times), self.label)

    def rate(self, work: float) -> float:
        """Work per second (FLOP/s, bytes/s, tokens/s...) at the median time."""
        return work / self.median

    def __repr__(self) -> str:
        return (
            f"<Measurement {self.label}: {format_seconds(self.median)} per call "
            f"(IQR {format_seconds(self.iqr)}), {self.runs} runs in {len(self.times)} blocks, "
            f"{self.threads} threads, {self.device}>"
        )


@checked
def busy_note(spread: PositiveFloat | None, blocks: NonNegativeInt, what: str) -> str | None:
    """A line for a timing whose slowest block took more than SPREAD_TOLERANCE x the median.

    `spread` is Measurement.spread, `blocks` how many blocks were timed, `what` names the
    timing on the page ("fp32 512x512x512"). None when the spread is within the tolerance.
    """
    if spread is None or not spread > SPREAD_TOLERANCE:
        return None
    return (
        f"{what}: the slowest of {blocks} timed blocks took {spread:.3g}x the median "
        f"(more than the {SPREAD_TOLERANCE:g}x this course tolerates): the machine was busy "
        f"with other work while it ran, so this time may be too long"
    )


# ---------------------------------------------------------------- devices


def _torch():
    import torch

    return torch


@checked
def synchronize(device: torch.device | str) -> None:
    """Wait until all work queued on the device has finished (no-op on the CPU)."""
    torch = _torch()
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
    elif device.type == "xpu":
        torch.xpu.synchronize(device)


@checked
def find_device(args: tuple, kwargs: dict):
    """The device of the first tensor among the arguments, else the CPU."""
    torch = _torch()
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device
        if isinstance(value, torch.nn.Module):
            for p in value.parameters():
                return p.device
    return torch.device("cpu")


class _Clock:
    """Times a block of calls: CUDA events on a CUDA device, else perf_counter with syncs."""

    def __init__(self, device):
        self.device = device
        self.cuda = device.type == "cuda"

    def time_block(self, call: Callable[[], Any], count: int) -> float:
        """Seconds for `count` back-to-back calls, the device synchronised at both ends."""
        torch = _torch()
        synchronize(self.device)
        if self.cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(count):
                call()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3  # elapsed_time is in milliseconds
        t0 = time.perf_counter_ns()
        for _ in range(count):
            call()
        # checked: a few microseconds, about 0.1 % of a block of TARGET_BLOCK_S
        synchronize(self.device)
        return (time.perf_counter_ns() - t0) / 1e9


@checked
def benchmark(
    fn: Callable,
    *args: Any,
    device: torch.device | str | None = None,
    min_run_time: PositiveFloat = 0.2,
    warmup_time: NonNegativeFloat | None = None,
    label: str | None = None,
    **kwargs: Any,
) -> Measurement:
    """Time fn(*args, **kwargs) correctly: warm-up, device sync, blocks of calls, median and IQR.

    `device` defaults to the device of the first tensor (or module) among the arguments.
    `min_run_time` is the least total time spent in timed blocks; `warmup_time` defaults to a
    tenth of it (at least 50 ms, and always two calls).
    """
    torch = _torch()
    dev = torch.device(device) if device is not None else find_device(args, kwargs)
    clock = _Clock(dev)

    # partial is implemented in C: a Python closure here would add ~0.1 us to every call,
    # 10% of a microsecond-long operation
    call = functools.partial(fn, *args, **kwargs) if args or kwargs else fn

    # 1. warm-up: pays library initialisation, lazy loading, allocator growth, thread start-up
    warmup_time = max(0.05, 0.1 * min_run_time) if warmup_time is None else warmup_time
    spent, calls = 0.0, 0
    while calls < 2 or spent < warmup_time:
        spent += clock.time_block(call, 1)
        calls += 1
    # 2. block size from the warmed-up speed, so each block is long against the clock
    per_call = max(clock.time_block(call, 1), 1e-9)
    per_block = max(1, min(int(TARGET_BLOCK_S / per_call), 1_000_000))
    # 3. timed blocks until min_run_time is spent and there are enough blocks for a spread
    times: list[float] = []
    total = 0.0
    while (total < min_run_time or len(times) < MIN_BLOCKS) and len(times) < MAX_BLOCKS:
        elapsed = clock.time_block(call, per_block)
        times.append(elapsed / per_block)
        total += elapsed
    name = label or getattr(fn, "__name__", "fn")
    return Measurement(
        name, tuple(times), per_block * len(times), torch.get_num_threads(), str(dev)
    )


@checked
def interleaved(
    calls: dict[str, Callable[[], Any]],
    device: torch.device | str = "cpu",
    rounds: PositiveInt = 7,
    warmup: PositiveInt = 2,
) -> dict[str, Measurement]:
    """Time several calls against each other: each warmed up, then one call of each per round.

    Timing one variant after another lets whatever drifts in between (a cold cache, a thread
    pool starting, another process) land on one of them; interleaving spreads it over all, and
    the rounds rotate the order so that none always runs first. Median over rounds, as benchmark.
    """
    if not calls:
        raise GpulabConfigError("calls is empty; give at least one label -> function to time")
    torch = _torch()
    clock = _Clock(torch.device(device))
    labels = list(calls)
    for label in labels:
        for _ in range(warmup):
            clock.time_block(calls[label], 1)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for r in range(rounds):
        for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
            times[label].append(clock.time_block(calls[label], 1))
    return {
        label: Measurement(label, tuple(t), rounds, torch.get_num_threads(), str(clock.device))
        for label, t in times.items()
    }
