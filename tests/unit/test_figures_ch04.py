"""Chapter 4's figures (gpulab.course.figures_ch04): their form, the page's references, and the
most important values against derivations by hand from the published figures."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpulab.course import figures_ch04

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "04_backends.md"
NOTEBOOK = "notebooks/04_backends.ipynb"

# Published inputs of the hand derivations, typed here on purpose: the test compares gpulab's
# tables with them, so a changed table fails here first.
LLAMA2_7B_PARAMS = 6_738_415_616  # meta-llama/Llama-2-7b-hf, the catalogue's count
Q4_K_M_BPW = 4.84  # llama.cpp's quantize table for Q4_K_M (7B)
RTX4090_GBS = 1008  # 384-bit x 21 Gbps
VOCAB_7B, HIDDEN_7B = 32000, 4096  # Llama-2-7B's config.json
H100_SXM_FP16_TFLOPS = 989.4  # NVIDIA H100 datasheet, dense
M3_ULTRA_GBS = 819  # Apple's M3 Ultra spec page: 819 GB/s of unified memory bandwidth
# nvidia-smi's total for an RTX 4090, MiB; the CUDA context (512 MiB) and the allocator's 5%
RTX4090_REPORTED_MIB, CUDA_CONTEXT, SLACK = 24_564, 2**29, 0.05
# Llama-3-70B's config.json: hidden, heads, KV heads, MLP width, layers, vocabulary
H, HEADS, KV_HEADS, FFN, LAYERS, VOCAB = 8192, 64, 8, 28672, 80, 128256


@pytest.fixture(scope="module")
def figs() -> dict:
    return figures_ch04.figures()


def test_llama2_7b_weights_and_bounds_by_hand(figs):
    fp16_gb = LLAMA2_7B_PARAMS * 2 / 1e9
    q4_gb = LLAMA2_7B_PARAMS * Q4_K_M_BPW / 8 / 1e9
    assert figs["llama7_fp16_gb"] == pytest.approx(fp16_gb, rel=1e-6)
    assert figs["llama7_q4km_gb"] == pytest.approx(q4_gb, rel=1e-6)
    # a token reads every weight once but the embedding table, of which it reads one row, and
    # one token's KV cache (0.5 MB, the 1e-4 below)
    fp16_read_gb = (LLAMA2_7B_PARAMS - (VOCAB_7B - 1) * HIDDEN_7B) * 2 / 1e9
    bound = RTX4090_GBS / fp16_read_gb
    assert figs["llama7_fp16_rtx4090_bound_tok_s"] == pytest.approx(bound, rel=1e-4)
    assert figs["llama7_fp16_rtx4090_claim_share"] == pytest.approx(60 / bound, rel=1e-4)
    # at Q4_K_M the table left unread is at most the 16-bit table: between the two bounds
    q4_bound = figs["llama7_q4km_rtx4090_bound_tok_s"]
    assert RTX4090_GBS / q4_gb < q4_bound < RTX4090_GBS / (q4_gb - VOCAB_7B * HIDDEN_7B * 2 / 1e9)
    # the article's three rates: each below its FP16 bound, the M3 Ultra's (not the M3 Max's)
    assert figs["m3ultra_gbs"] == M3_ULTRA_GBS
    assert figs["llama7_fp16_m3ultra_claim_share"] == pytest.approx(
        38 / (M3_ULTRA_GBS / fp16_read_gb), rel=1e-4
    )
    assert 0 < figs["article_share_of_fp16_bound_min"] < figs["article_share_of_fp16_bound_max"] < 1


def test_llama3_70b_layer_arithmetic_by_hand(figs):
    head_dim = H // HEADS
    layer = 2 * H * H + 2 * H * KV_HEADS * head_dim + 3 * H * FFN + 2 * H
    assert layer == 855_654_400
    assert figs["llama70_layer_params"] == layer
    assert figs["llama70_params"] == LAYERS * layer + 2 * VOCAB * H + H
    assert figs["llama70_q4km_layer_mb"] == pytest.approx(layer * Q4_K_M_BPW / 8 / 1e6, rel=1e-9)


def test_ngl_by_hand_is_the_basis_answer(figs):
    """The page's -ngl is the library's: the room for tensors over one layer's bytes (its
    weights and its share of a 4,096-token fp16 KV cache), rounded down (issue 29's error: the
    page budgeted 1 GB of buffers on the marketed 24 GB and found fewer layers)."""
    from gpulab.estimate import basis

    layer_bytes = 855_654_400 * Q4_K_M_BPW / 8
    kv_per_layer = 2 * KV_HEADS * (H // HEADS) * 2 * 4096  # keys and values, fp16
    room = (RTX4090_REPORTED_MIB * 2**20 - CUDA_CONTEXT) / (1 + SLACK)
    n = math.floor(room / (layer_bytes + kv_per_layer))
    assert n == 44
    assert figs["ngl_fit_float"] == pytest.approx(room / (layer_bytes + kv_per_layer), rel=1e-6)
    assert basis.layers_that_fit("Llama-3-70B", "q4_k_m", "RTX 4090", 4096) == n
    assert figs["llama70_q4km_layer_read_mb"] == pytest.approx(
        (layer_bytes + kv_per_layer) / 1e6, rel=1e-6
    )
    assert figs["llama70_kv_4k_layer_mb"] == pytest.approx(kv_per_layer / 1e6)


def test_attention_and_flashattention_by_hand(figs):
    assert figs["scores_8k_gb"] == pytest.approx(32 * 8192**2 * 2 / 1e9, rel=1e-9)
    assert figs["scores_128k_tb"] == pytest.approx(32 * 131072**2 * 2 / 1e12, rel=1e-9)
    assert figs["fa3_share_of_h100_peak"] == pytest.approx(740 / H100_SXM_FP16_TFLOPS, rel=1e-6)
    assert figs["article_fa3_share_of_h100_peak"] == pytest.approx(
        120 / H100_SXM_FP16_TFLOPS, rel=1e-6
    )
    assert figs["llama70_kv_128k_gb"] == pytest.approx(
        2 * LAYERS * KV_HEADS * 128 * 2 * 131072 / 1e9, rel=1e-9
    )


def test_fusion_and_fp4_ratios_by_hand(figs):
    assert figs["chain_eager_bytes_per_value"] == 3 * (4 + 4)  # three kernels, fp32 read + write
    assert figs["chain_fusion_speedup_x"] == pytest.approx(3)
    assert figs["b200_fp4_vs_fp16_x"] == pytest.approx(9000 / 2250)
    assert figs["rtx5090_fp4_vs_fp16acc_x"] == pytest.approx(1676 / 419, rel=1e-3)
