"""The slow training loop of lab 5 and the same loop fixed, timed on this machine (chapter 5).

Times `gpulab.training_loops.slow_training_loop` (the script as written, the code the lab shows)
and `fixed_training_loop` (the lab's solution), interleaved and repeated, grades the fixed loop
with `slowloop_grading.grade_loop` (the lab's grader: same losses, the whole batch per step, no
host synchronisation per step), and prints samples/s and the speed-up. Exits 1 when the grade
fails, when the fixed loop is slower than the original, or, on a CUDA GPU, when it is less than
`slowloop_grading.GPU_SPEEDUP_GOAL` times faster. On a CUDA GPU it writes its figures to
src/gpulab/data/measured/ with their provenance.

    python benchmarks/slow_loop.py [--device auto] [--quick] [--repeats 3]
"""

from __future__ import annotations

import sys

import torch

from gpulab import record, slowloop, slowloop_grading, slowloop_profile, training_loops
from gpulab.ui.tables import Table

LOOPS = {"original": training_loops.slow_training_loop, "fixed": training_loops.fixed_training_loop}


def main(argv: list[str] | None = None) -> int:
    """Measure both loops, grade the fixed one, print the table, and return the exit status."""
    args, device, report = record.start(
        __doc__.splitlines()[0],
        argv,
        lambda p: p.add_argument(
            "--repeats", type=int, default=3, help="interleaved runs per loop"
        ),
    )
    task, steps = slowloop.sizes(device, args.quick)
    print(
        f"{report.backend} backend, device {device}, {torch.get_num_threads()} torch threads, "
        f"{slowloop.recommended_workers(device)} loader workers in the fixed loop; {steps} steps "
        f"of {task.batch} samples per run, {args.repeats} interleaved runs per loop"
    )
    grade = slowloop_grading.grade_loop(LOOPS["fixed"], task, steps, device)
    print(grade)
    failures = [f"{c['check']}: {c['detail']}" for c in grade.checks if not c["passed"]]
    timed = slowloop_profile.measure_loops(LOOPS, task, steps, device, args.repeats, progress=False)
    base = timed["original"]
    rows = [
        {
            "stage": label,
            "samples/s": t.samples_per_s,
            "speed-up": t.samples_per_s / base.samples_per_s,
        }
        for label, t in timed.items()
    ]
    print(
        Table(
            rows,
            ["stage", "samples/s", "speed-up"],
            formats={"samples/s": ",.0f", "speed-up": ".2f x"},
            title=f"median of {args.repeats} interleaved runs, measured on {device}",
        )
    )
    speedup = rows[-1]["speed-up"]
    goal = slowloop_grading.GPU_SPEEDUP_GOAL if device.type == "cuda" else 1.0
    if speedup < goal:
        failures.append(f"the fixed loop is {speedup:.2f}x the original; the goal here is {goal}x")
    print(f"fixed loop: {speedup:.2f}x the original (goal on {device.type}: >= {goal}x)")

    figures = {
        "steps": steps,
        "batch": task.batch,
        "repeats": args.repeats,
        "quick": args.quick,
        "stages": rows,
        "host_syncs": grade.host_syncs,
    }
    path = record.store("slow_loop", figures, device, report, args.out)
    print(record.stored_message(path))
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
