"""The fixes of chapter 5's lab, and how a learner's fix is checked (the lab's grading).

Each ``Fix`` names the ``LoopConfig`` fields it changes; ``check_fix`` applies a learner's
function, rejects a fix that changes anything else or does not go far enough, runs the loop
and compares every step's loss with the slow loop's (``check_losses``, within
``loss_tolerance``). ``stages`` is the reference answer: each fix added to the ones before.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulab.core.errors import GpulabConfigError
from gpulab.course import labs
from gpulab.course.slowloop import (
    SLOW,
    LoopConfig,
    LoopResult,
    Task,
    fixed_config,
    run_loop,
    validate,
)

__all__ = ["FIXES", "GPU_SPEEDUP_GOAL", "Fix", "check_fix", "check_losses", "loss_tolerance",
           "stages"]

GPU_SPEEDUP_GOAL = 2.0  # on a CUDA GPU the fixed loop must be at least this much faster


@dataclass(frozen=True)
class Fix:
    """One planted problem's fix: the LoopConfig fields it changes, and why that is faster."""

    label: str  # short name, for tables and charts
    fields: tuple[str, ...]  # the LoopConfig fields it changes; every other field stays
    why: str  # one line: what changes, and why it saves time

    def problems(self, before: LoopConfig, after: LoopConfig, device: Any,
                 task: Task) -> list[str]:
        """What keeps `after` from being this fix applied to `before` (empty when it is)."""
        import torch

        out = [f"{f} changed from {getattr(before, f)!r} to {getattr(after, f)!r}, but this "
               f"fix is about {', '.join(self.fields)} only: fix one problem at a time"
               for f in _FIELDS if f not in self.fields and getattr(after, f) != getattr(before, f)]
        cuda = torch.device(device).type == "cuda"
        if "precompute" in self.fields and not after.precompute:
            out.append("precompute is still False: the class weights are still counted at "
                       "every micro-batch")
        if "micro_batch" in self.fields and after.micro_batch != task.batch:
            out.append(f"micro_batch={after.micro_batch}: use the whole batch, "
                       f"Task.batch={task.batch}; it fits the memory many times over")
        if "pin_memory" in self.fields and cuda and not after.pin_memory:
            out.append("pin_memory is False: on a CUDA GPU page-locked batches copy faster "
                       "and without blocking")
        if "sync_every" in self.fields and after.sync_every < 10:
            out.append(f"sync_every={after.sync_every}: the loop still waits for the device "
                       "every few micro-batches; read the loss every few dozen")
        if "precision" in self.fields and cuda and after.precision == "fp32":
            out.append("precision is 'fp32' on a CUDA GPU, whose 16-bit Tensor Cores are many "
                       "times faster than its fp32 units: use autocast")
        return out


_FIELDS = tuple(f.name for f in dataclasses.fields(LoopConfig))

# The fixes in the lab's order, each on top of the ones before.
FIXES: tuple[Fix, ...] = (
    Fix("class weights once", ("precompute",),
        "the Python loop over every label runs once, before training, not at every micro-batch"),
    Fix("whole batch", ("micro_batch",),
        "one forward/backward of the whole batch instead of many tiny ones (same gradient)"),
    Fix("loader workers", ("num_workers", "pin_memory"),
        "worker processes augment the next batches while the model trains on this one"),
    Fix("no per-step .item()", ("sync_every",),
        "the losses stay on the device and are read in one copy every few dozen micro-batches"),
    Fix("autocast", ("precision",),
        "the matrix products run in 16 bits where the device has fast units for them"),
)


def stages(device: Any = "cpu", task: Task | None = None) -> list[tuple[str, LoopConfig]]:
    """The slow loop, then each fix of FIXES added to the previous one, ending at fixed_config."""
    target = fixed_config(device, task)
    config = SLOW
    out = [("original", config)]
    for fix in FIXES:
        config = dataclasses.replace(config, **{f: getattr(target, f) for f in fix.fields})
        out.append((fix.label, config))
    return out


def check_losses(result: LoopResult, reference: LoopResult, name: str = "the loop"):
    """Raise AssertionError unless `result`'s losses match `reference`'s within tolerance.

    Returns gpulab.labs.check's CheckResult (the largest difference seen) when they match.
    """
    if len(result.losses) != len(reference.losses):
        raise AssertionError(f"{name} ran {len(result.losses)} steps, the reference "
                             f"{len(reference.losses)}: run both for the same steps")
    # as arrays, so that a mismatch is reported as "k of n values differ, worst at step i"
    return labs.check(lambda: np.asarray(result.losses), lambda: np.asarray(reference.losses),
                      [()], name=f"{name}'s losses", **loss_tolerance(result.config))


def check_fix(fix_fn, fix: Fix, before: LoopConfig, reference: LoopResult, steps: int,
              device: Any = "cpu", task: Task | None = None, seed: int = 0) -> LoopResult:
    """Apply a learner's fix to `before`, check it, run it, check its losses; return the run.

    `fix_fn(config) -> LoopConfig` is the learner's function, `fix` the FIXES entry it
    implements, `reference` the slow loop's run. Raises AssertionError saying what is wrong,
    or "is not written yet" while the function is a stub.
    """
    task = task or Task()
    name = getattr(fix_fn, "__name__", "your fix")
    try:
        after = fix_fn(before)
    except NotImplementedError as exc:
        raise AssertionError(f"`{name}` is not written yet: {exc or labs.DEFAULT_HINT}") from None
    if not isinstance(after, LoopConfig):
        raise AssertionError(f"`{name}` returned {type(after).__name__}; return a LoopConfig "
                             "(dataclasses.replace(config, field=value))")
    try:
        validate(after, task, device)
    except GpulabConfigError as err:
        raise AssertionError(f"`{name}` returned a config that cannot run: {err}") from None
    problems = fix.problems(before, after, device, task)
    if problems:
        raise AssertionError(f"`{name}`: " + "; ".join(problems))
    result = run_loop(after, steps, device, seed, task)
    check_losses(result, reference, name)
    return result


def loss_tolerance(config: LoopConfig) -> dict[str, float]:
    """rtol and atol within which a config's losses must match the fp32 slow loop's.

    In fp32 the configs differ only in the order of additions (micro-batches, matrix
    blocking): measured on a CPU, at most 3e-7 relative over 100 steps. Autocast rounds every
    product's inputs to 8 (bf16) or 11 (fp16) bits of mantissa, and training carries the
    difference forward: bf16 autocast on a CPU differed by up to 1.1e-2 relative over the
    lab's 40 quick GPU steps and 7e-3 over its 60 full ones, 5 to 10 times inside the bf16
    tolerance. That tolerance still catches another data order or a learning rate 20% off.
    """
    if config.precision == "autocast-bf16":
        return {"rtol": 5e-2, "atol": 1e-2}
    if config.precision == "autocast-fp16":
        return {"rtol": 2e-2, "atol": 5e-3}
    return {"rtol": 1e-4, "atol": 1e-6}
