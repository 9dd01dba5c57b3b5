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
DDR5_5600_DUAL_GBS = 2 * 8 * 5600 / 1000  # two 64-bit channels x 5600 MT/s
H100_SXM_FP16_TFLOPS = 989.4  # NVIDIA H100 datasheet, dense
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
    # with a 2,048-token FP16 cache (2 x 32 layers x 4,096 x 2 bytes per token) read as well
    kv = 2 * 32 * HIDDEN_7B * 2 * 2048 / 1e9
    assert figs["llama7_fp16_rtx4090_2k_bound_tok_s"] == pytest.approx(
        RTX4090_GBS / (fp16_read_gb + kv), rel=1e-4
    )


def test_llama3_70b_layer_arithmetic_by_hand(figs):
    head_dim = H // HEADS
    layer = 2 * H * H + 2 * H * KV_HEADS * head_dim + 3 * H * FFN + 2 * H
    assert layer == 855_654_400
    assert figs["llama70_layer_params"] == layer
    assert figs["llama70_params"] == LAYERS * layer + 2 * VOCAB * H + H
    assert figs["llama70_q4km_layer_mb"] == pytest.approx(layer * Q4_K_M_BPW / 8 / 1e6, rel=1e-9)


def test_gpu_layers_and_offloaded_rate_by_hand(figs):
    layer_bytes = 855_654_400 * Q4_K_M_BPW / 8
    kv_per_token = 2 * LAYERS * KV_HEADS * (H // HEADS) * 2  # fp16
    kv = kv_per_token * 4096
    n = math.floor((24e9 - 1e9 - kv) / layer_bytes)
    assert n == 41 and figs["ngl_fit"] == n
    per_layer_read = layer_bytes + kv / LAYERS
    head = VOCAB * H * Q4_K_M_BPW / 8
    seconds = n * per_layer_read / (RTX4090_GBS * 1e9) + ((LAYERS - n) * per_layer_read + head) / (
        DDR5_5600_DUAL_GBS * 1e9
    )
    assert figs["offload_tok_s"] == pytest.approx(1 / seconds, rel=1e-3)
    assert figs["offload_step_ms"] == pytest.approx(seconds * 1e3, rel=1e-3)
    # the rate with everything on the card is several times the offloaded one
    assert figs["offload_slowdown_x"] > 4


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
