"""How a learner's training loop is graded in chapter 5's lab: by running it, never by reading it.

``grade_loop`` runs the learner's loop and the original (``training_loops.slow_training_loop``)
on the same ``LoopRun`` (data, seed, steps) and checks that it returns one loss per step, takes
every optimizer step on the whole batch, matches the original's losses within the tolerance of
the device's precision (``tolerance_for``), and makes no host synchronisation per step; it times
both. ``LoopGrade.require`` raises AssertionError naming each failed check and why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

from gpulab.bench import timing
from gpulab.core.validate import NonNegativeInt, PositiveInt, checked
from gpulab.course import labs
from gpulab.course.slowloop import Task
from gpulab.reference.formats import AutocastPrecision

__all__ = [
    "GPU_SPEEDUP_GOAL",
    "HOST_SYNC_METHODS",
    "LoopGrade",
    "allowed_syncs",
    "grade_loop",
    "tolerance_for",
]

GPU_SPEEDUP_GOAL = 2.0  # on a CUDA GPU the fixed loop must be at least this much faster


@checked
def tolerance_for(precision: AutocastPrecision) -> dict[str, float]:
    """rtol and atol within which a loop's losses, in `precision`, must match the fp32 original's.

    In fp32 the loops differ only in the order of additions (micro-batches, matrix blocking):
    measured on a CPU, at most 3e-7 relative over 100 steps. Autocast rounds every product's
    inputs to 8 (bf16) or 11 (fp16) bits of mantissa, and training carries the difference
    forward: bf16 autocast on a CPU differed by up to 1.1e-2 relative over the lab's 40 quick
    GPU steps and 7e-3 over its 60 full ones, 5 to 10 times inside the bf16 tolerance. That
    tolerance still catches another data order or a learning rate 20% off.
    """
    if precision == "autocast-bf16":
        return {"rtol": 5e-2, "atol": 1e-2}
    if precision == "autocast-fp16":
        return {"rtol": 2e-2, "atol": 5e-3}
    return {"rtol": 1e-4, "atol": 1e-6}


# ---------------------------------------------------------------- grading a loop the learner wrote

# Tensor methods that copy a value to the host, so the host waits for the device to finish.
HOST_SYNC_METHODS = (
    "item",
    "cpu",
    "tolist",
    "numpy",
    "__float__",
    "__int__",
    "__bool__",
    "__index__",
)


@checked
def allowed_syncs(steps: PositiveInt) -> int:
    """Host synchronisations a fixed loop may make in `steps` steps: about one per ten steps,
    at least one (reading the losses at the end)."""
    return max(1, steps // 10)


def _host_sync_counter():
    """A TorchFunctionMode that counts host synchronisations made by code outside torch."""
    import os
    import sys
    from collections import Counter

    import torch
    from torch.overrides import TorchFunctionMode

    torch_dir = os.path.dirname(torch.__file__)
    here = __file__

    class HostSyncCounter(TorchFunctionMode):
        """Counts `.item()`, `.cpu()`, `.tolist()` and the like, by the code that called them.

        A call that torch makes itself (a GradScaler checking for infinities) is not the
        loop's, so only calls whose Python caller lies outside torch's package count.
        """

        def __init__(self):
            super().__init__()
            self.calls: Counter = Counter()

        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            if name in HOST_SYNC_METHODS and args and isinstance(args[0], torch.Tensor):
                frame = sys._getframe(1)
                while frame is not None and frame.f_code.co_filename == here:
                    frame = frame.f_back
                if frame is None or not frame.f_code.co_filename.startswith(torch_dir):
                    self.calls[name] += 1
            return func(*args, **(kwargs or {}))

    return HostSyncCounter()


@dataclass
class LoopGrade:
    """What grading a learner's training loop found: each check, and both loops' times."""

    name: str  # the learner's function
    checks: list[dict]  # {"check", "passed", "detail"} in the order they were made
    losses: tuple[float, ...]
    reference_losses: tuple[float, ...]
    seconds: float  # the learner's loop, wall time, warm
    reference_seconds: float  # the original loop on the same run
    host_syncs: dict[str, int]  # method -> calls made by the loop
    device: str

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return all(c["passed"] for c in self.checks)

    @property
    def speedup(self) -> float:
        """How many times faster than the original loop (one run each, measured here)."""
        return self.reference_seconds / self.seconds

    def failed(self) -> list[str]:
        """The names of the checks that failed."""
        return [c["check"] for c in self.checks if not c["passed"]]

    def require(self) -> None:
        """Raise AssertionError naming each failed check and why; nothing when all passed."""
        bad = [f"{c['check']}: {c['detail']}." for c in self.checks if not c["passed"]]
        if bad:
            raise labs.CheckFailed(f"`{self.name}` failed {len(bad)} check(s). " + " ".join(bad))

    def table(self):
        """The checks as a Table, with the times below them."""
        from gpulab.ui.tables import Table

        rows = [
            {
                "check": c["check"],
                "result": "passed" if c["passed"] else "FAILED",
                "detail": c["detail"],
            }
            for c in self.checks
        ]
        return Table(
            rows,
            ["check", "result", "detail"],
            title=f"grading `{self.name}` on {self.device}: "
            f"{self.seconds:.3g} s against the original's "
            f"{self.reference_seconds:.3g} s ({self.speedup:.2f}x, one warm run "
            "each, measured here)",
        )

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    def __repr__(self) -> str:
        return str(self.table())


def _as_losses(out) -> tuple[float, ...] | None:
    """A loop's returned losses as floats (read outside the count), or None if they are not."""
    import torch

    if isinstance(out, torch.Tensor):
        return tuple(float(v) for v in out.detach().flatten().tolist())
    try:
        return tuple(float(v.detach()) if isinstance(v, torch.Tensor) else float(v) for v in out)
    except (TypeError, ValueError):
        return None


@checked
def grade_loop(
    loop: Callable,
    task: Task | None = None,
    steps: PositiveInt = 8,
    device: torch.device | str = "cpu",
    seed: NonNegativeInt = 0,
    reference: Callable | None = None,
) -> LoopGrade:
    """Run a learner's training loop and the original on the same LoopRun, and check the fix.

    Checks, by running it (never by reading its source): it returns one loss per step; it
    takes `steps` optimizer steps on every sample of each step's batch (the work per step);
    its losses match the original's within the tolerance of this device's precision; it makes
    no host synchronisation per step (a TorchFunctionMode counts `.item()`, `.cpu()`,
    `.tolist()` and the like; on CUDA, `torch.cuda.set_sync_debug_mode` adds the implicit
    ones). Both loops are timed, warm. Raises AssertionError while `loop` is a stub.
    """
    import warnings

    import torch

    from gpulab.bench.precision import fast_precision
    from gpulab.course import training_loops

    task = task or Task()
    reference = reference or training_loops.slow_training_loop
    name = getattr(loop, "__name__", "your loop")
    device = torch.device(device)
    base = training_loops.prepare(task, steps, device, seed)
    ref_out, ref_seconds = training_loops.run_timed(reference, base)
    ref_losses = _as_losses(ref_out)

    run = training_loops.prepare(task, steps, device, seed)
    training_loops.warm_up(run)  # on a copy of the model, before the counting hooks exist
    rows, opt_steps = [0], [0]  # samples the model saw, optimizer steps taken
    run.model.register_forward_pre_hook(
        lambda _m, inputs: rows.__setitem__(0, rows[0] + int(inputs[0].shape[0]))
    )
    run.optimizer.register_step_post_hook(lambda *_: opt_steps.__setitem__(0, opt_steps[0] + 1))
    counter = _host_sync_counter()
    timing.synchronize(device)
    cuda = device.type == "cuda"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
        start = time.perf_counter()
        try:
            with counter:
                out = loop(run)
        except NotImplementedError as exc:
            raise labs.CheckFailed(
                f"`{name}` is not written yet: {exc or labs.DEFAULT_HINT}"
            ) from None
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode(0)
        timing.synchronize(device)
        seconds = time.perf_counter() - start
    implicit = sum("synchroniz" in str(w.message) for w in caught)
    losses = _as_losses(out)
    checks = []

    def check(label: str, passed: bool, detail: str) -> None:
        checks.append({"check": label, "passed": bool(passed), "detail": detail})

    if losses is None:
        check(
            "one loss per step",
            False,
            f"it returned {type(out).__name__}; return the list "
            "of every step's loss (floats, or a tensor of them)",
        )
        losses = ()
    else:
        check(
            "one loss per step",
            len(losses) == steps,
            f"{len(losses)} losses for the run's {steps} steps"
            + ("" if len(losses) == steps else ": loop over run.steps, one loss per step"),
        )
    check(
        "optimizer steps",
        opt_steps[0] == steps,
        f"{opt_steps[0]} optimizer steps, the run has {steps}"
        + ("" if opt_steps[0] == steps else ": one optimizer.step() per step, no more, no fewer"),
    )
    want_rows = steps * task.batch
    check(
        "work per step",
        rows[0] == want_rows,
        f"the model saw {rows[0]:,} samples, steps x Task.batch = {want_rows:,}"
        + ("" if rows[0] == want_rows else ": every step must train on its whole batch, once"),
    )
    tolerance = tolerance_for(fast_precision(device))
    if len(losses) == len(ref_losses):
        diff = np.abs(np.asarray(losses) - np.asarray(ref_losses))
        allowed = tolerance["atol"] + tolerance["rtol"] * np.abs(np.asarray(ref_losses))
        worst = int(np.argmax(diff / allowed))
        same = bool(np.all(diff <= allowed))
        check(
            "same training",
            same,
            f"largest difference from the original's losses {diff.max():.1e}"
            + (
                ""
                if same
                else f", at step {worst + 1} ({losses[worst]:.5f} against "
                f"{ref_losses[worst]:.5f}, allowed {allowed[worst]:.1e}): the fix changed the "
                "training (a learning rate, the data order, the batch or the loss's scaling)"
            ),
        )
    else:
        check(
            "same training",
            False,
            "cannot compare: the number of losses differs from the original's",
        )
    explicit = sum(counter.calls.values())
    syncs = explicit + implicit
    limit = allowed_syncs(steps)
    calls = (
        ", ".join(
            f".{k}() x{v}" if not k.startswith("__") else f"{k} x{v}"
            for k, v in sorted(counter.calls.items())
        )
        or "none"
    )
    check(
        "no host sync per step",
        syncs <= limit,
        f"{syncs} host synchronisation(s) in {steps} steps ({calls}"
        + (f"; {implicit} implicit, from CUDA's sync debug mode" if cuda else "")
        + f"), at most {limit} allowed"
        + (
            ""
            if syncs <= limit
            else ": the host waits for the device each time; keep the "
            "losses on the device and read them in one copy at the end"
        ),
    )
    return LoopGrade(
        name,
        checks,
        tuple(losses),
        tuple(ref_losses),
        seconds,
        ref_seconds,
        dict(counter.calls),
        str(device),
    )
