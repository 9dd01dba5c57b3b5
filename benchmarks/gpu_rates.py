"""What fraction of its peaks does a device reach? (chapters 1 and 4, lab 1)

A square matrix-product sweep in each precision the device runs natively (bf16 among them on a
GPU since Ampere), each size's rate against the dense peak of the spec table; and the device
copy of lab 1 (`b.copy_(a)`, every byte read once and written once) on buffers far beyond the
caches, against the spec sheet's memory bandwidth. The best share of each peak is the figure
the pages quote as "achievable" for that GPU.

    python benchmarks/gpu_rates.py [--device auto] [--quick] [--out DIR]
"""

from __future__ import annotations

from gpulab import budget, measure, peaks, record, units
from gpulab.ui.tables import Table

# Square sizes: a GPU's rate still climbs to 8192; quick is the CI smoke test on a CPU.
SIZES = {"quick": [128, 256], "full": [1024, 2048, 4096, 8192]}
COPY_BYTES = {"quick": 16 * 2**20, "full": 1 << 30}  # per buffer


def main(argv: list[str] | None = None) -> int:
    """Measure the sweep and the copy, print them against the peaks, store the figures."""
    args, device, report = record.start(__doc__.splitlines()[0], argv)
    size = "quick" if args.quick else "full"
    gpu = report.gpus[device.index or 0] if device.type == "cuda" and report.gpus else None
    precisions = measure.matmul_precisions(
        device, report.cpu.vector_extensions, gpu.compute_capability if gpu else None
    )
    run_time = 0.05 if args.quick else 0.3
    sweep = measure.matmul_sweep(
        device, SIZES[size], precisions, min_run_time=run_time, progress=False
    )
    peak_of = {p: peaks.device_peak(report, str(device), p)[0] for p in precisions}
    rows = [
        {
            "precision": p.precision,
            "n": p.size.split("x")[0],
            "rate": units.format_rate(p.rate),
            "of peak": p.percent_of(peak_of.get(p.precision)),
        }
        for p in sweep
    ]
    print(f"matrix products on {device} (measured here); peaks from gpulab's spec table\n")
    print(
        Table(
            rows, ["precision", "n", "rate", "of peak"], formats={"of peak": ".0f %|peak unknown"}
        )
    )
    best = {}
    for p in precisions:
        points = [q for q in sweep if q.precision == p]
        if points:
            top = max(points, key=lambda q: q.rate)
            best[p] = {
                "size": top.size,
                "flops_per_s": top.rate,
                "peak_flops_per_s": peak_of.get(p),
                "peak_share_percent": top.percent_of(peak_of.get(p)),
            }
    nbytes = min(COPY_BYTES[size], budget.allowance(device) // 3)
    copy = measure.bandwidth_point(device, nbytes, "copy", min_run_time=run_time)
    peak_bw = peaks.device_peak(report, str(device), "fp32")[1]
    copy_share = copy.percent_of(peak_bw) if copy else None
    if copy:
        share_text = (
            "peak unknown" if copy_share is None else f"{copy_share:.0f}% of the spec sheet's"
        )
        print(f"\ndevice copy of {copy.size}: {units.format_rate(copy.rate, 'B/s')} ({share_text})")
    figures = {
        "matmul_best": best,
        "matmul_sweep": [
            {"precision": q.precision, "size": q.size, "flops_per_s": q.rate, "seconds": q.seconds}
            for q in sweep
        ],
        "copy": None
        if copy is None
        else {
            "bytes_per_buffer": copy.nbytes,
            "bytes_per_s": copy.rate,
            "peak_bytes_per_s": peak_bw,
            "peak_share_percent": copy_share,
        },
    }
    print(record.stored_message(record.store("gpu_rates", figures, device, report, args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
