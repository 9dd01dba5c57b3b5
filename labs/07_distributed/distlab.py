"""What the chapter-7 lab scripts share: arguments, process-group set-up, injected failures.

Each script runs under torchrun (see gpulab.launch.run_torchrun), writes its results as JSON
to the path given with --json (rank 0 only) and its progress to stderr. A rank can be made to
fail on purpose (--fail-rank, --fail-step, --fail-mode) to show how a failure surfaces.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

FAIL_MODES = ("raise", "kill", "hang")


@dataclass(frozen=True)
class Context:
    """Where this process stands in the job."""

    rank: int  # global rank
    world_size: int  # number of ranks
    local_rank: int  # rank on this machine: the GPU index with NCCL
    device: torch.device  # where this rank keeps its tensors
    backend: str  # "gloo" or "nccl"


def parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every lab script takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--backend",
        choices=("gloo", "nccl"),
        default="gloo",
        help="collective backend: gloo (CPU tensors) or nccl (one GPU per rank)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds a rank waits in a collective before it raises",
    )
    p.add_argument("--json", type=Path, required=True, help="where rank 0 writes the results")
    p.add_argument("--quick", action="store_true", help="tiny sizes: runs in seconds")
    p.add_argument("--fail-rank", type=int, default=None, help="inject a failure in this rank")
    p.add_argument("--fail-step", type=int, default=1, help="... at this step")
    p.add_argument(
        "--fail-mode",
        choices=FAIL_MODES,
        default="raise",
        help="raise an exception, SIGKILL the process, or hang in a sleep",
    )
    return p


@contextmanager
def session(args: argparse.Namespace) -> Iterator[Context]:
    """Join the process group for the block and leave it at the end, also when the block raises.

    A rank that exits with its gloo group still open can abort in the group's teardown
    (SIGABRT, "terminate called without an active exception") instead of exiting with its own
    error, so the group is always left. A rank that raised finishes leaving even if torchrun
    asks it to stop: leaving the group frees the peer, the peer fails at once ("Connection
    closed by peer"), and torchrun then stops every rank still running, which would turn this
    rank's exit status 1 into "killed by SIGTERM".
    """
    ctx = init(args)
    try:
        yield ctx
    except BaseException:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # it is leaving anyway, with its error
        raise
    finally:
        dist.destroy_process_group()


def init(args: argparse.Namespace) -> Context:
    """Join the process group (with a timeout, so a rank left waiting raises instead of hanging)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if args.backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(
        args.backend,
        timeout=timedelta(seconds=args.timeout),
        **({"device_id": device} if args.backend == "nccl" else {}),
    )
    return Context(rank, world, local_rank, device, args.backend)


def maybe_fail(args: argparse.Namespace, ctx: Context, step: int) -> None:
    """Fail on purpose when this is the rank and the step the arguments name."""
    if args.fail_rank != ctx.rank or args.fail_step != step:
        return
    log(ctx, f"injected failure ({args.fail_mode}) at step {step}", every_rank=True)
    if args.fail_mode == "raise":
        raise RuntimeError(f"injected failure: rank {ctx.rank} raised at step {step}")
    if args.fail_mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(24 * 3600)  # "hang": the other ranks wait in their next collective


def sync(device: torch.device) -> None:
    """Wait for the device's queued work, so that a clock read after it is honest."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def log(ctx: Context, message: str, every_rank: bool = False) -> None:
    """A progress line on stderr (rank 0's only, unless every_rank)."""
    if every_rank or ctx.rank == 0:
        print(f"[rank {ctx.rank}] {message}", file=sys.stderr, flush=True)


def write_json(args: argparse.Namespace, ctx: Context, results: dict) -> None:
    """Rank 0 writes the results where --json says."""
    if ctx.rank == 0:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))


def describe(ctx: Context) -> dict:
    """The job's set-up, for the results file."""
    info = {
        "backend": ctx.backend,
        "world_size": ctx.world_size,
        "device": ctx.device.type,
        "torch": torch.__version__,
    }
    if ctx.device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(ctx.device)
    else:
        info["threads_per_rank"] = torch.get_num_threads()
    return info
