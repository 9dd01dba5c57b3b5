"""Slow model loading: checkpoint formats measured, and what the disk itself allows (chapter 5).

`torch.load` of a pickle checkpoint reads and copies every byte before the model can start;
safetensors (and `torch.load(mmap=True)`) map the file into memory, so opening is instant and
pages are read when a tensor is first touched. Either way, a cold load cannot beat the disk's
sequential read rate: that bound is arithmetic, computed here from each interface's line rate
or a drive's datasheet.
"""

from __future__ import annotations

import mmap
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from gpulab.core.validate import OneOf, PositiveFloat, PositiveInt, checked
from gpulab.machine import budget
from gpulab.reference.links import DISKS

__all__ = [
    "LoadResult",
    "checkpoint_size",
    "direct_read_bytes_per_s",
    "load_seconds",
    "make_checkpoint",
    "save_both",
    "time_loads",
]


@checked
def load_seconds(nbytes: PositiveFloat, disk: Annotated[str, OneOf(DISKS, "disk")]) -> float:
    """The least time to read `nbytes` sequentially from `disk` (a key of DISKS)."""
    return nbytes / DISKS[disk].read_bytes_per_s


@dataclass(frozen=True)
class LoadResult:
    """One way of loading the checkpoint: time to open it, and time until every byte was read."""

    method: str
    open_seconds: float  # until the call returned
    ready_seconds: float  # until every tensor had been read once (touched)
    nbytes: int


@checked
def make_checkpoint(nbytes: PositiveInt, tensors: PositiveInt = 8, seed: int = 0) -> dict:
    """A state dict of `tensors` random fp32 tensors adding up to about `nbytes`."""
    import torch

    per = max(1, nbytes // (4 * tensors))
    g = torch.Generator().manual_seed(seed)
    return {f"layer{i}.weight": torch.randn(per, generator=g) for i in range(tensors)}


@checked
def checkpoint_size(quick: bool = False) -> int:
    """A checkpoint size that fits the RAM budget three times (file cache, loaded copy, source).

    The checkpoint is written from and loaded into RAM, whatever device the notebook uses.
    """
    cap = 32 * 2**20 if quick else 1 * 2**30
    return int(min(cap, budget.allowance("cpu") // 3))


@checked
def save_both(state: dict[str, Any], folder: str | Path) -> dict[str, Path]:
    """Write the state dict as a torch pickle and as safetensors; return the two paths."""
    import torch
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"pickle": folder / "model.pt", "safetensors": folder / "model.safetensors"}
    torch.save(state, paths["pickle"])
    save_file(state, str(paths["safetensors"]))
    return paths


def _touch(tensors) -> None:
    """Read every tensor once (a sum), so lazily mapped pages are really read."""
    for t in tensors:
        t.sum()


@checked
def time_loads(paths: dict[str, Path]) -> list[LoadResult]:
    """Load the checkpoint four ways; each is timed until open and until every byte was read."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file

    nbytes = paths["safetensors"].stat().st_size

    def timed(method, opener, tensors_of):
        start = time.perf_counter()
        obj = opener()
        opened = time.perf_counter() - start
        _touch(tensors_of(obj))
        ready = time.perf_counter() - start
        return LoadResult(method, opened, ready, nbytes)

    def lazy():
        handle = safe_open(str(paths["safetensors"]), framework="pt")
        return handle.__enter__()

    return [
        timed(
            "torch.load (pickle, copies)",
            lambda: torch.load(paths["pickle"], weights_only=True),
            lambda sd: sd.values(),
        ),
        timed(
            "torch.load(mmap=True)",
            lambda: torch.load(paths["pickle"], weights_only=True, mmap=True),
            lambda sd: sd.values(),
        ),
        timed(
            "safetensors load_file",
            lambda: load_file(str(paths["safetensors"])),
            lambda sd: sd.values(),
        ),
        timed("safetensors safe_open (lazy)", lazy, lambda h: (h.get_tensor(k) for k in h.keys())),
    ]


@checked
def direct_read_bytes_per_s(path: str | Path, block: PositiveInt = 8 * 2**20) -> float | None:
    """Read a file with O_DIRECT (past the page cache) and return bytes/s; None where unsupported.

    Only Linux has O_DIRECT, and some file systems (tmpfs, some overlays) refuse it: then the
    disk's own rate cannot be measured without root rights to drop the cache, and None says so.
    """
    flag = getattr(os, "O_DIRECT", None)
    if flag is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | flag)
    except OSError:
        return None
    buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT requires
    total = 0
    try:
        start = time.perf_counter()
        while True:
            n = os.readv(fd, [buf])
            total += n
            if n < block:
                break
        elapsed = time.perf_counter() - start
    except OSError:
        return None
    finally:
        os.close(fd)
        buf.close()
    return total / elapsed if elapsed > 0 and total else None
