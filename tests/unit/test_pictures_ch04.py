"""Chapter 4's pictures: they draw, say what they show, and their numbers are the basis's, the
article's and a count by hand."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gpulab.course.claims_speed import ARTICLE_DECODE_TOK_S  # noqa: E402
from gpulab.estimate import basis  # noqa: E402
from gpulab.ui import pictures_ch04  # noqa: E402

# Llama-2-7B's config.json: 32 heads of 128 (a published input, typed on purpose)
HEADS, HEAD_DIM = 32, 128


def test_the_three_pictures_draw_with_titles_and_labelled_axes():
    assert set(pictures_ch04.PICTURES) == {
        "ch04-decode-bounds",
        "ch04-attention-memory",
        "ch04-triton-grid",
    }
    for name, draw in pictures_ch04.PICTURES.items():
        fig = draw()
        try:
            ax = fig.axes[0]
            assert ax.get_title(), name
            assert ax.get_xlabel(), name
            assert ax.get_legend() is not None, name
        finally:
            plt.close(fig)


def test_the_article_rates_are_the_fact_checks():
    rates = {card: rate for card, _, rate in pictures_ch04.ARTICLE_CARDS}
    assert rates == {
        "RTX 4090": ARTICLE_DECODE_TOK_S["rtx4090"],
        "AMD Radeon RX 7900 XTX": ARTICLE_DECODE_TOK_S["rx7900xtx"],
        "Apple M3 Ultra": ARTICLE_DECODE_TOK_S["m3_ultra"],
    }


def test_the_bars_are_the_basis_bounds_and_the_article_is_below_each():
    bars = pictures_ch04.backend_bars()
    assert [b.card for b in bars] == ["RTX 4090", "AMD Radeon RX 7900 XTX", "Apple M3 Ultra"]
    for bar in bars:
        assert bar.fp16_bound == pytest.approx(basis.bound_tok_s("Llama-2-7B", "fp16", bar.card))
        assert bar.article < bar.fp16_bound < bar.q4km_bound
    fig = pictures_ch04.decode_bounds()
    try:  # the drawn bars carry the values: three series of three cards
        heights = [p.get_height() for p in fig.axes[0].patches]
        assert len(heights) == 9
        assert 60 in heights and 38 in heights
    finally:
        plt.close(fig)


@pytest.mark.parametrize("seq", [512, 8192, 131_072])
def test_attention_bytes_counted_by_hand(seq):
    naive, fused = pictures_ch04.attention_bytes(seq)
    assert naive == 2 * HEADS * seq * seq * 2  # scores and probabilities, fp16
    assert fused == HEADS * seq * (HEAD_DIM * 2 + 4)  # the output, an fp32 statistic per row
    # doubling the sequence: four times the written-out bytes, twice the fused ones
    naive2, fused2 = pictures_ch04.attention_bytes(2 * seq)
    assert naive2 == 4 * naive and fused2 == 2 * fused


@pytest.mark.parametrize(
    "n, block, lanes",
    [
        (40, 16, [(16, 0), (16, 0), (8, 8)]),
        (32, 16, [(16, 0), (16, 0)]),
        (1, 1024, [(1, 1023)]),
        (1025, 1024, [(1024, 0), (1, 1023)]),
    ],
)
def test_triton_lanes_cut_n_elements_into_blocks_and_mask_the_tail(n, block, lanes):
    assert pictures_ch04.triton_lanes(n, block) == lanes


def test_the_grid_diagram_draws_one_row_per_program_and_marks_n():
    fig = pictures_ch04.triton_grid_for(40, 16)
    try:
        ax = fig.axes[0]
        assert "3 programs" in ax.get_title()
        assert len(ax.patches) == 3 * 16  # every lane, masked ones included
        assert any(t.get_text() == "n = 40" for t in ax.texts)
    finally:
        plt.close(fig)
