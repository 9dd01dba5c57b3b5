"""Chapter 1's figures (gpulab.course.figures_ch01): the arithmetic, its inputs, and the page.

The page book/01_why_gpus_are_fast.md pastes every figure from `figures()`; these tests check
the values against gpulab's tables and their identities, that every reference of the page
resolves, and that neither the page nor the chapter notebook's prose types a figure by hand.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from gpulab import specs
from gpulab.core.errors import GpulabConfigError
from gpulab.course import derivations, factcheck, figures_ch01
from tools.checks import page_figures, typed_figures

ROOT = Path(__file__).resolve().parents[2]
PAGE = "book/01_why_gpus_are_fast.md"
NOTEBOOK = "notebooks/01_why_gpus_are_fast.ipynb"


@pytest.fixture(scope="module")
def fig():
    return figures_ch01.figures()


@pytest.fixture(scope="module")
def cells():
    return {c["id"]: c for c in json.loads((ROOT / NOTEBOOK).read_text(encoding="utf-8"))["cells"]}


# ---- the i9-13900K: the all-core turbo is the headline


def test_all_core_turbo_peak_is_cores_times_clock_times_flops_per_cycle(fig):
    # 8 P-cores x 32 FLOP/cycle x 5.5 GHz + 16 E-cores x 16 FLOP/cycle x 4.3 GHz
    assert figures_ch01.cpu_peak_flops() == pytest.approx((8 * 32 * 5.5 + 16 * 16 * 4.3) * 1e9)
    assert fig["cpu_allcore_tflops"] == pytest.approx(2.5088)
    assert figures_ch01.HEADLINE_CLOCKS == "all-core turbo"
    assert f"{fig['fp32_ratio_allcore']:.0f}" == "33"
    assert f"{fig['bf16_ratio_allcore']:.0f}" == "66"


def test_the_range_ends_are_the_cpu_tables_base_and_turbo_peaks():
    cpu = specs.get_cpu("Core i9-13900K")
    assert figures_ch01.cpu_peak_flops("base") == pytest.approx(cpu.peak_fp32_flops("base"))
    assert figures_ch01.cpu_peak_flops("max turbo") == pytest.approx(cpu.peak_fp32_flops("turbo"))


def test_all_core_clocks_lie_within_each_groups_range():
    for group in specs.get_cpu("Core i9-13900K").core_groups:
        assert group.base_ghz < figures_ch01.I13900K_ALL_CORE_GHZ[group.name] <= group.turbo_ghz


def test_the_headline_ratio_lies_between_the_ratios_at_the_range_ends(fig):
    for dtype in ("fp32", "bf16"):
        assert (
            fig[f"{dtype}_ratio_maxturbo"]
            < fig[f"{dtype}_ratio_allcore"]
            < fig[f"{dtype}_ratio_base"]
        )


def test_the_peak_derivation_reads_as_the_page_states_it():
    line = figures_ch01.cpu_peak_arithmetic("all-core turbo")
    assert "8 P-cores x 32 FLOP/cycle x 5.5 GHz + 16 E-cores x 16 FLOP/cycle x 4.3 GHz" in line
    assert line.endswith("= 2.51 TFLOP/s")


def test_a_clock_setting_is_checked():
    with pytest.raises(GpulabConfigError, match="clock setting"):
        figures_ch01.cpu_peak_flops("turbo")


@pytest.mark.parametrize("kind", ["P-cores", "E-cores"])
def test_simd_flops_per_cycle_match_the_cpu_table(kind):
    group = {g.name: g for g in specs.get_cpu("Core i9-13900K").core_groups}[kind]
    assert figures_ch01.simd_flops_per_cycle(kind) == group.fp32_flops_per_cycle


def test_avx512_doubles_the_avx2_rate():
    assert figures_ch01.simd_flops_per_cycle("AVX-512") == 2 * figures_ch01.simd_flops_per_cycle(
        "P-cores"
    )


# ---- the other inputs agree with gpulab's tables and the fact-check's constants


def test_constants_shared_with_the_fact_check_agree(fig):
    assert fig["ddr5_4800_gbs"] == pytest.approx(derivations.DDR5_4800_DUAL_GBS)
    rows, features = figures_ch01.ARTICLE_LINEAR["rows"], figures_ch01.ARTICLE_LINEAR["features"]
    assert 2 * rows * features * features == derivations.LINEAR_BENCH_FLOP
    assert fig["ddr5_5600_gbs"] == pytest.approx(
        specs.get_cpu("Core i9-13900K").memory_bandwidth_gbs
    )


def test_derived_peaks_and_bandwidths_match_the_published_ones(fig):
    assert fig["rtx4090_fp32_derived_tflops"] == pytest.approx(fig["rtx4090_fp32_tflops"], rel=1e-3)
    assert fig["rtx4090_fp16acc_derived_tflops"] == pytest.approx(
        specs.get_gpu("RTX 4090").peak_tflops["fp16_fp16acc"], rel=1e-3
    )
    assert fig["rtx3060_bf16_derived_tflops"] == pytest.approx(fig["rtx3060_bf16_tflops"], rel=2e-3)
    assert fig["rtx4090_derived_gbs"] == fig["rtx4090_gbs"]


@pytest.mark.parametrize("gpu", ["RTX 4090", "RTX 3060 12GB"])
def test_tensor_core_fmas_per_clock_are_whole(gpu):
    fmas = figures_ch01.tensor_fmas_per_clock(gpu)
    assert fmas == pytest.approx(round(fmas), rel=2e-3)


def test_tensor_cores_and_sms_are_consistent(fig):
    g = specs.get_gpu("RTX 4090")
    assert g.sms == fig["rtx4090_sms"]
    assert g.tensor_cores % g.sms == 0
    assert g.cuda_cores % (g.sms * figures_ch01.WARP_THREADS) == 0
    assert fig["rtx4090_sm_tc_fmas"] == fig["rtx4090_tc_per_sm"] * fig["rtx4090_tc_fmas"]


def test_fp4_figures(fig):
    assert figures_ch01.RTX5090_SPARSE_FP4_TOPS == 2 * fig["rtx5090_fp4_tflops"]  # 2:4 sparsity
    assert (fig["nvfp4_bpw"], fig["mxfp4_bpw"]) == (4.5, 4.25)
    assert fig["b200_fp4_over_fp16"] == 4 and fig["b200_fp4_over_fp8"] == 2


def test_bandwidth_ratios(fig):
    assert fig["article_bw_ratio"] == pytest.approx(12.6)
    assert f"{fig['rtx4090_vs_ddr5_ratio']:.1f}x" == f"{1008 / 89.6:.1f}x"
    assert (fig["server_over_desktop_lo"], fig["server_over_desktop_hi"]) == (4.0, 6.0)


def test_every_value_is_a_figure_a_page_can_paste(fig):
    for key, value in fig.items():
        assert page_figures.NAME.fullmatch(key), key
        assert isinstance(value, (int, float, str)) and not isinstance(value, bool), (key, value)


# ---- the page


def test_every_figure_reference_of_the_page_resolves_and_every_figure_is_used(fig):
    refs = page_figures.parse((ROOT / PAGE).read_text(encoding="utf-8"), PAGE)
    for ref in refs:
        page_figures.resolve_ref(ref)  # raises FigureError with the reference and why
    assert {r.name for r in refs} == set(fig), "figures() computes a figure the page does not paste"


def test_the_page_types_no_figure():
    found = typed_figures.count()[PAGE]
    assert found == [], [f"{f.line}: {f.text}" for f in found]


def test_the_page_cites_chapter_one_claims_that_exist():
    text = (ROOT / PAGE).read_text(encoding="utf-8")
    ids = {
        int(i)
        for group in re.findall(r"\{(?:claim|verdict)\}`([\d,]+)`", text)
        for i in group.split(",")
    }
    claims = {c.id: c for c in factcheck.load()}
    assert ids and ids <= set(claims)
    assert {claims[i].chapter for i in ids} == {1}


def test_the_page_leads_with_the_all_core_turbo_ratio():
    rendered = page_figures.render(ROOT / PAGE)
    assert "about 33 for FP32 compute" in rendered
    assert "32–62" not in rendered and "32 to 62 (FP32" not in rendered


def test_the_page_says_when_a_pageable_copy_returns():
    text = (ROOT / PAGE).read_text(encoding="utf-8")
    assert "returns only when the copy is done" not in text
    assert "api-sync-behavior" in text and "staging memory" in text


# ---- the notebook: its prose figures are printed by code


def test_the_notebooks_markdown_types_no_figure_but_its_time():
    found = [f for f in typed_figures.count()[NOTEBOOK] if not f.context.startswith("**Time:**")]
    assert found == [], [f"{f.line}: {f.text}" for f in found]


def _run(source: str, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(source, namespace)  # the notebook's own cell
    return out.getvalue()


def test_the_notebooks_ddr5_arithmetic_prints_the_figure_the_page_pastes(cells, fig):
    """Notebook 01 works out "channels x 8 B x MT/s" itself; its line states the page's figure."""
    source = "".join(cells["ddr5-bandwidth"]["source"])
    assert "figures_ch01" not in source and "memory_bandwidth_gbs" not in source  # by hand
    namespace = {"specs": specs}
    printed = _run(source, namespace)
    # the i9-13900K's two channels of DDR5-5600, 8 bytes a transfer (Intel ARK, the CPU table)
    assert namespace["ddr5_gbs"] == pytest.approx(2 * 8 * 5600 / 1e3)
    assert printed.strip().endswith(f"= {fig['ddr5_5600_gbs']:.1f} GB/s")


# ---- the page's pictures (gpulab.ui.pictures_ch01)


@pytest.fixture(scope="module")
def pictures():
    import matplotlib

    matplotlib.use("Agg")
    from gpulab.ui import pictures_ch01

    drawn = {name: draw() for name, draw in pictures_ch01.PICTURES.items()}
    yield drawn
    import matplotlib.pyplot as plt

    for figure in drawn.values():
        plt.close(figure)


def test_the_page_shows_each_picture_with_alt_text(pictures):
    text = (ROOT / PAGE).read_text(encoding="utf-8")
    for name in pictures:
        block = re.search(rf"```{{figure}} /_pictures/{name}\.svg\n(.*?)\n```", text, re.S)
        assert block, name
        alt = re.search(r"^:alt: (.+)$", block.group(1), re.M)
        assert alt and len(alt.group(1).split()) >= 12, name


def test_the_threads_picture_draws_every_sm_and_every_lane_of_one(pictures):
    from matplotlib.patches import Rectangle

    chip, sm = pictures["ch01-threads"].axes
    g = specs.get_gpu("RTX 4090")
    # one square per SM on the chip: 128 (hmc-tech's spec table)
    assert sum(isinstance(p, Rectangle) for p in chip.patches) == g.sms == 128
    lanes = [p for p in sm.patches if isinstance(p, Rectangle) and p.get_width() == 0.8]
    # 16,384 lanes / 128 SMs: 128 lanes per SM, drawn as warps of 32
    assert len(lanes) == g.cuda_cores // g.sms == 4 * figures_ch01.WARP_THREADS
    assert "16,384 FP32 lanes" in pictures["ch01-threads"]._suptitle.get_text()


def test_the_roofline_picture_draws_the_spec_tables_roofs(pictures):
    from gpulab.ui import pictures_ch01

    roofs = pictures_ch01.roofline_lines()
    # the spec sheets by hand: 165.2 and 82.6 TFLOP/s, 1008 GB/s; the CPU's all-core peak and
    # two channels of DDR5-5600
    cpu_peak = (8 * 32 * 5.5 + 16 * 16 * 4.3) * 1e9
    expected = [(165.2e12, 1008e9), (82.6e12, 1008e9), (cpu_peak, 89.6e9)]
    for got, want in zip(sorted(roofs.values()), sorted(expected), strict=True):
        assert got == pytest.approx(want)
    ax = pictures["ch01-roofline"].axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert "FLOP per byte" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel()
    assert ax.get_title() and ax.get_legend() is not None
    # each roof is flat at its peak right of its ridge point
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]  # not marks
    for line, (peak, bandwidth) in zip(curves, roofs.values(), strict=True):
        x, y = line.get_data()
        assert y[-1] == pytest.approx(peak / 1e12)
        assert y[0] == pytest.approx(x[0] * bandwidth / 1e12)


def test_claims_and_verdicts_appear_only_in_what_the_articles_said():
    text = (ROOT / PAGE).read_text(encoding="utf-8")
    section = text.index("## What the articles said")
    end = text.find("\n## ", section + 1)
    outside = text[:section] + (text[end:] if end != -1 else "")
    assert not re.search(r"\{(?:claim|verdict)\}", outside)
