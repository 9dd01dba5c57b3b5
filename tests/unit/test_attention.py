"""gpulab.attention and gpulab.compiled on the CPU."""

from __future__ import annotations

import pytest
import torch

from gpulab import attention, budget, compiled


def test_naive_and_fused_attention_agree():
    """Both compute the same causal attention (the check that makes a speed-up meaningful)."""
    q, k, v = attention.random_qkv(2, 4, 33, 16)
    torch.testing.assert_close(
        attention.naive_attention(q, k, v), attention.sdpa(q, k, v), rtol=1e-5, atol=1e-5
    )
    torch.testing.assert_close(
        attention.naive_attention(q, k, v, causal=False),
        attention.sdpa(q, k, v, causal=False),
        rtol=1e-5,
        atol=1e-5,
    )


def test_the_cpu_runs_a_fused_kernel():
    """On this CPU build SDPA dispatches to its flash kernel for float32 without a mask."""
    q, k, v = attention.random_qkv(1, 2, 64, 16)
    assert attention.sdpa_kernel(q, k, v) == "flash (CPU kernel)"


def test_compare_reports_memory_growth_and_agreement():
    """Naive attention's peak grows with seq^2; SDPA's does not; both agree."""
    rows = attention.compare("cpu", [128, 512], batch=1, heads=2, head_dim=16, min_run_time=0.01)
    assert [r.seq for r in rows] == [128, 512]
    small, large = rows
    assert large.naive_peak_bytes >= 8 * small.naive_peak_bytes  # 16x the scores, plus inputs
    assert large.naive_peak_bytes > 4 * large.sdpa_peak_bytes
    attention.check_agreement(rows)


def test_naive_is_skipped_beyond_the_budget(monkeypatch):
    """Where score matrices exceed the budget, naive attention is not run and the note says why."""
    monkeypatch.setattr(budget, "fits", lambda device, nbytes, fraction=0.25: nbytes < 10_000)
    (row,) = attention.compare("cpu", [256], batch=1, heads=2, head_dim=16, min_run_time=0.01)
    assert row.naive_seconds is None and row.speedup is None and "naive skipped" in row.note


def test_check_agreement_raises_on_a_wrong_answer():
    """A fused result that differs from the reference fails loudly."""
    bad = attention.AttentionComparison(64, "x", 1.0, 1, 2.0, 2, 0.5)
    with pytest.raises(AssertionError, match="differ"):
        attention.check_agreement([bad])


def test_score_matrix_bytes():
    """batch x heads x seq^2 x bytes."""
    assert attention.score_matrix_bytes(2, 8, 1024, 2) == 2 * 8 * 1024 * 1024 * 2


def test_compile_result_arithmetic():
    """Speed-up and the calls needed to repay the compile time."""
    from gpulab.bench.timing import Measurement

    r = compiled.CompileResult(
        10.0, Measurement("e", (0.004,), 1, 1, "cpu"), Measurement("c", (0.002,), 1, 1, "cpu"), 0.0
    )
    assert r.speedup == 2.0 and r.calls_to_break_even == pytest.approx(5000)
    slower = compiled.CompileResult(
        10.0, Measurement("e", (0.001,), 1, 1, "cpu"), Measurement("c", (0.002,), 1, 1, "cpu"), 0.0
    )
    assert slower.calls_to_break_even is None
