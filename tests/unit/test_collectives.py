"""gpulab.collectives: the ring all-reduce cost model and the bytes ZeRO stages leave per rank."""

from __future__ import annotations

import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.estimate.collectives import (
    ZERO_STAGES,
    algorithm_bandwidth,
    allreduce_bus_factor,
    allreduce_seconds,
    bus_bandwidth,
    fit_ring_model,
    sharded_bytes_per_rank,
)


@pytest.mark.parametrize("n, factor", [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75)])
def test_bus_factor_is_2_n_minus_1_over_n(n, factor):
    """2(n-1)/n: nothing for one rank, the message once for two, towards twice for many."""
    assert allreduce_bus_factor(n) == pytest.approx(factor)


def test_bus_bandwidth_scales_the_algorithm_bandwidth():
    """nccl-tests' definition: busbw = algbw x 2(n-1)/n."""
    assert bus_bandwidth(10e9, 8) == pytest.approx(17.5e9)
    assert bus_bandwidth(10e9, 2) == pytest.approx(10e9)
    assert bus_bandwidth(10e9, 1) == 0.0
    assert algorithm_bandwidth(1e6, 1e-3) == pytest.approx(1e9)


def test_allreduce_seconds_is_latency_plus_bytes_over_bus_bandwidth():
    """1 GB over 4 ranks at 10 GB/s bus: 1.5 x 0.1 s, plus the latency."""
    assert allreduce_seconds(1e9, 4, 10e9) == pytest.approx(0.15)
    assert allreduce_seconds(1e9, 4, 10e9, latency_s=1e-4) == pytest.approx(0.1501)
    assert allreduce_seconds(0, 4, 10e9, latency_s=1e-4) == pytest.approx(1e-4)
    assert allreduce_seconds(1e9, 1, 10e9, latency_s=1.0) == 0.0  # one rank: no exchange


def test_time_and_bandwidth_round_trip():
    """The bus bandwidth measured from a modelled time gives back the model's bandwidth."""
    nbytes, n, bus = 256e6, 8, 150e9
    t = allreduce_seconds(nbytes, n, bus)
    assert bus_bandwidth(algorithm_bandwidth(nbytes, t), n) == pytest.approx(bus)


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: allreduce_bus_factor(0), "world_size"),
        (lambda: allreduce_bus_factor(2.0), "world_size"),
        (lambda: bus_bandwidth(-1.0, 2), "algorithm_bytes_per_s"),
        (lambda: bus_bandwidth(1e9, 0), "world_size"),
        (lambda: allreduce_seconds(-1, 2, 1e9), "nbytes"),
        (lambda: allreduce_seconds(1e6, 2, 0), "bus_bytes_per_s"),
        (lambda: allreduce_seconds(1e6, 2, 1e9, latency_s=-1e-6), "latency_s"),
        (lambda: allreduce_seconds(True, 2, 1e9), "nbytes"),
        (lambda: algorithm_bandwidth(1e6, 0), "seconds"),
    ],
)
def test_bad_inputs_name_the_field(call, field):
    """Every bad value raises GpulabConfigError naming the argument."""
    with pytest.raises(GpulabConfigError, match=field):
        call()


def test_fit_recovers_the_model():
    """Times made by the model give back its latency and bus bandwidth."""
    sizes = [4**k * 1024 for k in range(8)]
    times = [allreduce_seconds(s, 4, 20e9, 30e-6) for s in sizes]
    fit = fit_ring_model(sizes, times, 4)
    assert fit.latency_s == pytest.approx(30e-6, rel=1e-6)
    assert fit.bus_bytes_per_s == pytest.approx(20e9, rel=1e-6)
    assert fit.seconds(sizes[3], 4) == pytest.approx(times[3])


def test_fit_clips_a_negative_latency():
    """Times below the line t = x / 1e10 for small sizes: latency 0, a slope through 0 that
    lies between the points' own bandwidths (1e10 and 2e10 bytes/s)."""
    sizes = [1e3, 1e6, 1e9]
    times = [0.5e-7, 1e-4, 0.1]  # the smallest below the line t = x / 1e10
    fit = fit_ring_model(sizes, times, 2)
    assert fit.latency_s == 0.0
    assert 1e10 < fit.bus_bytes_per_s < 2e10


@pytest.mark.parametrize(
    "sizes, times, n",
    [
        ([1e3], [1e-3], 2),  # one point
        ([1e3, 1e4], [1e-3], 2),  # unequal lengths
        ([1e3, 1e4], [1e-3, -1.0], 2),  # a negative time
        ([1e3, 1e4], [1e-3, 1e-4], 2),  # faster for more bytes: no bandwidth
        ([1e3, 1e4], [1e-3, 1e-2], 1),  # one rank moves nothing
    ],
)
def test_fit_rejects_unusable_data(sizes, times, n):
    """Data the model cannot describe raises GpulabConfigError."""
    with pytest.raises(GpulabConfigError):
        fit_ring_model(sizes, times, n)


def test_zero_stages_shard_more_and_more():
    """P=100, G=100, S=200 over 4 ranks: DP 400, ZeRO-1 250, ZeRO-2 175, ZeRO-3 100."""
    totals = [sharded_bytes_per_rank(100, 100, 200, 4, stage)["total"] for stage in ZERO_STAGES]
    assert totals == [400, 250, 175, 100]
    one = sharded_bytes_per_rank(100, 100, 200, 4, 1)
    assert one == {"params": 100, "grads": 100, "optimizer": 50, "total": 250}


def test_shards_round_up():
    """10 bytes over 3 ranks: each shard is 4 bytes (the last one padded)."""
    assert sharded_bytes_per_rank(10, 10, 10, 3, 3)["params"] == 4
    assert sharded_bytes_per_rank(10, 10, 10, 1, 3)["total"] == 30


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(param_bytes=-1), "param_bytes"),
        (dict(grad_bytes=1.5), "grad_bytes"),
        (dict(optimizer_bytes=None), "optimizer_bytes"),
        (dict(world_size=0), "world_size"),
        (dict(stage=4), "stage"),
    ],
)
def test_sharding_bad_inputs(kwargs, field):
    """Bad byte counts, rank counts or stages name the field."""
    args = dict(param_bytes=8, grad_bytes=8, optimizer_bytes=16, world_size=2, stage=1)
    with pytest.raises(GpulabConfigError, match=field):
        sharded_bytes_per_rank(**{**args, **kwargs})


def test_flat_times_are_refused_or_given_as_an_average_rate():
    """Times that shrink with the size (a busy machine) have no slope: refused by default; with
    if_flat="rate", a line through the origin whose rate lies between the points' own."""
    sizes, times = [1e6, 4e6, 16e6], [3e-3, 2e-3, 1e-3]
    with pytest.raises(GpulabConfigError, match="do not grow"):
        fit_ring_model(sizes, times, 2)
    fit = fit_ring_model(sizes, times, 2, if_flat="rate")
    assert not fit.fitted and fit.latency_s == 0
    own = [allreduce_bus_factor(2) * s / t for s, t in zip(sizes, times, strict=True)]
    assert min(own) < fit.bus_bytes_per_s < max(own)
    growing = fit_ring_model(sizes, [1e-3, 3e-3, 9e-3], 2, if_flat="rate")
    assert growing.fitted and growing == fit_ring_model(sizes, [1e-3, 3e-3, 9e-3], 2)
