"""Chapter 7's figures (gpulab.course.figures_ch07): their form, the pages' references to them,
and the most important ones against derivations by hand from the published model configs and
link specifications, written out here rather than taken from the module's own expressions."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from gpulab.course import figures_ch07
from gpulab.reference import formats
from tools.checks import page_figures

PAGES = ("book/07_beyond_one_gpu.md", "book/workshop/instructor_guide.md")
NOTEBOOK = "notebooks/07_beyond_one_gpu.ipynb"

# Llama-3-70B's config.json (meta-llama/Meta-Llama-3-70B): the shapes the hand counts use.
L70 = {
    "hidden": 8192,
    "layers": 80,
    "ffn": 28672,
    "vocab": 128256,
    "heads": 64,
    "kv_heads": 8,
    "head_dim": 128,
}
# Llama-2-7B's config.json (meta-llama/Llama-2-7b-hf).
L7 = {"hidden": 4096, "layers": 32, "ffn": 11008, "vocab": 32000}


def llama70_counts() -> dict[str, int]:
    """Llama-3-70B's parameters by part, counted by hand from its config (untied head)."""
    h, kv = L70["hidden"], L70["kv_heads"] * L70["head_dim"]
    attention = 2 * h * h + 2 * h * kv  # q and o, k and v
    mlp = 3 * h * L70["ffn"]  # gate, up, down
    norms = (2 * L70["layers"] + 1) * h  # two per layer and the final one
    embedding = L70["vocab"] * h
    matrices = L70["layers"] * (attention + mlp)
    return {
        "matrices": matrices,
        "norms": norms,
        "embedding": embedding,
        "head": embedding,
        "total": matrices + norms + 2 * embedding,
    }


def llama7_params() -> int:
    """Llama-2-7B's parameters, by hand: MHA attention, a gated MLP, untied head."""
    h = L7["hidden"]
    per_layer = 4 * h * h + 3 * h * L7["ffn"] + 2 * h
    return L7["layers"] * per_layer + h + 2 * L7["vocab"] * h


@pytest.fixture(scope="module")
def fig() -> dict:
    return figures_ch07.figures()


@pytest.fixture
def cache():
    """page_figures computes the figures once per process; each test starts afresh."""
    page_figures.figures.cache_clear()
    yield page_figures.figures
    page_figures.figures.cache_clear()


@pytest.mark.parametrize("page", PAGES)
def test_every_reference_of_the_pages_resolves(page, cache):
    path = page_figures.ROOT / page
    refs = page_figures.parse(path.read_text(encoding="utf-8"), page)
    mine = set(figures_ch07.figures())
    assert {r.name for r in refs} & mine, f"{page} pastes nothing of chapter 7's figures"
    for ref in refs:
        page_figures.resolve_ref(
            ref
        )  # raises FigureError on a missing key or a spec that does not apply


def test_the_chapter_page_pastes_only_what_reads_as_a_figure(cache):
    text = page_figures.render(page_figures.ROOT / PAGES[0])
    for bad in ("None", "nan", "inf"):
        assert not re.search(rf"\b{bad}\b", text), f"the rendered page says {bad!r}"


def test_the_guide_says_the_doctors_thresholds(cache):
    text = page_figures.render(page_figures.ROOT / PAGES[1])
    assert "less than 1 GiB free on a GPU" in text
    assert "less than 2 GiB of RAM available" in text
    assert "more than 50% of a GPU's memory" in text


def test_zero_stages_of_the_pages_worked_case(fig):
    """ZeRO's Figure 1 for Llama-2-7B on four GPUs: 4 + 12/N, 2 + 14/N and 16/N bytes per
    parameter (Rajbhandari et al., arXiv:1910.02054)."""
    n, g = 6_738_415_616, 4  # Llama-2-7B's published parameter count; the page's GPUs
    assert fig["zero_page_gpus"] == g
    assert fig["llama7_full_finetune_gb"] == pytest.approx(16 * n / 1e9, rel=1e-6)
    assert fig["llama7_zero1_gb"] == pytest.approx((4 * n + 12 * n / g) / 1e9, rel=1e-6)
    assert fig["llama7_zero2_gb"] == pytest.approx((2 * n + 14 * n / g) / 1e9, rel=1e-6)
    assert fig["llama7_zero3_gb"] == pytest.approx(16 * n / g / 1e9, rel=1e-6)


def test_model_states_of_a_70b_full_fine_tune(fig):
    n = llama70_counts()["total"]
    assert n == 70_553_706_496  # the published config, counted by hand
    assert fig["llama70_params_b"] == pytest.approx(n / 1e9)
    states = 16 * n  # bf16 weights and gradients, fp32 master weights and two AdamW moments
    assert fig["train_bytes_per_param"] == 16
    assert fig["llama70_full_ft_states_tb"] == pytest.approx(states / 1e12, rel=1e-6)
    # An H100 reports 81,559 MiB; what a model may use is a few percent less, never more.
    reported = 81559 * 2**20
    assert 0.9 * reported <= fig["h100_usable_gb"] * 1e9 <= reported
    assert (
        math.ceil(states / reported)
        <= fig["llama70_full_ft_min_gpus"]
        <= math.ceil(states / (0.9 * reported))
    )


def test_bytes_one_token_reads_at_int4(fig):
    """The decoder's matrices quantized, head and norms in bf16, one embedding row, the KV cache."""
    c = llama70_counts()
    bits = 4 + 16 / 128  # int4, one fp16 scale per group of 128
    kv = (
        2 * L70["layers"] * L70["kv_heads"] * L70["head_dim"] * 2 * 4096
    )  # K and V, bf16, 4096 tokens
    row = L70["hidden"] * 2
    read = c["matrices"] * bits / 8 + (c["head"] + c["norms"]) * 2 + row + kv
    assert fig["llama70_int4_matrices_gb"] == pytest.approx(
        c["matrices"] * bits / 8 / 1e9, rel=1e-6
    )
    assert fig["llama70_kv_4k_gb"] == pytest.approx(kv / 1e9, rel=1e-6)
    assert fig["llama70_int4_4k_read_gb"] == pytest.approx(read / 1e9, rel=1e-3)
    assert "one row" in fig["llama70_embedding_read_words"]
    # two RTX 3090s in turn: one card's 936 GB/s over the whole model
    assert fig["llama70_int4_two_3090_tok_s"] == pytest.approx(936e9 / read, rel=1e-3)


def test_hand_over_between_cards_and_tensor_parallel_talk(fig):
    handover = L70["hidden"] * 2  # one bf16 hidden state per token
    pcie4 = 16e9 * 128 / 130 / 8 * 16  # 16 GT/s, 128b/130b, 16 lanes, bytes/s per direction
    assert fig["llama70_handover_bytes"] == handover == 16_384
    assert fig["pcie4_x16_gbs"] == pytest.approx(pcie4 / 1e9)
    assert fig["tp_allreduces_per_token"] == 2 * L70["layers"]
    assert fig["tp_talk_pcie4_us"] == pytest.approx(
        2 * L70["layers"] * handover / pcie4 * 1e6, rel=1e-6
    )
    assert fig["tp_allreduce_mb"] == pytest.approx(8 * 4096 * L70["hidden"] * 2 / 1e6)
    assert fig["tp_allreduces_per_step"] == 4 * L70["layers"]


def test_a_7b_models_gradients_over_two_cards(fig):
    n = llama7_params()
    assert n == 6_738_415_616
    lora = L7["layers"] * 16 * (4 * (2 * L7["hidden"]) + 3 * (L7["hidden"] + L7["ffn"]))
    pcie4, nvlink = 16e9 * 128 / 130 / 8 * 16, 112.5e9 / 2
    assert fig["lora_params_m"] == pytest.approx(lora / 1e6)
    assert fig["llama7_grad_pcie4_s"] == pytest.approx(2 * n / pcie4, rel=1e-6)  # factor 1 for two
    assert fig["llama7_grad_nvlink_s"] == pytest.approx(2 * n / nvlink, rel=1e-6)
    assert fig["lora_pcie4_ms"] == pytest.approx(4 * lora / pcie4 * 1e3, rel=1e-6)
    assert fig["llama7_full_finetune_gb"] == pytest.approx(16 * n / 1e9, rel=1e-6)
    assert fig["llama7_full_ft_two_3090_fit"] == "fits in no split"


def test_links(fig):
    assert fig["allreduce_factor_8"] == pytest.approx(2 * 7 / 8)
    assert fig["pcie3_lane_gbs"] == pytest.approx(8 * 128 / 130 / 8)
    assert fig["pcie5_x16_gbs"] == pytest.approx(32 * 128 / 130 / 8 * 16)
    for gen, rate in ((3, 8), (4, 16), (5, 32)):
        assert fig[f"pcie{gen}_gt_s"] == pytest.approx(rate)
    assert fig["h100_nvlink_gbs"] == pytest.approx(900 / 2)
    assert fig["ib_ndr_gbs"] == pytest.approx(400 / 8)
    assert fig["h100_nvlink_vs_ndr"] == pytest.approx(9)
    assert fig["tinygrad_share_of_pcie4"] == pytest.approx(24.5413e9 / (16e9 * 128 / 130 / 8 * 16))
    # no GeForce card of the RTX 40 or 50 series has NVLink (the page says so in words)
    assert fig["geforce_with_nvlink"] == "RTX 3090"


def test_the_moe_model_reads_less_per_token_than_the_dense_one(fig):
    assert fig["r1_active_b"] == pytest.approx(37, abs=1)  # DeepSeek: "37B activated"
    assert fig["r1_vs_dense_read"] < 1
    assert fig["r1_int4_gb"] > fig["article_vram_gb"] + fig["article_ram_gb"]


def test_a_constant_of_gpulab_moves_the_page(monkeypatch, cache):
    """int4 with a wider scale: the page's bytes per token change with it, untyped."""
    before = page_figures.render(page_figures.ROOT / PAGES[0])
    cache.cache_clear()
    int4 = formats.WEIGHT_FORMATS["int4"]
    monkeypatch.setitem(formats.WEIGHT_FORMATS, "int4", dataclasses.replace(int4, scale_bits=32))
    after = page_figures.render(page_figures.ROOT / PAGES[0])
    assert before != after
    fig = figures_ch07.figures()
    assert fig["int4_bits"] == pytest.approx(4 + 32 / 128)
    assert f"{fig['llama70_int4_4k_read_gb']:.1f} GB per token" in after
