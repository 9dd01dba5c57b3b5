"""gpulab.oom: allocation that never kills the kernel, and the measured largest batch."""

from __future__ import annotations

import pytest
import torch

from gpulab import budget, oom
from gpulab.core.errors import GpulabConfigError

MIB = 2**20


def test_cpu_allocates_below_the_allowance(monkeypatch):
    """Below the allowance the memory is really allocated, then freed."""
    monkeypatch.setattr(budget, "allowance", lambda device, fraction=0.25: 8 * MIB)
    result = oom.try_allocate("cpu", 4 * MIB)
    assert result.ok and result.attempted and result.nbytes == 4 * MIB
    assert "allocated 4.0 MiB" in result.message


def test_cpu_refuses_above_the_allowance_without_allocating(monkeypatch):
    """Above the allowance nothing is allocated: torch.empty is never called."""
    monkeypatch.setattr(budget, "allowance", lambda device, fraction=0.25: 8 * MIB)

    def no_allocation(*args, **kwargs):
        raise AssertionError("allocated although the request is above the allowance")

    monkeypatch.setattr(torch, "empty", no_allocation)
    result = oom.try_allocate("cpu", 1 << 40)  # 1 TiB
    assert not result.ok and not result.attempted
    assert "refused without allocating" in result.message and "8.0 MiB" in result.message


def test_out_of_memory_becomes_a_result(monkeypatch):
    """An OutOfMemoryError from the allocator is caught and its first line returned."""
    monkeypatch.setattr(budget, "allowance", lambda device, fraction=0.25: 1 << 50)

    def oom_empty(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.\nmore")

    monkeypatch.setattr(torch, "empty", oom_empty)
    result = oom.try_allocate("cpu", 2 * MIB)
    assert not result.ok and result.attempted
    assert result.message == "CUDA out of memory. Tried to allocate 2.00 GiB."


def test_bad_size_is_refused():
    """nbytes must be a positive integer."""
    with pytest.raises(GpulabConfigError, match="nbytes=0"):
        oom.try_allocate("cpu", 0)


@pytest.mark.gpu
def test_cuda_out_of_memory_is_caught_and_memory_comes_back():
    """Twice the free VRAM fails cleanly; afterwards as much memory is allocated as before."""
    before = torch.cuda.memory_allocated()
    free = torch.cuda.mem_get_info()[0]
    result = oom.try_allocate("cuda", 2 * free)
    assert not result.ok and result.attempted and "out of memory" in result.message.lower()
    assert torch.cuda.memory_allocated() == before
    assert oom.try_allocate("cuda", 16 * MIB).ok


def _linear(per_item, fixed=0):
    calls = []

    def peak(batch):
        calls.append(batch)
        return fixed + per_item * batch

    return peak, calls


@pytest.mark.parametrize(
    "budget_bytes, expected", [(100, 10), (105, 10), (1000, 100), (9, 0), (10, 1), (37, 3), (64, 6)]
)
def test_largest_batch_with_a_linear_peak(budget_bytes, expected):
    """peak = 10 x batch: the answer is budget // 10, found with O(log n) measurements."""
    peak, calls = _linear(10)
    best, tried = oom.largest_batch_measured(peak, budget_bytes)
    assert best == expected
    assert [b for b, _ in tried] == calls and len(set(calls)) == len(calls)
    assert len(calls) <= 2 * max(1, expected).bit_length() + 2
    assert all(p == 10 * b for b, p in tried)


def test_largest_batch_when_measurement_runs_out_of_memory():
    """None (or a raised OutOfMemoryError) means the batch does not fit."""

    def peak(batch):
        if batch > 20:
            return None
        return batch  # everything that runs fits the budget

    best, tried = oom.largest_batch_measured(peak, 1000)
    assert best == 20 and (32, None) in tried

    def raising(batch):
        if batch > 5:
            raise torch.OutOfMemoryError("out of memory")
        return batch

    best, tried = oom.largest_batch_measured(raising, 1000)
    assert best == 5 and (8, None) in tried


def test_largest_batch_stops_at_the_limit_and_searches_below_start():
    """Everything fits: the limit; start too large: bisect below it."""
    best, tried = oom.largest_batch_measured(lambda b: 1, 10, limit=50)
    assert best == 50 and tried[-1] == (50, 1)
    peak, _ = _linear(10)
    assert oom.largest_batch_measured(peak, 55, start=16)[0] == 5


def test_largest_batch_refuses_bad_input():
    """A non-positive budget, start or limit, or a peak that is not bytes, names the field."""
    with pytest.raises(GpulabConfigError, match="budget_bytes"):
        oom.largest_batch_measured(lambda b: b, 0)
    with pytest.raises(GpulabConfigError, match="start=0"):
        oom.largest_batch_measured(lambda b: b, 10, start=0)
    with pytest.raises(GpulabConfigError, match="start=8"):
        oom.largest_batch_measured(lambda b: b, 10, start=8, limit=4)
    with pytest.raises(GpulabConfigError, match="measure_peak"):
        oom.largest_batch_measured(lambda b: "lots", 10)
