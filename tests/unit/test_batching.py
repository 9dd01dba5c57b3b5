"""Small work per launch (chapter 5): the sweep measures each batch and grows with it."""

import pytest

from gpulab import batching
from gpulab.core.errors import GpulabConfigError


def test_sweep_reports_consistent_rates():
    points = batching.sweep("cpu", [1, 64], width=64, depth=2, min_run_time=0.02)
    assert [p.batch for p in points] == [1, 64]
    for p in points:
        assert p.samples_per_s == pytest.approx(p.batch / p.seconds)
        assert p.flops_per_s == pytest.approx(2 * p.batch * 2 * 64 * 64 / p.seconds)


def test_sweep_skips_batches_over_the_budget(monkeypatch):
    monkeypatch.setattr(batching.budget, "allowance", lambda device: 4 * 8 * 16 * 4)
    points = batching.sweep("cpu", [1, 8, 10_000], width=16, depth=2, min_run_time=0.01)
    assert [p.batch for p in points] == [1, 8]


def test_bad_batches_are_named():
    with pytest.raises(GpulabConfigError, match="batches is empty"):
        batching.sweep("cpu", [])
    with pytest.raises(GpulabConfigError, match=r"batches\[1\]"):
        batching.sweep("cpu", [4, 0])
    with pytest.raises(GpulabConfigError, match="width"):
        batching.mlp(0, 2, "cpu")
