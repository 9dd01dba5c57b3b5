"""One name per quantity (tools/figure_names.py), every figure used, and its default format."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab.course.figure_formats import FORMATS
from gpulab.course.figures import all_figures
from tools.checks import figure_names

ROOT = Path(__file__).resolve().parents[2]
FIG = re.compile(r"\{fig\}`([a-z][a-z0-9_]*)")


@pytest.fixture(scope="module")
def figures() -> dict:
    return all_figures()


def test_every_name_is_spelt_the_one_way(figures):
    assert figure_names.misspelt(figures) == {}


def test_no_two_names_give_one_value_unless_they_only_coincide(figures):
    assert figure_names.shared_values(figures) == []


def test_each_listed_coincidence_is_two_figures_with_one_value(figures):
    for pair, why in figure_names.COINCIDENCES.items():
        a, b = sorted(pair)
        assert a in figures and b in figures, f"{a}, {b}: not both figures ({why})"
        assert float(figures[a]) == float(figures[b]), f"{a}, {b} no longer coincide ({why})"


@pytest.mark.parametrize(
    "name, canonical",
    [
        # the two names 92e49f3 gave one bound (76.28 in chapter 3, 74.80 in chapter 4)
        ("llama2_fp16_rtx4090_bound_tok_s", "llama7_fp16_rtx4090_bound_tok_s"),
        ("rtx4090_llama2_7b_fp16_bound_tok_s", "llama7_fp16_rtx4090_bound_tok_s"),
        ("llama3_70b_hidden", "llama70_hidden"),
        ("m3_ultra_bandwidth_gbs", "m3ultra_gbs"),
        ("m3ultra_bw_gbs", "m3ultra_gbs"),
        ("deepseek_r1_q4km_gb", "r1_q4km_gb"),
        ("h100_nvlink_per_direction_gbs", "h100_nvlink_gbs"),
        ("llama70_q4km_gb", "llama70_q4km_gb"),
        ("llama32_1b_vocab", "llama32_1b_vocab"),  # Llama-3.2-1B is not Llama-2-7B
    ],
)
def test_the_spelling_gives_one_quantity_one_name(name, canonical):
    assert figure_names.canonical(name) == canonical


def test_the_two_bounds_of_92e49f3_meet_under_one_name():
    """The values 92e49f3 gave them, under their names then: one name, two values, which
    all_figures refuses."""
    then = {"llama2_fp16_rtx4090_bound_tok_s": 76.28, "rtx4090_llama2_7b_fp16_bound_tok_s": 74.80}
    spelt = {figure_names.canonical(n) for n in then}
    assert spelt == {"llama7_fp16_rtx4090_bound_tok_s"}


def test_a_value_shared_by_two_names_is_found():
    shared = figure_names.shared_values(
        {"a_gb": 41.8177, "b_gb": 41.8177, "c": 4096, "d": 4096, "e": 2.0, "f": 2.0}
    )
    assert shared == [(41.8177, ["a_gb", "b_gb"])]


def _read_by_notebooks(names) -> set[str]:
    texts = [
        p.read_text(encoding="utf-8")
        for p in [*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("labs/*.ipynb")]
    ]
    return {n for n in names if any(re.search(rf"""["']{n}\\?["']""", t) for t in texts)}


# Figures a loop writes for every row of a table or every precision of a card, whose other
# rows or precisions the pages paste.
ROWS_NOT_PASTED = {
    "a100_fp32_tflops",
    "a100_int8_tflops",
    "a100_tf32_tflops",
    "h100_int8_tflops",
    "h100_tf32_tflops",
    "rtx3090_fp32_tflops",
    "rtx4090_int8_tflops",
    "rtx5090_fp32_tflops",
    "t4_fp32_tflops",
    "t4_int8_tflops",
    "batch_b1_ctx",
    "batch_b1_kv_gb",
    "batch_full2048_ctx",
    "batch_full8192_ctx",
    "batch_full8192_read_gb",
    "claim42_tok_s",
    "claim43_tok_s",
    "claim44_tok_s",
    "claim50_tok_s",
    "claim56_tok_s",
    "llama70_q4km_rtx4090_bound_tok_s",
    "llama70_q4km_rtx4090_claim_share",
    "llama70_q4km_rtx4090_fits",
    "llama7_fp16_m3ultra_fits",
    "llama7_fp16_rx7900xtx_fits",
    "rtx4090_article_vs_rtx4090",
    "rtx4090_bw_vs_rtx4090",
}


def test_every_figure_is_pasted_by_a_page_or_read_by_a_notebook(figures):
    pasted = {m for p in (ROOT / "book").rglob("*.md") for m in FIG.findall(p.read_text("utf-8"))}
    unused = set(figures) - pasted - _read_by_notebooks(figures) - ROWS_NOT_PASTED
    assert unused == set(), "a figure nobody shows: remove it, or paste it"
    assert ROWS_NOT_PASTED <= set(figures) - pasted, "a listed row is pasted now: unlist it"


def test_a_default_format_names_a_figure_once(figures):
    names = [n for group in FORMATS.values() for n in group]
    assert len(names) == len(set(names)), "a figure with two default formats"
    assert set(names) <= set(figures), "a default format for a figure that is gone"
    # a default format applies to its figure's value
    for spec, group in FORMATS.items():
        for name in group:
            format(float(figures[name]) if spec[-1] in "eEfFgG%" else figures[name], spec)
