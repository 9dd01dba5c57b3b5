"""Does gpulab.timing.benchmark agree with independent timers? (chapter 1)

Times the same operations, in one run, with `gpulab.timing.benchmark` and with:
  - torch.utils.benchmark.Timer.blocked_autorange, told to use the same thread count;
  - a plain loop timed with time.perf_counter_ns after a warm-up, synchronised at both ends;
  - triton.testing.do_bench, on a CUDA GPU where Triton is installed.
Prints each reference's median and the ratio to ours (goal: within 5% on every op), the thread
counts, and the best fraction of peak reached by a matrix product on this machine. On a CUDA
GPU it writes its figures to src/gpulab/data/measured/ with their provenance.

    python benchmarks/timing_fidelity.py [--device auto] [--quick]
"""

from __future__ import annotations

import statistics
import time

import torch
from torch.utils import benchmark as torch_benchmark

from gpulab import peaks, record, roofline, timing, units
from gpulab.ui.tables import Table

GOAL = 0.05


def plain_loop(fn, device, repeats: int, warmup: int = 10) -> float:
    """Median seconds per call over `repeats` blocks of a synchronised perf_counter_ns loop."""
    for _ in range(warmup):
        fn()
    timing.synchronize(device)
    per_call = []
    # blocks of calls lasting ~2 ms, like ours and torch's, so the clock's cost is negligible
    t0 = time.perf_counter_ns()
    fn()
    timing.synchronize(device)
    block = max(1, int(2e6 / max(time.perf_counter_ns() - t0, 1)))
    for _ in range(repeats):
        timing.synchronize(device)
        t0 = time.perf_counter_ns()
        for _ in range(block):
            fn()
        timing.synchronize(device)
        per_call.append((time.perf_counter_ns() - t0) / 1e9 / block)
    return statistics.median(per_call)


def torch_timer(fn, threads: int, min_run_time: float) -> float:
    """Median seconds per call from torch.utils.benchmark with the same thread count."""
    timer = torch_benchmark.Timer("fn()", globals={"fn": fn}, num_threads=threads)
    return timer.blocked_autorange(min_run_time=min_run_time).median


def triton_do_bench(fn) -> float | None:
    """Median seconds per call from triton.testing.do_bench (CUDA only), None without Triton."""
    try:
        from triton.testing import do_bench
    except ImportError:
        return None
    return do_bench(fn, warmup=100, rep=500, return_mode="median") / 1e3


def operations(device, quick: bool):
    """The operations timed: (name, callable, FLOPs or None)."""
    gpu = device.type == "cuda"
    n = 1024 if quick else (8192 if gpu else 2048)
    dtype = torch.bfloat16 if gpu else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    big = (1 << 22) if quick else (1 << 26 if gpu else 1 << 24)
    x = torch.randn(big, device=device)
    y = torch.randn(big, device=device)
    rows = torch.randn(big // 1024, 1024, device=device)
    norm = torch.nn.LayerNorm(1024, device=device)
    small = torch.randn(1024, device=device)
    ops = [
        (
            f"matmul {n}^3 {str(dtype).removeprefix('torch.')}",
            lambda: a @ b,
            roofline.matmul_flops(n, n, n),
        ),
        (f"add {big:,}", lambda: torch.add(x, y), None),
        (f"copy {big:,}", lambda: y.copy_(x), None),
        (f"softmax {big // 1024}x1024", lambda: torch.softmax(rows, -1), None),
        (f"layernorm {big // 1024}x1024", lambda: norm(rows), None),
        ("add 1,024 (launch-bound)", lambda: torch.add(small, small), None),
    ]
    return ops, dtype


def main(argv: list[str] | None = None) -> int:
    """Run every op under every timer and print the comparison table."""
    args, device, report = record.start(
        __doc__.splitlines()[0],
        argv,
        lambda p: p.add_argument("--rounds", type=int, default=3, help="interleaved rounds per op"),
    )
    threads = torch.get_num_threads()
    min_run_time = 0.2 if args.quick else 1.0
    ops, dtype = operations(device, args.quick)
    rows, figures = [], {}
    timers = {
        "gpulab": lambda fn, name: (
            timing.benchmark(fn, device=device, min_run_time=min_run_time, label=name).median
        ),
        "torch.utils.benchmark": lambda fn, name: torch_timer(fn, threads, min_run_time),
        "perf_counter loop": lambda fn, name: plain_loop(fn, device, repeats=50),
    }
    if device.type == "cuda":
        timers["triton do_bench"] = lambda fn, name: triton_do_bench(fn)
    with torch.inference_mode():
        for name, fn, flops in ops:
            # Rounds interleave the timers, so a machine that drifts (another tenant, clocks)
            # affects all of them alike; each timer's result is its median over the rounds.
            results = {t: [] for t in timers}
            for _ in range(args.rounds):
                for timer, run in timers.items():
                    results[timer].append(run(fn, name))
            medians = {t: statistics.median(v) for t, v in results.items() if None not in v}
            ours = medians.pop("gpulab")
            for ref_name, ref in medians.items():
                ratio = ours / ref
                rows.append(
                    {
                        "op": name,
                        "reference": ref_name,
                        "ours": ours,
                        "theirs": ref,
                        "ratio": ratio,
                        "within 5%": "yes" if abs(ratio - 1) <= GOAL else "NO",
                    }
                )
            figures[name] = {"median_s": ours, "rate": None if flops is None else flops / ours}
    print(
        f"device {device}; torch {torch.__version__}; gpulab and torch.utils.benchmark both on "
        f"{threads} threads; perf_counter loop on the process's {torch.get_num_threads()} threads\n"
    )
    print(
        Table(
            rows,
            ["op", "reference", "ours", "theirs", "ratio", "within 5%"],
            formats={
                "ours": units.format_seconds,
                "theirs": units.format_seconds,
                "ratio": lambda v: f"{v:.3f}",
            },
        )
    )
    misses = sum(r["within 5%"] == "NO" for r in rows)
    print(
        f"\n{len(rows) - misses} of {len(rows)} comparisons within {GOAL:.0%} "
        f"(each the median of {args.rounds} interleaved rounds)"
    )

    precision = "bf16" if dtype == torch.bfloat16 else "fp32"
    peak, _, label = peaks.device_peak(report, str(device), precision)
    matmul_name, _, flops = ops[0]
    achieved = flops / figures[matmul_name]["median_s"]
    share = roofline.percent_of_peak(achieved, peak)
    share_text = (
        "peak unknown" if share is None else f"{share:.0f}% of {units.format_rate(peak)} ({label})"
    )
    print(f"best matmul here: {matmul_name}: {units.format_rate(achieved)}, {share_text}")

    path = record.store(
        "timing_fidelity",
        {"ops": figures, "matmul_peak_share_percent": share},
        device,
        report,
        args.out,
    )
    print(record.stored_message(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
