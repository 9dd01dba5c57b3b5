"""gpulab.timing: warm-up, synchronisation, blocks, statistics, and the work of common ops."""

from __future__ import annotations

import time

import pytest
import torch

from gpulab import roofline, timing, units
from gpulab.core.errors import GpulabConfigError


def test_benchmark_reports_median_spread_threads_and_device():
    """A measurement has enough blocks, the process's thread count and the inferred device."""
    x = torch.randn(256, 256)
    m = timing.benchmark(torch.matmul, x, x, min_run_time=0.05)
    assert len(m.times) >= timing.MIN_BLOCKS and m.runs >= len(m.times)
    assert sum(m.times) * m.runs / len(m.times) >= 0.05 * 0.99
    assert m.median > 0 and m.iqr >= 0 and m.min <= m.median
    assert m.threads == torch.get_num_threads() and m.device == "cpu"
    assert m.label == "matmul" and "per call" in repr(m)


def test_benchmark_never_reports_less_than_the_work_takes():
    """A call that sleeps 2 ms is never measured as shorter (the clock brackets the work)."""
    m = timing.benchmark(time.sleep, 0.002, min_run_time=0.05)
    assert 0.002 <= m.median < 1.0


def test_warm_up_excludes_the_slow_first_call():
    """One-off first-call costs (here 300 ms) are paid in the warm-up, not measured."""
    calls = []

    def first_call_slow():
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.3)

    m = timing.benchmark(first_call_slow, min_run_time=0.02)
    assert max(m.times) < 0.05
    assert len(calls) > m.runs  # the warm-up calls happened on top of the timed ones


def test_device_is_synchronised_around_every_block(monkeypatch):
    """The clock waits for the device before it starts and before it stops."""
    synced = []
    monkeypatch.setattr(timing, "synchronize", lambda device: synced.append(str(device)))
    clock = timing._Clock(torch.device("cpu"))
    clock.time_block(lambda: None, 3)
    assert synced == ["cpu", "cpu"]


def test_device_comes_from_tensors_or_modules():
    """The device is the first tensor's, or a module's parameters'; the CPU otherwise."""
    layer = torch.nn.Linear(2, 2)
    assert timing.find_device((layer,), {}).type == "cpu"
    assert timing.find_device((), {"x": torch.ones(1)}).type == "cpu"
    assert timing.find_device((3,), {}).type == "cpu"


@pytest.mark.parametrize(
    "kwargs, field",
    [({"min_run_time": 0}, "min_run_time"), ({"min_run_time": "1"}, "min_run_time")],
)
def test_bad_arguments_name_the_field(kwargs, field):
    """A non-positive run time is refused with the argument named."""
    with pytest.raises(GpulabConfigError, match=field):
        timing.benchmark(lambda: None, **kwargs)


def test_not_callable_is_refused():
    """Passing a result instead of a function is caught with a clear sentence."""
    with pytest.raises(GpulabConfigError, match="not callable"):
        timing.benchmark(torch.ones(1))


def test_measurement_statistics():
    """Median and inclusive IQR of the per-call times."""
    m = timing.Measurement("x", (1.0, 2.0, 3.0, 4.0, 100.0), 5, 1, "cpu")
    assert m.median == 3.0 and m.iqr == 2.0 and m.min == 1.0 and m.rate(6.0) == 2.0
    assert timing.Measurement("x", (1.0,), 1, 1, "cpu").iqr == 0.0


def test_formatting():
    """Durations and rates get readable units."""
    assert units.format_seconds(1.5e-3) == "1.5 ms"
    assert units.format_seconds(2e-9) == "2 ns"
    assert units.format_rate(82.6e12) == "82.6 TFLOP/s"
    assert units.format_rate(1.008e12, "B/s") == "1.01 TB/s"
    assert units.format_rate(None) == "unknown"


def test_work_of_common_operations():
    """FLOPs and bytes of a matmul, a copy, an element-wise op and the triad."""
    assert roofline.matmul_flops(2, 3, 4) == 48
    assert roofline.matmul_flops(2, 3, 4, batch=5) == 240
    assert roofline.matmul_bytes(2, 3, 4, torch.float16) == (8 + 12 + 6) * 2
    assert roofline.copy_bytes(10, torch.float32) == 80
    assert roofline.elementwise_bytes(10, torch.bfloat16) == 60
    assert roofline.triad_bytes(10, torch.float64) == 240
    assert roofline.itemsize(torch.float8_e4m3fn) == 1


def test_percent_of_peak_unknown_peak_is_none():
    """A rate against an unknown peak has no percentage, never a made-up one."""
    assert roofline.percent_of_peak(50.0, 200.0) == 25.0
    assert roofline.percent_of_peak(50.0, None) is None
    assert roofline.percent_of_peak(50.0, 0.0) is None


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_sizes_must_be_positive_integers(bad):
    """A size that is not a positive integer is named in the error."""
    with pytest.raises(GpulabConfigError, match="m="):
        roofline.matmul_flops(bad, 2, 2)


@pytest.mark.gpu
def test_cuda_events_agree_with_torch_benchmark():
    """On a GPU, our median is within 10% of torch.utils.benchmark's for a large matmul."""
    from torch.utils import benchmark as tb

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    ours = timing.benchmark(torch.matmul, a, a, min_run_time=0.5)
    ref = tb.Timer("torch.matmul(a, a)", globals={"a": a, "torch": torch}).blocked_autorange(
        min_run_time=0.5
    )
    assert ours.device.startswith("cuda")
    assert abs(ours.median / ref.median - 1) < 0.10


def test_interleaved_times_each_call_once_per_round_rotating_the_order():
    """Each label is warmed up, then called once a round; every label leads some round; the
    medians order the calls as their known sleeps do."""
    order = []

    def sleeper(label, seconds):
        def call():
            order.append(label)
            time.sleep(seconds)

        return call

    calls = {
        "short": sleeper("short", 0.002),
        "long": sleeper("long", 0.008),
        "mid": sleeper("mid", 0.004),
    }
    found = timing.interleaved(calls, "cpu", rounds=6, warmup=1)
    assert order[:3] == ["short", "long", "mid"]  # one warm-up call each, first
    rounds = [order[3 + 3 * r : 6 + 3 * r] for r in range(6)]
    assert all(sorted(r) == ["long", "mid", "short"] for r in rounds)
    assert {r[0] for r in rounds} == set(calls)  # no label always runs first
    assert all(len(m.times) == 6 for m in found.values())
    assert found["short"].median < found["mid"].median < found["long"].median
    assert found["long"].median >= 0.008
    with pytest.raises(GpulabConfigError, match="calls is empty"):
        timing.interleaved({}, "cpu")
