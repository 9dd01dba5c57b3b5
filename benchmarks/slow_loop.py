"""The slow training loop of lab 5, one fix at a time, on this machine (chapter 5).

Runs `gpulab.slowloop.SLOW` and each stage of `slowloop_grading.stages(device)` (every fix of
`slowloop_grading.FIXES` added to the ones before, ending at `slowloop.fixed_config`), interleaved and
repeated, and prints samples/s, the speed-up over the original loop, the share of time spent
waiting for data, and whether each stage's losses match the original's. Exits 1 when a stage's
losses do not match, when the fixed loop is slower than the original, or, on a CUDA GPU, when it
is less than `slowloop_grading.GPU_SPEEDUP_GOAL` times faster. On a CUDA GPU it writes its figures to
src/gpulab/data/measured/ with their provenance.

    python benchmarks/slow_loop.py [--device auto] [--quick] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys

import torch

from gpulab import hardware, record, slowloop, slowloop_grading, slowloop_profile
from gpulab.ui.tables import Table


def main(argv: list[str] | None = None) -> int:
    """Measure every stage, print the table, and return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    record.add_arguments(parser)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs per stage")
    args = parser.parse_args(argv)
    device = hardware.pick_device(args.device)
    report = hardware.detect()
    task, steps = slowloop.sizes(device, args.quick)
    stages = slowloop_grading.stages(device, task)
    print(f"{report.backend} backend, device {device}, {torch.get_num_threads()} torch threads, "
          f"{stages[-1][1].num_workers} loader workers in the fixed loop; {steps} steps of "
          f"{task.batch} samples per run, {args.repeats} interleaved runs per stage")
    timed = slowloop_profile.measure(stages, steps, device, args.repeats, task=task, progress=False)
    base = timed["original"]
    rows, failures = [], []
    for label, _ in stages:
        t = timed[label]
        try:
            slowloop_grading.check_losses(t.runs[0], base.runs[0], label)
            agree = "yes"
        except AssertionError as err:
            agree = "NO"
            failures.append(str(err))
        rows.append({"stage": label, "samples/s": t.samples_per_s,
                     "speed-up": t.samples_per_s / base.samples_per_s,
                     "waiting for data": t.data_share, "losses match": agree})
    print(Table(rows, ["stage", "samples/s", "speed-up", "waiting for data", "losses match"],
                formats={"samples/s": lambda v: f"{v:,.0f}", "speed-up": lambda v: f"{v:.2f}x",
                         "waiting for data": lambda v: f"{v:.0%}"},
                title=f"each fix added to the previous ones, median of {args.repeats} runs, "
                      f"measured on {device}"))
    speedup = rows[-1]["speed-up"]
    goal = slowloop_grading.GPU_SPEEDUP_GOAL if device.type == "cuda" else 1.0
    if speedup < goal:
        failures.append(f"the fixed loop is {speedup:.2f}x the original; the goal here is {goal}x")
    print(f"fixed loop: {speedup:.2f}x the original (goal on {device.type}: >= {goal}x)")

    figures = {"steps": steps, "batch": task.batch, "repeats": args.repeats,
               "quick": args.quick, "stages": rows}
    path = record.store("slow_loop", figures, device, report, args.out)
    print(record.stored_message(path))
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
