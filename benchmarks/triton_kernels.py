"""How fast are lab 4's three Triton kernels, compiled, against the device's peaks? (lab 4)

The kernels of lab 4's solution, written out here: a vector add and a row softmax (memory-bound:
GB/s against the spec sheet's bandwidth) and a tiled matrix product (compute-bound: TFLOP/s
against the dense peak of its input precision). Each result is checked against PyTorch before
it is timed. On a CUDA GPU Triton compiles them; elsewhere its interpreter runs them at the
quick sizes, which checks what they compute and says nothing about speed (the figures are
stored labelled with the device they ran on, and the package keeps only GPU figures).

    python benchmarks/triton_kernels.py [--device auto] [--quick] [--out DIR]
"""

from __future__ import annotations

from gpulab import peaks, record, timing, triton_support, units
from gpulab.ui.tables import Table

SIZES = {  # vector elements, softmax (rows, columns), square matmul side
    "quick": (4096, (16, 128), 64),
    "full": (2**24, (4096, 4096), 4096),
}


def define_kernels():
    """The three kernels; called after triton_support.setup, which picks compiler or interpreter."""
    import triton
    import triton.language as tl

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)

    @triton.jit
    def softmax(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * cols + offsets, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(
                a_ptr + rm[:, None] * K + (k + rk)[None, :],
                mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                other=0.0,
            )
            b = tl.load(
                b_ptr + (k + rk)[:, None] * N + rn[None, :],
                mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                other=0.0,
            )
            acc += tl.dot(a, b)
        tl.store(
            c_ptr + rm[:, None] * N + rn[None, :],
            acc.to(c_ptr.dtype.element_ty),
            mask=(rm[:, None] < M) & (rn[None, :] < N),
        )

    return add, softmax, matmul


def main(argv: list[str] | None = None) -> int:
    """Check each kernel against PyTorch, time it, print it against the peaks, store the figures."""
    args, device, report = record.start(__doc__.splitlines()[0], argv)
    status = triton_support.setup(device)
    print(status.reason)
    if not status.available:
        return 0
    import torch
    import triton

    add, softmax, matmul = define_kernels()
    dev = torch.device(status.device)
    n, (rows, cols), side = SIZES["quick" if args.quick else "full"]
    precision = "bf16" if dev.type == "cuda" else "fp32"  # the interpreter's dot is numpy's fp32
    run_time = 0.05 if args.quick else 0.3
    x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
    out = torch.empty_like(x)
    m = torch.randn(rows, cols, device=dev)
    sm = torch.empty_like(m)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a, b = (
        torch.randn(side, side, device=dev, dtype=dtype),
        torch.randn(side, side, device=dev, dtype=dtype),
    )
    c = torch.empty(side, side, device=dev, dtype=dtype)
    block = 32 if args.quick else 128
    calls = {
        "vector add": (
            lambda: add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024),
            3 * n * 4,
            "B/s",
        ),
        "row softmax": (
            lambda: softmax[(rows,)](m, sm, cols, BLOCK=triton.next_power_of_2(cols)),
            2 * rows * cols * 4,
            "B/s",
        ),
        "tiled matmul": (
            lambda: matmul[(triton.cdiv(side, block), triton.cdiv(side, block))](
                a, b, c, side, side, side, BM=block, BN=block, BK=32
            ),
            2 * side**3,
            "FLOP/s",
        ),
    }
    # what each computes, against PyTorch, before anything is timed
    for call, _, _ in calls.values():
        call()
    torch.testing.assert_close(out, x + y)
    torch.testing.assert_close(sm, torch.softmax(m, dim=1), rtol=1e-4, atol=1e-5)
    tol = 2e-2 if precision == "bf16" else 1e-3
    torch.testing.assert_close(c.float(), (a.float() @ b.float()), rtol=tol, atol=tol * side**0.5)
    peak_flops, peak_bw, label = peaks.device_peak(report, str(dev), precision)
    rows_out, figures = (
        [],
        {"precision": precision, "interpreted": status.interpreter, "kernels": {}},
    )
    for name, (call, work, unit) in calls.items():
        seconds = timing.benchmark(call, device=dev, min_run_time=run_time).median
        rate = work / seconds
        peak = peak_bw if unit == "B/s" else peak_flops
        share = None if peak is None else 100 * rate / peak
        rows_out.append({"kernel": name, "rate": units.format_rate(rate, unit), "of peak": share})
        figures["kernels"][name] = {
            "seconds": seconds,
            "rate": rate,
            "unit": unit,
            "peak": peak,
            "peak_share_percent": share,
        }
    print(f"\nlab 4's kernels on {dev}, {precision} matmul (measured here; peaks: {label})\n")
    print(Table(rows_out, ["kernel", "rate", "of peak"], formats={"of peak": ".0f %|peak unknown"}))
    if status.interpreter:
        print("interpreted on the CPU: these rates are Python's, not a GPU's")
    print(record.stored_message(record.store("triton_kernels", figures, device, report, args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
