"""Data-parallel (DDP), ZeRO-1 and fully sharded (FSDP) training of one small model (chapter 7 lab).

    torchrun --standalone --nproc-per-node=2 train.py --backend gloo --json out.json

Every strategy trains the same model (same seed) on the same data: at each step the global
batch is split into equal slices, one per rank. Rank 0 also trains a copy of the model alone,
in the same process, on the whole batch: that is single-process training, and since DDP
averages the ranks' gradients the two must agree up to float rounding. After each step the
script checks that every rank holds the same weights, and how far they are from the
single-process ones; at the end each rank counts the bytes of parameters, gradients and
optimizer states it holds (tensor storage, not the process's RSS).
"""

from __future__ import annotations

import argparse
import time

import distlab
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.elastic.multiprocessing.errors import record

from gpulab import budget
from gpulab.estimate.collectives import ZERO_STAGES, sharded_bytes_per_rank

STRATEGIES = {"ddp": 0, "zero1": 1, "fsdp": 3}  # name -> ZeRO stage it corresponds to
LR = 1e-3


def build_model(width: int, layers: int, seed: int, device: torch.device) -> nn.Sequential:
    """`layers` MLP blocks (width -> 4 width -> width), a head to one output; seeded weights."""
    torch.manual_seed(seed)
    blocks = [
        nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        for _ in range(layers)
    ]
    return nn.Sequential(*blocks, nn.Linear(width, 2)).to(device)


def batch(step: int, size: int, width: int, seed: int, device: torch.device):
    """A step's global batch: inputs (size, width) and targets (size, 2), the same on every rank."""
    g = torch.Generator().manual_seed(seed * 1000 + step)
    x = torch.randn(size, width, generator=g)
    y = torch.stack([x[:, ::2].sum(1).sin(), x[:, 1::2].mean(1)], dim=1)  # a target to learn
    return x.to(device), y.to(device)


def my_slice(t: torch.Tensor, ctx: distlab.Context) -> torch.Tensor:
    """This rank's equal share of the global batch (rows rank * b to (rank + 1) * b)."""
    b = t.shape[0] // ctx.world_size
    return t[ctx.rank * b : (ctx.rank + 1) * b]


def wrap(model: nn.Sequential, strategy: str, ctx: distlab.Context):
    """The model and optimizer for a strategy."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    ids = [ctx.local_rank] if ctx.device.type == "cuda" else None
    if strategy == "ddp":
        # gradient_as_bucket_view: gradients live in DDP's all-reduce buckets, not in a copy
        ddp = DDP(model, device_ids=ids, gradient_as_bucket_view=True)
        return ddp, torch.optim.AdamW(ddp.parameters(), lr=LR)
    if strategy == "zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        ddp = DDP(model, device_ids=ids, gradient_as_bucket_view=True)
        return ddp, ZeroRedundancyOptimizer(
            ddp.parameters(), optimizer_class=torch.optim.AdamW, lr=LR
        )
    fully_shard = _fully_shard()
    for block in model:  # each block its own unit: gathered for its forward, freed after
        fully_shard(block)
    fully_shard(model)
    return model, torch.optim.AdamW(model.parameters(), lr=LR)


def _fully_shard():
    try:
        from torch.distributed.fsdp import fully_shard  # torch >= 2.6
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard  # torch 2.4, 2.5
    return fully_shard


def _local(t: torch.Tensor) -> torch.Tensor:
    """The part of a tensor this rank holds: a DTensor's local shard, else the tensor."""
    return t.to_local() if hasattr(t, "to_local") else t


def storage_bytes(tensors) -> int:
    """Bytes of the distinct storages behind these tensors (one shared by views counts once)."""
    seen, total = set(), 0
    for t in tensors:
        s = _local(t).untyped_storage()
        if s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


def held_bytes(model: nn.Module, opt) -> dict:
    """Bytes of parameters, gradients and optimizer states this rank holds now."""
    params = list(model.parameters())
    inner = getattr(opt, "optim", opt)  # ZeroRedundancyOptimizer keeps its shard's optimizer here
    # AdamW's exp_avg and exp_avg_sq; its per-parameter step counters (scalars) are left out
    states = [
        v for s in inner.state.values() for v in s.values() if torch.is_tensor(v) and v.dim() > 0
    ]
    out = {
        "params": storage_bytes(params),
        "grads": storage_bytes([p.grad for p in params if p.grad is not None]),
        "optimizer": storage_bytes(states),
    }
    out["total"] = sum(out.values())
    return out


def full_vector(model: nn.Module) -> torch.Tensor:
    """All the weights as one vector; sharded ones are gathered first (a collective)."""
    return torch.cat(
        [
            (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().reshape(-1)
            for p in model.parameters()
        ]
    )


def max_rank_difference(vec: torch.Tensor, ctx: distlab.Context) -> float:
    """Largest |w - w on rank 0| over all weights and ranks: 0.0 when every rank holds the same."""
    ref = vec.clone()
    dist.broadcast(ref, src=0)
    diff = (vec - ref).abs().max().reshape(1).to(torch.float64)
    dist.all_reduce(diff, op=dist.ReduceOp.MAX)
    return float(diff.item())


def train(strategy: str, args, ctx: distlab.Context, sizes: dict) -> dict:
    """Train with one strategy next to the single-process reference; the measurements."""
    width, layers, steps, global_batch = (sizes[k] for k in ("width", "layers", "steps", "batch"))
    model, opt = wrap(build_model(width, layers, args.seed, ctx.device), strategy, ctx)
    if ctx.rank == 0:  # the reference: one process, the whole batch
        ref = build_model(width, layers, args.seed, ctx.device)
        ref_opt = torch.optim.AdamW(ref.parameters(), lr=LR)
    losses, ref_losses, rank_diffs, ref_diffs, step_s = [], [], [], [], []
    for step in range(steps):
        distlab.maybe_fail(args, ctx, step)
        x, y = batch(step, global_batch, width, args.seed, ctx.device)
        distlab.sync(ctx.device)
        start = time.perf_counter()
        loss = F.mse_loss(model(my_slice(x, ctx)), my_slice(y, ctx))
        loss.backward()
        opt.step()
        distlab.sync(ctx.device)
        step_s.append(time.perf_counter() - start)
        if step == steps - 1:
            held = held_bytes(model, opt)  # gradients and optimizer states exist now
        opt.zero_grad(set_to_none=True)
        # the global batch's loss: the mean of the ranks' equal slices' means
        total = loss.detach().reshape(1).clone()
        dist.all_reduce(total)
        losses.append(float(total.item()) / ctx.world_size)
        vec = full_vector(model)
        # with FSDP each rank holds a different shard: comparing ranks means nothing there
        rank_diffs.append(None if strategy == "fsdp" else max_rank_difference(vec, ctx))
        if ctx.rank == 0:
            ref_loss = F.mse_loss(ref(x), y)
            ref_loss.backward()
            ref_opt.step()
            ref_opt.zero_grad(set_to_none=True)
            ref_losses.append(float(ref_loss.item()))
            ref_vec = torch.cat([p.detach().reshape(-1) for p in ref.parameters()])
            ref_diffs.append(float((vec - ref_vec).abs().max().item()))
        distlab.log(ctx, f"{strategy} step {step}: loss {losses[-1]:.6f}")
    per_rank = [None] * ctx.world_size
    dist.all_gather_object(per_rank, held)
    n_params = sum(p.numel() for p in build_model(width, layers, args.seed, "meta").parameters())
    param_bytes = n_params * 4  # fp32
    estimate = sharded_bytes_per_rank(
        param_bytes, param_bytes, 2 * param_bytes, ctx.world_size, STRATEGIES[strategy]
    )
    step_s.sort()
    return {
        "strategy": strategy,
        "stage": STRATEGIES[strategy],
        "stage_meaning": ZERO_STAGES[STRATEGIES[strategy]],
        "losses": losses,
        "reference_losses": ref_losses,
        "max_rank_difference": rank_diffs,
        "max_reference_difference": ref_diffs,
        "bytes_per_rank": per_rank,
        "full_bytes": {
            "params": param_bytes,
            "grads": param_bytes,
            "optimizer": 2 * param_bytes,
        },  # one whole copy, fp32 + AdamW
        "estimate_per_rank": estimate,
        "median_step_s": step_s[len(step_s) // 2],
    }


@record
def main() -> None:
    p = distlab.parser(__doc__.splitlines()[0])
    p.add_argument(
        "--strategies",
        default="ddp,zero1,fsdp",
        help=f"comma-separated, from {', '.join(STRATEGIES)}",
    )
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    strategies = [s for s in args.strategies.split(",") if s]
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        p.error(f"unknown strategies {unknown}; use {', '.join(STRATEGIES)}")
    with distlab.session(args) as ctx:
        train_all(strategies, args, ctx)


def train_all(strategies: list[str], args: argparse.Namespace, ctx: distlab.Context) -> None:
    """Train with each strategy in turn and write the results (rank 0)."""
    sizes = (
        {"width": 64, "layers": 2, "steps": 4, "batch": 32}
        if args.quick
        else {"width": 512, "layers": 4, "steps": 20, "batch": 64}
    )
    # fp32 weights, gradients and two AdamW states (4 x 4 bytes per parameter), for the model
    # and rank 0's reference copy (x 2); a block has about 8 width^2 parameters, counted as 9 to
    # leave room for the activations: keep it within the rank's share of a quarter of free memory
    share = budget.allowance(ctx.device) // (1 if ctx.device.type == "cuda" else ctx.world_size)
    while sizes["width"] > 64 and 2 * 4 * 4 * 9 * sizes["width"] ** 2 * sizes["layers"] > share:
        sizes["width"] //= 2
    # equal slices: the global batch is a multiple of the number of ranks
    sizes["batch"] = max(ctx.world_size, sizes["batch"] - sizes["batch"] % ctx.world_size)
    results = {**distlab.describe(ctx), "sizes": sizes, "lr": LR, "strategies": {}}
    for strategy in strategies:
        try:
            results["strategies"][strategy] = train(strategy, args, ctx, sizes)
        except (ImportError, NotImplementedError) as exc:  # e.g. no FSDP in an old torch
            results["strategies"][strategy] = {"strategy": strategy, "skipped": repr(exc)}
            distlab.log(ctx, f"{strategy} skipped: {exc!r}")
        dist.barrier()
    distlab.write_json(args, ctx, results)


if __name__ == "__main__":
    main()
