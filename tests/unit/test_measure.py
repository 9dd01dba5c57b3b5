"""gpulab.measure and gpulab.budget on the CPU, with small sizes."""

from __future__ import annotations

import pytest
import torch

from gpulab import budget, links, measure
from gpulab.core.errors import GpulabConfigError


def test_matmul_point_counts_work_and_intensity():
    """A 64^3 fp32 product: 2*64^3 FLOPs over 3*64^2*4 bytes, timed on the CPU."""
    p = measure.matmul_point("cpu", 64, 64, 64, "fp32", min_run_time=0.01)
    assert p.work == 2 * 64**3 and p.nbytes == 3 * 64 * 64 * 4
    assert p.intensity == pytest.approx(2 * 64**3 / (3 * 64 * 64 * 4))
    assert p.rate == p.work / p.seconds and p.unit == "FLOP/s"


def test_points_over_the_budget_are_skipped(monkeypatch):
    """When an experiment would exceed the budget it is not run at all."""
    monkeypatch.setattr(budget, "fits", lambda device, nbytes, fraction=0.25: False)
    assert measure.matmul_point("cpu", 64, 64, 64) is None
    assert measure.bandwidth_sweep("cpu", [4096], progress=False) == []


def test_sweeps_return_one_point_per_job():
    """Every (precision, size) and (kind, size) pair gives one point."""
    points = measure.matmul_sweep("cpu", [16, 32], ["fp32"], min_run_time=0.01, progress=False)
    assert [p.size for p in points] == ["16x16x16", "32x32x32"]
    bw = measure.bandwidth_sweep("cpu", [4096, 65536], min_run_time=0.01, progress=False)
    assert [(p.op, p.nbytes) for p in bw] == [
        ("copy", 4096),
        ("copy", 65536),
        ("triad", 4096),
        ("triad", 65536),
    ]
    assert bw[0].work == 2 * 4096 and bw[2].work == 3 * 4096


def test_best_matmul_picks_the_highest_rate():
    """The best of several shapes is the one with the largest FLOP/s."""
    shapes = [(8, 8, 8), (128, 128, 128)]
    best = measure.best_matmul("cpu", shapes, "fp32", min_run_time=0.01, progress=False)
    assert best.size in ("8x8x8", "128x128x128")
    with pytest.raises(GpulabConfigError, match="shapes"):
        measure.best_matmul("cpu", [], "fp32", progress=False)


def test_roofline_points_have_intensities():
    """Matmul, add, softmax and layer norm, each with its FLOPs per byte."""
    points = measure.roofline_points("cpu", matmul_n=32, elements=4096, min_run_time=0.01)
    assert [p.op for p in points] == ["matmul", "add", "softmax", "layernorm"]
    assert all(p.intensity and p.rate > 0 for p in points)


def test_tf32_is_allowed_only_inside_the_block():
    """The float32 matmul precision is restored after a tf32 measurement."""
    before = torch.get_float32_matmul_precision()
    with measure.matmul_precision("tf32"):
        assert torch.get_float32_matmul_precision() == "high"
    assert torch.get_float32_matmul_precision() == before


def test_precisions_follow_the_hardware():
    """bf16 on CPUs with AMX or AVX-512 BF16; TF32 and bf16 on NVIDIA from Ampere (8.0) on."""
    assert measure.matmul_precisions("cpu", ["AVX2"]) == ["fp32"]
    assert measure.matmul_precisions("cpu", ["AVX2", "AMX"]) == ["fp32", "bf16"]
    if torch.version.hip is None:
        assert measure.matmul_precisions("cuda", [], "7.5") == ["fp32", "fp16"]
        assert measure.matmul_precisions("cuda", [], "9.0") == ["fp32", "tf32", "bf16", "fp16"]


def test_unknown_names_are_refused():
    """Unknown precisions and bandwidth kinds name the field and the choices."""
    with pytest.raises(GpulabConfigError, match="precision='fp64'"):
        measure.torch_dtype("fp64")
    with pytest.raises(GpulabConfigError, match="kind='scale'"):
        measure.bandwidth_point("cpu", 4096, "scale")


def test_pcie_peaks():
    """PCIe 4.0 x16: 16 GT/s x 128/130 / 8 bits x 16 lanes = 31.5 GB/s; unknown link -> None."""
    assert links.pcie_peak_bytes_per_s(4, 16) == pytest.approx(31.508e9, rel=1e-3)
    assert links.pcie_peak_bytes_per_s(3, 16) == pytest.approx(15.754e9, rel=1e-3)
    assert links.pcie_peak_bytes_per_s(None, 16) is None


def test_host_to_device_needs_a_cuda_gpu():
    """On the CPU the copy experiment says it needs a GPU instead of faking one."""
    with pytest.raises(GpulabConfigError, match="need a CUDA GPU"):
        measure.host_to_device("cpu", [1024], pinned=True)


def test_budget_is_a_quarter_of_free_memory(monkeypatch):
    """The allowance is a fraction of what is free now; unknown free memory uses a safe default."""
    monkeypatch.setattr(budget, "free_bytes", lambda device: 8 * 2**30)
    assert budget.allowance("cpu") == 2 * 2**30
    assert budget.max_elements("cpu", 4, buffers=2) == 2**28
    assert budget.fits("cpu", 2 * 2**30) and not budget.fits("cpu", 2 * 2**30 + 1)
    monkeypatch.setattr(budget, "free_bytes", lambda device: None)
    assert budget.allowance("cpu") == budget.UNKNOWN_FREE_BYTES // 4
    with pytest.raises(GpulabConfigError, match="fraction"):
        budget.allowance("cpu", fraction=0)


def test_free_bytes_on_this_cpu_is_positive():
    """The CPU's free memory is read from the OS."""
    assert budget.free_bytes("cpu") > 0
