"""Chapter 5's lab as plain code: the slow training loop as first written, and the same loop fixed.

The lab's notebook shows ``slow_training_loop`` in an editable cell whose source the lab
generator copies from here (``tools/authoring/learner_generator.py``; a test fails when the two
differ), and the solution cell is ``fixed_training_loop``; the learner copy starts from a copy
of the slow loop. ``benchmarks/slow_loop.py`` times these same two functions, and
``gpulab.course.slowloop_grading.grade_loop`` grades a learner's loop against them by running it.

A loop receives a ``LoopRun`` (the data, its order, the model, the optimizer, the device, the
step count and the loader workers the machine can spare, all fixed by the seed) and returns the
loss of every optimizer step. ``run.part(name)`` labels a part of the loop: its host time is
added up (chapter 5 reads the time spent waiting for data) and the profiler shows it. Because every
loop gets the same ``LoopRun``, their losses can be compared step by step: a fix may change the
rounding, never the training.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from gpulab.bench import timing
from gpulab.bench.precision import autocast, fast_precision
from gpulab.core.validate import NonNegativeInt, PositiveInt, checked
from gpulab.course.slowloop import (
    LOADER_TIMEOUT_S,
    SyntheticImages,
    Task,
    build_model,
    class_weights,
    recommended_workers,
    sampling_order,
)

__all__ = ["LoopRun", "fixed_training_loop", "prepare", "run_timed", "slow_training_loop"]


@dataclass
class LoopRun:
    """Everything a training loop needs, made from (task, steps, device, seed) by ``prepare``."""

    task: Task  # batch, model width, learning rate: the training problem
    steps: int  # optimizer steps to take
    device: torch.device
    dataset: SyntheticImages  # map-style: dataset[i] is (image (image_size**2,), label)
    order: list[int]  # the dataset indices of every step, in order: steps x task.batch of them
    model: torch.nn.Module  # on `device`, seeded
    optimizer: torch.optim.Optimizer  # SGD with momentum over the model's parameters
    workers: int  # loader processes this machine can spare (slowloop.recommended_workers)
    profiling: bool = False  # label the parts for torch.profiler as well as timing them
    part_seconds: dict[str, float] = field(default_factory=dict)  # host time in each part

    @property
    def loader_timeout(self) -> float:
        """Seconds a DataLoader waits for a worker's batch (0 without workers): a worker that
        died fails the run instead of hanging it."""
        return LOADER_TIMEOUT_S if self.workers else 0.0

    @contextlib.contextmanager
    def part(self, name: str):
        """A labelled part of the loop: its host time is added up, and the profiler shows it."""
        label = (
            torch.profiler.record_function(f"loop: {name}")
            if self.profiling
            else contextlib.nullcontext()
        )
        start = time.perf_counter()
        with label:
            yield
        self.part_seconds[name] = self.part_seconds.get(name, 0.0) + time.perf_counter() - start


@checked
def prepare(
    task: Task,
    steps: PositiveInt,
    device: torch.device | str = "cpu",
    seed: NonNegativeInt = 0,
    profiling: bool = False,
    workers: NonNegativeInt | None = None,
) -> LoopRun:
    """A fresh LoopRun: the same data, order and initial weights for every loop given this seed.

    `workers` overrides the loader processes the machine is judged to spare (chapter 5
    measures a few counts).
    """
    device = torch.device(device)
    model = build_model(task, seed).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=task.lr, momentum=0.9)
    spare = recommended_workers(device) if workers is None else workers
    return LoopRun(
        task,
        steps,
        device,
        SyntheticImages(task, seed),
        sampling_order(task, steps, seed),
        model,
        optimizer,
        spare,
        profiling,
    )


# fmt: off
# The two loops are the lab's cells; the fixed one, the learner's mechanism, within 20 lines.
def slow_training_loop(run: LoopRun) -> list[float]:
    """The training script as first written: a starved loader, tiny
    micro-batches, per-step work."""
    task, device, part = run.task, run.device, run.part
    # written for a small GPU; the optimizer's batch is reached by
    # accumulation
    micro_batch = 4
    # the dataset augments each sample here, in the training process
    loader = DataLoader(run.dataset, batch_size=micro_batch,
                        sampler=run.order)
    batches = iter(loader)
    losses = []
    for _ in range(run.steps):
        step_loss = 0.0
        # gradient accumulation over micro-batches
        for _ in range(task.batch // micro_batch):
            with part("wait for data"):
                # (micro_batch, image_size**2), (micro_batch,)
                x, y = next(batches)
            with part("copy to device"):
                x, y = x.to(device), y.to(device)
            with part("class weights"):  # the same at every micro-batch
                counts = class_weights(run.dataset.labels, task.classes)
                weights = torch.tensor(counts, device=device)
            with part("forward + backward"):
                logits = run.model(x)  # (micro_batch, classes)
                # a sum over samples / the step's batch: the micro-batches
                # add up to the batch
                loss = F.cross_entropy(logits, y, weight=weights,
                                       reduction="sum") / task.batch
                loss.backward()
            with part("read the loss (.item)"):
                # the host waits here until the device has finished
                step_loss += loss.item()
        with part("optimizer step"):
            run.optimizer.step()
            run.optimizer.zero_grad()
        losses.append(step_loss)
    return losses


def fixed_training_loop(run: LoopRun) -> list[float]:
    """The same training with every problem fixed: the same losses, step by step, sooner."""
    task, device = run.task, run.device
    counts = torch.bincount(torch.as_tensor(run.dataset.labels), minlength=task.classes).double()
    weights = torch.where(counts > 0, counts.sum() / (task.classes * counts), 0).float().to(device)
    loader = DataLoader(run.dataset, task.batch, sampler=run.order, num_workers=run.workers,
                        pin_memory=device.type == "cuda", timeout=run.loader_timeout)
    bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported(including_emulation=False)
    batches, losses = iter(loader), []  # the losses stay on the device
    for _ in range(run.steps):
        with run.part("wait for data"):  # then copied from page-locked memory: no wait
            x, y = (t.to(device, non_blocking=True) for t in next(batches))
        with run.part("forward + backward"):
            with torch.autocast(device.type, torch.bfloat16, enabled=bf16):  # loss stays fp32
                loss = F.cross_entropy(run.model(x), y, weights, reduction="sum") / task.batch
            loss.backward()
        run.optimizer.step()
        run.optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
    return torch.stack(losses).tolist()  # one copy and one wait, after the last step
# fmt: on

# Checked without a decorator line: the lab shows these two functions' source as it is
# (tools/authoring/learner_generator.py), and a learner's copy has no @checked to import.
slow_training_loop = checked(slow_training_loop)
fixed_training_loop = checked(fixed_training_loop)


def warm_up(run: LoopRun) -> None:
    """One forward, backward and step on a copy at each batch size a loop may use, so that
    one-off start-up costs are no loop's bill (the run itself is left untouched)."""
    import copy

    spare = copy.deepcopy(run.model)
    opt = torch.optim.SGD(spare.parameters(), lr=run.task.lr, momentum=0.9)
    for rows in (4, run.task.batch):
        x = torch.zeros(rows, run.task.image_size**2, device=run.device)
        y = torch.zeros(rows, dtype=torch.long, device=run.device)
        with autocast(run.device, fast_precision(run.device)):
            logits = spare(x)
        F.cross_entropy(logits.float(), y).backward()
        opt.step()
    timing.synchronize(run.device)


@checked
def run_timed(loop: Callable[[LoopRun], Any], run: LoopRun) -> tuple[Any, float]:
    """(what the loop returned, its wall time in seconds, the device synchronised at both ends)."""
    warm_up(run)
    timing.synchronize(run.device)
    start = time.perf_counter()
    out = loop(run)
    timing.synchronize(run.device)
    return out, time.perf_counter() - start
