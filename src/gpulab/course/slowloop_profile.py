"""Where a training loop's time goes: interleaved timings and the profiler's view (chapter 5).

``measure_loops`` runs several training loops of ``gpulab.training_loops``'s form in turn
(a, b, a, b...), so that drift in the machine's speed hits them all alike, and reports medians;
``profile_training_loop`` runs one under ``torch.profiler`` and returns the share of time in each
of the loop's labelled parts and the operators that cost most.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpulab.bench.progress import progress_bar
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import NonNegativeInt, PositiveInt, checked
from gpulab.course.slowloop import Task, start_quietly, stop_quietly

if TYPE_CHECKING:
    import torch

__all__ = ["ProfileReport", "TimedLoop", "measure_loops", "profile_training_loop"]


@dataclass
class ProfileReport:
    """Where a run's time went: the loop's phases, and the torch operators that cost most."""

    phases: list[dict]  # {"phase", "calls", "seconds", "share"} over the loop's wall time
    ops: list[dict]  # {"op", "calls", "seconds", "share"}: self time, largest first
    seconds: float  # wall time of the profiled run (the profiler's own overhead included)
    device: str
    device_busy: float | None = None  # on a CUDA GPU: share of the run its kernels ran

    @property
    def data_share(self) -> float:
        """Share of the run spent waiting for data."""
        return next((p["share"] for p in self.phases if p["phase"] == "wait for data"), 0.0)


def _report(prof, seconds: float, device: str, on_cuda: bool, top: int) -> ProfileReport:
    """The phases and top operators of a finished profile of a run that took `seconds`."""
    events = prof.key_averages()
    wall_us = seconds * 1e6
    phases = [
        {
            "phase": e.key.removeprefix("loop: "),
            "calls": e.count,
            "seconds": e.cpu_time_total / 1e6,
            "share": e.cpu_time_total / wall_us,
        }
        for e in events
        if e.key.startswith("loop: ")
    ]
    phases.sort(key=lambda p: -p["seconds"])

    def self_time(e) -> float:
        # on a GPU the kernels' own time; on a CPU the time inside the op minus its children
        return e.self_device_time_total if on_cuda else e.self_cpu_time_total

    ops = [
        e for e in events if not e.key.startswith(("loop: ", "ProfilerStep")) and self_time(e) > 0
    ]
    ops.sort(key=lambda e: -self_time(e))
    op_rows = [
        {
            "op": _short(e.key),
            "calls": e.count,
            "seconds": self_time(e) / 1e6,
            "share": self_time(e) / wall_us,
        }
        for e in ops[:top]
    ]
    busy = sum(self_time(e) for e in ops) / wall_us if on_cuda else None
    return ProfileReport(phases, op_rows, seconds, device, busy)


@checked
def profile_training_loop(
    loop: Callable,
    task: Task,
    steps: PositiveInt,
    device: torch.device | str = "cpu",
    seed: NonNegativeInt = 0,
    top: PositiveInt = 8,
    workers: NonNegativeInt | None = None,
) -> ProfileReport:
    """Run a training loop of gpulab.training_loops's form under torch.profiler, its
    `run.part(...)` labels on; return its phases' shares and its top operators."""
    import time

    import torch
    from torch.profiler import ProfilerActivity, profile

    from gpulab.bench import timing
    from gpulab.course import training_loops

    device = torch.device(device)
    on_cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_cuda else [])
    run = training_loops.prepare(task, steps, device, seed, profiling=True, workers=workers)
    training_loops.warm_up(run)
    prof = profile(activities=activities)
    start_quietly(prof)
    try:
        start = time.perf_counter()
        loop(run)
        timing.synchronize(device)
        seconds = time.perf_counter() - start
    finally:
        stop_quietly(prof)
    return _report(prof, seconds, str(device), on_cuda, top)


@dataclass
class TimedLoop:
    """Interleaved runs of one training loop: the losses of the first, every run's seconds."""

    label: str
    losses: tuple[float, ...]
    runs_s: list[float]
    samples: int  # samples trained on per run
    data_wait_s: list[float] = field(default_factory=list)  # per run: time in "wait for data"

    @property
    def seconds(self) -> float:
        """Median wall time of a run."""
        return statistics.median(self.runs_s)

    @property
    def samples_per_s(self) -> float:
        """Samples per second at the median time."""
        return self.samples / self.seconds

    @property
    def data_share(self) -> float:
        """Median share of a run spent waiting for data (the loop's "wait for data" part)."""
        return statistics.median(w / s for w, s in zip(self.data_wait_s, self.runs_s, strict=True))


@checked
def measure_loops(
    loops: dict[str, Callable],
    task: Task,
    steps: PositiveInt,
    device: torch.device | str = "cpu",
    repeats: PositiveInt = 3,
    seed: NonNegativeInt = 0,
    progress: bool = True,
    workers: dict | None = None,
) -> dict[str, TimedLoop]:
    """Time training loops (label -> loop function) `repeats` times each, interleaved.

    `workers` (label -> count) sets a loop's loader processes; the machine's rule otherwise.
    """
    from gpulab.course import training_loops

    if not loops:
        raise GpulabConfigError("loops is empty; give at least one training loop to measure")
    found: dict[str, TimedLoop] = {}
    order = [label for _ in range(repeats) for label in loops]
    for label in progress_bar(order, "training loops", progress):
        run = training_loops.prepare(task, steps, device, seed, workers=(workers or {}).get(label))
        out, seconds = training_loops.run_timed(loops[label], run)
        if label not in found:
            found[label] = TimedLoop(label, tuple(float(v) for v in out), [], steps * task.batch)
        found[label].runs_s.append(seconds)
        found[label].data_wait_s.append(run.part_seconds.get("wait for data", 0.0))
    return found


def _short(name: str, width: int = 64) -> str:
    """An operator or kernel name cut to `width` characters (CUDA kernels' names are long)."""
    return name if len(name) <= width else name[: width - 3] + "..."
