"""Chapter 5's figures (gpulab.course.figures_ch05): their form, the page's references, and the
most important values against derivations by hand from the published figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.course import figures_ch05

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "05_pitfalls.md"
NOTEBOOK = "notebooks/05_pitfalls.ipynb"

# Published inputs of the hand derivations, typed here on purpose: the test compares gpulab's
# tables with them, so a changed table fails here first.
RTX4090_CORES, RTX4090_BOOST_GHZ, RTX4090_W = 16384, 2.52, 450  # NVIDIA's RTX 4090 spec page
LLAMA32_1B_PARAMS, LLAMA32_VOCAB = 1_235_814_400, 128_256  # meta-llama/Llama-3.2-1B config
HGST_HE8_BYTES_PER_S = 205e6  # HGST Ultrastar He8 datasheet, sustained


@pytest.fixture(scope="module")
def figs() -> dict:
    return figures_ch05.figures()


def test_peak_follows_from_the_rated_boost_clock(figs):
    """units x clock x 2 FLOPs per FMA gives the table's FP32 peak; the observed clock is above."""
    peak = RTX4090_CORES * RTX4090_BOOST_GHZ * 2 / 1e3  # TFLOP/s
    assert figs["rtx4090_fp32_derived_tflops"] == pytest.approx(peak, rel=1e-6)
    assert figs["rtx4090_fp32_tflops"] == pytest.approx(peak, rel=2e-3)  # the table rounds
    assert figs["rtx4090_observed_over_boost"] == pytest.approx(
        2.85 / RTX4090_BOOST_GHZ - 1, rel=1e-6
    )
    # a rate within the boost headroom is not a timing bug; the unsynchronised reading is far off
    assert 0 < figs["rtx4090_observed_over_boost"] < 0.25
    assert figs["timing_bad_vs_peak_x"] > 1 + 10 * figs["rtx4090_observed_over_boost"]


def test_matmul_timing_by_hand(figs):
    flop = 2 * 8192**3
    assert figs["timing_tflop"] == pytest.approx(flop / 1e12, rel=1e-9)
    assert figs["timing_least_ms"] == pytest.approx(flop / 82.6e12 * 1e3, rel=2e-3)
    assert figs["timing_bad_tflops"] == pytest.approx(flop / 1e-3 / 1e12, rel=1e-9)


def test_training_states_and_logits_by_hand(figs):
    # AdamW: fp32 4 + 4 + 8; bf16-mixed 2 + 2 + 4 (master) + 8 (moments): 16 bytes either way
    assert figs["llama32_1b_states_gb"] == pytest.approx(16 * LLAMA32_1B_PARAMS / 1e9, rel=1e-9)
    assert figs["llama32_1b_logits_gb"] == pytest.approx(
        2 * LLAMA32_VOCAB * 4 * 8 * 2048 / 1e9, rel=1e-9
    )
    # bf16 halves every kept tensor but the fp32 ones: each RMSNorm's fp32 input copy (4 bytes
    # per hidden value, where fp32 keeps its 4-byte input) and SDPA's fp32 log-sum-exp
    share = figs["bf16_layers_act_share"]
    assert 0.5 < share < 0.75
    assert figs["llama32_1b_layers_act_bf16_gb"] == pytest.approx(
        share * figs["llama32_1b_layers_act_fp32_gb"], rel=1e-9
    )
    assert figs["levers_all_gb"] < figs["levers_naive_gb"] / 2


def test_attention_share_by_hand(figs):
    # Korthikanti et al.: scores 5as/h of sbh(34 + 5as/h), h = 4096, a = 32
    for s, share in ((512, 20 / 54), (2048, 80 / 114), (8192, 320 / 354)):
        assert figs[f"scores_share_{s}"] == pytest.approx(share, rel=1e-9)
    # 30% of the activations: 5as/h = 0.3 x 34 / 0.7, s = that x h / 5a
    assert figs["scores_share_matches_article_seq"] == round(0.3 * 34 / 0.7 * 4096 / 160)
    assert figs["scores_8k_gb"] == pytest.approx(32 * 8192**2 * 2 / 1e9, rel=1e-9)


def test_power_pcie_and_disks_by_hand(figs):
    assert figs["power_cap_share"] == pytest.approx(350 / RTX4090_W)
    assert figs["pcie4_x16_gbs"] == pytest.approx(16 * 16 * 128 / 130 / 8, rel=1e-9)
    assert figs["sata_gbs"] == pytest.approx(6 * 8 / 10 / 8, rel=1e-9)
    assert figs["hdd_70b_s"] == pytest.approx(140e9 / HGST_HE8_BYTES_PER_S, rel=1e-9)
    assert figs["nvme4_70b_s"] == pytest.approx(140 / (4 * 16 * 128 / 130 / 8), rel=1e-9)
    assert figs["cuda126_linux_driver"] == "560.28.03" and figs["cuda12_min_driver"] == "525"


def test_launch_bound_by_hand(figs):
    flop = 2 * 1024**2
    assert figs["linear_gpu_ns_per_sample"] == pytest.approx(flop / 82.6e12 * 1e9, rel=2e-3)
    # i9-13900K at its all-core turbo: 8 P-cores x 32 FLOP/cycle x 5.5 GHz + 16 E-cores x 16 x 4.3
    cpu = (8 * 32 * 5.5 + 16 * 16 * 4.3) * 1e9
    assert figs["cpu_allcore_tflops"] == pytest.approx(cpu / 1e12, rel=1e-9)
    assert figs["loader_overlapped_ms"] == max(10, 30 / 4)
