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
    assert g.tensor_cores % figures_ch01.RTX4090_SMS == 0
    assert g.cuda_cores % (figures_ch01.RTX4090_SMS * figures_ch01.WARP_THREADS) == 0
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
        exec(source, namespace)  # the notebook's own cells
    return out.getvalue()


def test_the_ddr5_verdict_prints_the_ratios_the_cell_above_prints(cells):
    """The verdict is printed output, read in JupyterLab as on the site, with the ratios of c11."""
    namespace = {
        "figures_ch01": figures_ch01,
        "specs": specs,
        "rtx": specs.get_gpu("RTX 4090"),
        "article": {c.id: c for c in factcheck.load()},
    }
    printed = _run("".join(cells["c11"]["source"]), namespace)
    verdict = _run("".join(cells["c11b"]["source"]), namespace)
    desktop = re.findall(r"= +([\d.]+)x", printed)[:2]
    assert len(desktop) == 2
    for ratio in desktop:
        assert f"{ratio}x" in verdict
    assert namespace["article"][32].claim_en in verdict
    assert "remove-input" not in cells["c11b"]["metadata"].get("tags", [])
    assert "show_markdown" not in "".join(cells["c11b"]["source"])
