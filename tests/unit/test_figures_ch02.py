"""Chapter 2's figures (gpulab.course.figures_ch02): their form, the page's references, and the
most important values against derivations by hand from published figures."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gpulab.course import figures_ch02
from gpulab.reference import formats
from gpulab.ui import pictures_ch02

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "02_vram.md"
NOTEBOOK = "notebooks/02_will_it_fit.ipynb"

# Published inputs of the hand derivations, typed here on purpose: the test compares gpulab's
# tables with them, so a changed table fails here first.
LLAMA70_PARAMS = 70_553_706_496  # safetensors index of meta-llama/Llama-3.1-70B, bf16 bytes / 2
# Llama-3-70B's config.json: hidden, heads, KV heads, MLP width, layers, vocabulary
H, HEADS, KV_HEADS, FFN, LAYERS, VOCAB = 8192, 64, 8, 28672, 80, 128256
Q4_K_M_BPW = 4.84  # llama.cpp's quantize table for Q4_K_M
INT4_G128_BPW = 4 + 16 / 128  # int4 codes plus one fp16 scale per 128 weights
RTX4090_GBS = 1008  # 384-bit x 21 Gbps / 8
DDR5_5600_DUAL_GBS = 2 * 8 * 5600 / 1000  # two 64-bit channels x 5600 MT/s
# nvidia-smi's memory.total, MiB (public outputs, e.g. modal-labs/modal-client PR 2797)
SMI_MIB = {
    "rtx4090": 24564,
    "rtx3090": 24576,
    "a100_80": 81920,
    "h100": 81559,
    "l4": 23034,
    "t4": 15360,
}
MARKETED_GB = {"rtx4090": 24, "rtx3090": 24, "a100_80": 80, "h100": 80, "l4": 24, "t4": 16}
CONTEXT_BYTES, SLACK = 2**29, 0.05  # the course's CUDA context and allocator slack
# DeepSeek-V3/R1 config.json: layers, kv_lora_rank, qk_rope_head_dim
R1_LAYERS, R1_KV_LORA, R1_ROPE = 61, 512, 64


@pytest.fixture(scope="module")
def figs() -> dict:
    return figures_ch02.figures()


def _usable_gb(mib: int, count: int = 1) -> float:
    """What `count` cards reporting `mib` leave a model's tensors, by hand."""
    return count * (mib * 2**20 - CONTEXT_BYTES) / (1 + SLACK) / 1e9


def test_llama70_parameters_from_the_config(figs):
    per_layer = 2 * H * H + 2 * H * (KV_HEADS * H // HEADS) + 3 * H * FFN + 2 * H
    total = LAYERS * per_layer + 2 * VOCAB * H + H
    assert total == LLAMA70_PARAMS
    assert figs["llama70_params"] == LLAMA70_PARAMS
    cfg = json.loads((ROOT / "src/gpulab/data/model_configs/Llama-3-70B.json").read_text())[
        "config"
    ]
    assert (figs["llama70_hidden"], figs["llama70_ffn"], figs["llama70_vocab"]) == (
        cfg["hidden_size"],
        cfg["intermediate_size"],
        cfg["vocab_size"],
    )


def test_llama70_weights_in_each_format(figs):
    assert figs["llama70_fp16_gb"] == pytest.approx(LLAMA70_PARAMS * 2 / 1e9, rel=1e-9)
    assert figs["llama70_q4km_gb"] == pytest.approx(LLAMA70_PARAMS * Q4_K_M_BPW / 8 / 1e9, rel=1e-6)
    kept = 2 * VOCAB * H + (2 * LAYERS + 1) * H  # embedding, head and norms stay 16-bit
    int4 = ((LLAMA70_PARAMS - kept) * INT4_G128_BPW / 8 + kept * 2) / 1e9
    assert figs["llama70_int4_gb"] == pytest.approx(int4, rel=1e-6)
    assert figs["tier7_q4km_gb"] == pytest.approx(7 * Q4_K_M_BPW / 8, rel=1e-9)
    assert figs["tier671_fp16_gb"] == pytest.approx(1342)


def test_capacities_as_the_driver_reports_them(figs):
    for key, mib in SMI_MIB.items():
        assert figs[f"{key}_driver_mib"] == mib
        assert figs[f"{key}_driver_gb"] == pytest.approx(mib * 2**20 / 1e9, rel=1e-9)
        assert figs[f"{key}_over_marketed"] == pytest.approx(
            mib * 2**20 / (MARKETED_GB[key] * 1e9) - 1
        )
        assert figs[f"{key}_usable_gb"] == pytest.approx(_usable_gb(mib), rel=1e-6)
    # GiB-based cards report about 7% more than marketed, ECC cards well under 1%
    assert 0.06 < figs["rtx4090_over_marketed"] < 0.08
    assert 0 < figs["t4_over_marketed"] < 0.01


def test_fit_decisions_follow_the_numbers(figs):
    llama70_q4km = LLAMA70_PARAMS * Q4_K_M_BPW / 8 / 1e9
    assert figs["llama70_q4km_on_two_3090"] == (
        "fits" if llama70_q4km <= _usable_gb(SMI_MIB["rtx3090"], 2) else "does not fit"
    )
    assert figs["tier70_plain4_in_rtx4090"] == "does not fit"  # 35.0 GB, the smallest 4-bit size
    assert figs["bits_for_70b_in_rtx4090"] == pytest.approx(
        _usable_gb(SMI_MIB["rtx4090"]) * 8 / 70, rel=1e-6
    )


def test_kv_cache_by_hand(figs):
    per_token = 2 * LAYERS * KV_HEADS * (H // HEADS) * 2  # K and V, bf16
    assert figs["llama70_kv_bytes_per_token"] == per_token == 327_680
    assert figs["llama70_kv_128k_gb"] == pytest.approx(per_token * 131072 / 1e9)
    assert figs["r1_kv_bytes_per_token"] == R1_LAYERS * (R1_KV_LORA + R1_ROPE) * 2


def test_decode_bound_and_offload_by_hand(figs):
    # one token reads every weight but the input embedding (one row of it) plus the KV cache
    read = (LLAMA70_PARAMS - VOCAB * H) * Q4_K_M_BPW / 8 + 327_680 * 4096
    assert figs["llama70_q4km_rtx4090_4k_bound_tok_s"] == pytest.approx(
        RTX4090_GBS * 1e9 / read, rel=0.005
    )
    w_g, w_c = figs["offload_wg_gb"], figs["offload_wc_gb"]
    assert w_g <= _usable_gb(SMI_MIB["rtx4090"])
    assert w_g + w_c == pytest.approx(read / 1e9, rel=0.005)  # the split covers the whole read
    slowdown = (w_g / RTX4090_GBS + w_c / DDR5_5600_DUAL_GBS) / ((w_g + w_c) / RTX4090_GBS)
    assert figs["offload_slowdown"] == pytest.approx(slowdown, rel=1e-6)
    ratio = RTX4090_GBS / DDR5_5600_DUAL_GBS
    assert figs["article_fraction_hi"] == pytest.approx((2 - 1) / (ratio - 1))


def test_training_bytes_per_parameter(figs):
    assert figs["mixed_adamw_bytes"] == 2 + 2 + 4 + 4 + 4  # ZeRO: 2 + 2 + 12 with Adam
    assert figs["tier7_mixed_adamw_gb"] == pytest.approx(7 * 16)
    assert figs["mixed_adamw_bytes"] == 16  # the page's table total, from the recipe
    # Korthikanti et al.: 34 s b h bytes per layer with fused attention, 2 s b h checkpointed
    assert figs["act_fused_batch_gb"] == pytest.approx(8 * 2048 * 4096 * 34 * 32 / 1e9)
    assert figs["act_ckpt_batch_gb"] == pytest.approx(8 * 2 * 2048 * 4096 * 32 / 1e9)


def test_a_changed_format_changes_the_figures(monkeypatch):
    """The figures read gpulab's formats: a different Q4_K_M bits per weight moves them."""
    changed = dataclasses.replace(formats.WEIGHT_FORMATS["q4_k_m"], published_bpw=5.0)
    monkeypatch.setitem(formats.WEIGHT_FORMATS, "q4_k_m", changed)
    figs = figures_ch02.figures()
    assert figs["q4km_bits"] == 5.0
    assert figs["llama70_q4km_gb"] == pytest.approx(LLAMA70_PARAMS * 5.0 / 8 / 1e9, rel=1e-6)
    assert figs["tier7_q4km_gb"] == pytest.approx(7 * 5.0 / 8)


# ---- the page's pictures (gpulab.ui.pictures_ch02)

R1_DEEPSEEK = 61 * (512 + 64) * 2  # bytes per token of R1's latent cache in bf16, by hand


@pytest.mark.parametrize("name", ["ch02-kv-context", "ch02-offload"])
def test_each_picture_has_a_title_labelled_axes_and_a_legend(name):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig = pictures_ch02.PICTURES[name]()
    try:
        (ax,) = fig.axes
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
        assert "(" in ax.get_xlabel() and "(" in ax.get_ylabel()  # a unit in each label
        assert len(ax.get_legend().get_texts()) >= 3
    finally:
        plt.close(fig)


def test_the_kv_picture_is_the_kv_formula_by_hand():
    series = list(pictures_ch02.kv_series().values())
    gqa, mha, mla = series
    per_token = 2 * LAYERS * KV_HEADS * (H // HEADS) * 2  # Llama-3-70B, bf16
    for i, tokens in enumerate(pictures_ch02.CONTEXTS):
        assert gqa[i] == pytest.approx(per_token * tokens / 1e9)
        assert mha[i] == pytest.approx(per_token * HEADS / KV_HEADS * tokens / 1e9)
        assert mla[i] == pytest.approx(R1_DEEPSEEK * tokens / 1e9)
    assert pictures_ch02.CONTEXTS[-1] == 131072  # up to Llama 3.1's context


def test_the_offload_picture_starts_at_the_full_bound_and_only_falls(figs):
    shares, curves, fits = pictures_ch02.offload_series()
    ram, pcie = curves.values()
    assert shares[0] == 0 and shares[-1] == 1
    # nothing offloaded: the bound of a card big enough for all of it (the page's first row)
    assert ram[0] == pytest.approx(figs["llama70_q4km_rtx4090_4k_bound_tok_s"], rel=1e-9)
    assert all(a > b for a, b in zip(ram, ram[1:], strict=False))  # every layer moved costs
    assert all(p < r for p, r in zip(pcie[1:], ram[1:], strict=True))  # PCIe is the slower path
    # the split that fits is the page's: its bound is the page's offloaded figure
    at_fit = ram[shares.index(fits)]
    assert at_fit == pytest.approx(figs["llama70_q4km_offload_tok_s"], rel=1e-9)
    total = LAYERS + 1  # the layers and the output head
    assert fits == pytest.approx((total - figs["offload_gpu_layers"]) / total)
