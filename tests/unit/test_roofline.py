"""gpulab.roofline: ridge point, attainable rate, and intensities checked by hand."""

from __future__ import annotations

import pytest
import torch

from gpulab import roofline
from gpulab.core.errors import GpulabConfigError

RTX_4090 = (165.2e12, 1008e9)  # dense bf16 FLOP/s and bytes/s (gpu_specs.json's RTX 4090)


def test_ridge_point_of_an_rtx_4090():
    """165.2e12 / 1008e9 = 163.9 FLOP/byte."""
    assert roofline.ridge_point(*RTX_4090) == pytest.approx(163.888, rel=1e-4)


def test_attainable_is_the_lower_roof():
    """Below the ridge the bandwidth roof binds; above it the peak."""
    assert roofline.attainable(1.0, *RTX_4090) == 1008e9
    assert roofline.attainable(1000.0, *RTX_4090) == 165.2e12
    assert roofline.bound(1.0, *RTX_4090) == "memory"
    assert roofline.bound(200.0, *RTX_4090) == "compute"


def test_square_fp16_matmul_intensity_is_n_over_3():
    """2n^3 FLOPs over 3 n^2 two-byte elements = n / 3 FLOP per byte."""
    assert roofline.matmul_cost(4096, 4096, 4096, torch.float16).intensity == pytest.approx(
        4096 / 3
    )


def test_fp32_add_intensity_is_one_twelfth():
    """One FLOP per element over 12 bytes (two 4-byte reads, one write)."""
    assert roofline.add_cost(1000, torch.float32).intensity == pytest.approx(1 / 12)


def test_softmax_and_layernorm_are_memory_bound_on_any_gpu():
    """A few FLOPs per element moved: far below every GPU's ridge point."""
    for cost in (
        roofline.softmax_cost(1024, 1024, torch.float16),
        roofline.layernorm_cost(1024, 1024, torch.float16),
    ):
        assert cost.intensity < 5
        assert roofline.bound(cost.intensity, *RTX_4090) == "memory"


@pytest.mark.parametrize("args", [(0, 1e12), (1e12, -1), (float("inf"), 1e9)])
def test_invalid_rates_are_refused(args):
    """Zero, negative or infinite peaks are an input error."""
    with pytest.raises(GpulabConfigError):
        roofline.ridge_point(*args)
