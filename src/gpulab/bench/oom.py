"""Running out of memory safely, and the largest batch that fits by measurement (chapter 2).

On a GPU, asking for more memory than is free raises ``torch.OutOfMemoryError``; the process
survives, and once the references are dropped and the allocator's cache is emptied the memory
is back. :func:`try_allocate` does exactly that and reports what happened, never raising. On
the CPU (and on Apple's unified memory) running out is not a clean error: the operating system
swaps or kills the process, and with it the notebook's kernel. There the function refuses any
request above the experiment's allowance (`gpulab.budget`, a quarter of the free RAM) without
allocating anything.

:func:`largest_batch_measured` finds the largest batch whose measured peak fits a budget, by
doubling and then bisecting; chapter 5 (pitfalls) reuses it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import PositiveFloat, PositiveInt, checked
from gpulab.machine import budget

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = ["AllocationResult", "largest_batch_measured", "try_allocate"]

GIB = 1024**3
_TRIES = ("cuda", "xpu")  # devices whose allocator raises a clean OutOfMemoryError


@dataclass(frozen=True)
class AllocationResult:
    """What happened to one allocation request."""

    ok: bool  # True: the memory was allocated (and freed again)
    nbytes: int  # bytes asked for
    message: str  # the error's first line, or what was done
    attempted: bool = True  # False: refused by the budget without touching memory


def _size(nbytes: int) -> str:
    return f"{nbytes / GIB:.2f} GiB" if nbytes >= GIB // 10 else f"{nbytes / 2**20:.1f} MiB"


def _is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def _empty_cache(device) -> None:
    import torch

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    elif device.type == "xpu":
        torch.xpu.empty_cache()
    elif device.type == "mps":
        torch.mps.empty_cache()


@checked
def try_allocate(device: torch.device | str, nbytes: PositiveInt) -> AllocationResult:
    """Try to allocate `nbytes` on the device and free them; never raises for lack of memory.

    cuda/xpu: really asks the allocator and catches torch.OutOfMemoryError. cpu/mps: refuses,
    without allocating, anything above `gpulab.budget.allowance(device)`; below it allocates,
    touches every page, and frees.
    """
    import torch

    device = torch.device(device)
    if device.type not in _TRIES:
        allowed = budget.allowance(device)
        if nbytes > allowed:
            return AllocationResult(
                False,
                nbytes,
                f"refused without allocating: {_size(nbytes)} is above this experiment's "
                f"allowance of {_size(allowed)} on {device.type} (a quarter of the free memory; "
                "running out of RAM would swap or kill the kernel instead of raising an error)",
                attempted=False,
            )
    block = None
    try:
        block = torch.empty(nbytes, dtype=torch.uint8, device=device)
        if device.type not in _TRIES:
            block.fill_(0)  # touch the pages: the OS commits RAM only when it is written
        return AllocationResult(True, nbytes, f"allocated {_size(nbytes)} on {device} and freed it")
    except Exception as exc:  # noqa: BLE001 - any out-of-memory flavour becomes a result
        if not _is_oom(exc):
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return AllocationResult(False, nbytes, first)
    finally:
        del block
        _empty_cache(device)


@checked
def largest_batch_measured(
    measure_peak: Callable[[int], int | None],
    budget_bytes: PositiveFloat,
    start: PositiveInt = 1,
    limit: PositiveInt = 4096,
) -> tuple[int, list[tuple[int, int | None]]]:
    """The largest batch whose measured peak fits `budget_bytes`, and every (batch, peak) tried.

    `measure_peak(batch)` returns the peak bytes of one step at that batch, or None when it ran
    out of memory (a torch.OutOfMemoryError it raises counts as None too). The batch doubles
    from `start` while it fits, then a bisection between the last fit and the first failure
    finds the boundary; the peak is assumed to grow with the batch. Returns 0 when no batch
    from 1 up fits.
    """
    if start > limit:
        raise GpulabConfigError(f"start={start} must not exceed limit={limit}")
    tried: list[tuple[int, int | None]] = []
    seen: dict[int, int | None] = {}

    def fits(batch: int) -> bool:
        if batch not in seen:
            seen[batch] = _measure(measure_peak, batch)
            tried.append((batch, seen[batch]))
        peak = seen[batch]
        return peak is not None and peak <= budget_bytes

    lo, hi = 0, None  # largest batch known to fit; smallest known not to
    batch = start
    while True:
        if not fits(batch):
            hi = batch
            break
        lo = batch
        if batch >= limit:
            return lo, tried
        batch = min(batch * 2, limit)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo, tried


def _measure(measure_peak: Callable[[int], int | None], batch: int) -> int | None:
    """One measurement; an out-of-memory error becomes None."""
    try:
        peak = measure_peak(batch)
    except Exception as exc:  # noqa: BLE001 - only out-of-memory errors are swallowed
        if not _is_oom(exc):
            raise
        gc.collect()
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return None
    if peak is not None and (not isinstance(peak, (int, float)) or peak < 0):
        raise GpulabConfigError(
            f"measure_peak({batch}) returned {peak!r}; it must return bytes (a number >= 0) or None"
        )
    return None if peak is None else int(peak)
