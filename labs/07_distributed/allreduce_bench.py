"""All-reduce benchmark: algorithm and bus bandwidth per message size (chapter 7 lab).

    torchrun --standalone --nproc-per-node=2 allreduce_bench.py --backend gloo --json out.json

As nccl-tests do (doc/PERFORMANCE.md): each size is all-reduced `iters` times in a row after a
warm-up, the mean time per call is taken on every rank and the slowest rank's counts; the
algorithm bandwidth is size / time and the bus bandwidth is that x 2 (n - 1) / n. Unlike
nccl-tests, each size is timed in ROUNDS rounds and the fastest counts (see ROUNDS).
"""

from __future__ import annotations

import argparse
import time

import distlab
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from gpulab import budget
from gpulab.estimate.collectives import algorithm_bandwidth, bus_bandwidth

KIB, MIB = 2**10, 2**20


def sizes(max_bytes: int, min_bytes: int = 4 * KIB) -> list[int]:
    """Message sizes in bytes: powers of 4 from min_bytes to max_bytes."""
    out, n = [], min_bytes
    while n <= max_bytes:
        out.append(n)
        n *= 4
    return out


def agree(value: float, ctx: distlab.Context, op=dist.ReduceOp.MAX) -> float:
    """The same number on every rank: the largest of the ranks' values (one all-reduce)."""
    t = torch.tensor([value], dtype=torch.float64, device=ctx.device)
    dist.all_reduce(t, op=op)
    return float(t.item())


# Rounds of `iters` calls per size, of which the fastest counts: on a machine that other work
# shares, a round in which the scheduler parked a rank is slow for reasons that are not the
# all-reduce's, and such rounds made the small messages look as slow as the large ones.
ROUNDS = 3


def time_allreduce(buf: torch.Tensor, iters: int, ctx: distlab.Context, rounds: int = 1) -> float:
    """Seconds per all-reduce of buf: the slowest rank's mean over `iters` calls in a row, in
    the fastest of `rounds` rounds."""
    best = float("inf")
    for _ in range(rounds):
        dist.barrier()
        distlab.sync(ctx.device)
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf)
        distlab.sync(ctx.device)
        best = min(best, agree((time.perf_counter() - start) / iters, ctx))
    return best


def is_correct(buf: torch.Tensor, ctx: distlab.Context) -> bool:
    """Whether an all-reduce sums: each rank puts rank + 1, every element must be n(n+1)/2."""
    buf.fill_(ctx.rank + 1)
    dist.all_reduce(buf)
    expected = ctx.world_size * (ctx.world_size + 1) / 2
    ok = bool((buf == expected).all().item())
    return agree(0.0 if ok else 1.0, ctx) == 0.0


@record
def main() -> None:
    p = distlab.parser(__doc__.splitlines()[0])
    p.add_argument(
        "--max-bytes",
        type=int,
        default=None,
        help="largest message (default: 4 MiB quick; 64 MiB CPU; 1 GiB GPU)",
    )
    p.add_argument(
        "--target-s",
        type=float,
        default=None,
        help="seconds of timed calls per round and size (default 0.05 quick, 0.25 full)",
    )
    args = p.parse_args()
    with distlab.session(args) as ctx:
        measure(args, ctx)


def measure(args: argparse.Namespace, ctx: distlab.Context) -> None:
    """Time an all-reduce at each message size and write the table (rank 0)."""
    max_bytes = args.max_bytes or (
        4 * MIB if args.quick else (1024 if ctx.device.type == "cuda" else 64) * MIB
    )
    # Each rank's buffer stays within its share of a quarter of the free memory.
    share = budget.allowance(ctx.device) // (1 if ctx.device.type == "cuda" else ctx.world_size)
    max_bytes = min(max_bytes, share)
    target = args.target_s or (0.05 if args.quick else 0.25)
    rows = []
    for step, nbytes in enumerate(sizes(max_bytes)):
        distlab.maybe_fail(args, ctx, step)
        buf = torch.zeros(nbytes // 4, dtype=torch.float32, device=ctx.device)
        correct = is_correct(buf, ctx)
        one = time_allreduce(buf, 2, ctx)  # warm-up, and a first estimate
        iters = int(agree(min(200, max(3, target / one)), ctx))
        seconds = time_allreduce(buf, iters, ctx, ROUNDS)
        algbw = algorithm_bandwidth(nbytes, seconds)
        rows.append(
            {
                "bytes": nbytes,
                "seconds": seconds,
                "iters": iters,
                "algbw": algbw,
                "busbw": bus_bandwidth(algbw, ctx.world_size),
                "correct": correct,
            }
        )
        distlab.log(
            ctx,
            f"{nbytes / KIB:>9.0f} KiB  {seconds * 1e6:>10.1f} us  "
            f"algbw {algbw / 1e9:6.3f} GB/s  busbw {rows[-1]['busbw'] / 1e9:6.3f} GB/s",
        )
        del buf
    distlab.write_json(args, ctx, {**distlab.describe(ctx), "dtype": "float32", "rows": rows})


if __name__ == "__main__":
    main()
