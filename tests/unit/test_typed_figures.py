"""No figure is hand-typed in the pages (tools/checks/typed_figures.py); its detector, by cases."""

from __future__ import annotations

import pytest

from tools.checks import typed_figures as tf


def test_no_page_types_a_figure():
    found = {path: figs for path, figs in tf.count().items() if figs}
    assert found == {}, "typed figures (paste them from code with {fig}): " + "; ".join(
        f"{f.path}:{f.line}: {f.text}" for figs in found.values() for f in figs
    )


def test_the_check_reads_every_page_notebook_and_the_fact_check():
    found = tf.count()
    assert "book/02_vram.md" in found and "labs/05_fix_slow_training_loop_lab.ipynb" in found
    assert "src/gpulab/data/fact_check.json" in found and len(found) > 25


@pytest.mark.parametrize(
    "text, figures",
    [
        ("Llama-3-70B needs 42.0 GB at 4.84 bits per weight", ["42.0 GB", "4.84 bits per weight"]),
        (
            "the RTX 4090 reads 1,008 GB/s, 11.2x the CPU, 30–50% slower",
            ["1,008 GB/s", "11.2x", "30–50%"],
        ),
        ("$70 \\times 10^9 \\times 2 = 140$ GB", ["140$ GB"]),
        ("an A100 80GB, an RTX 3060 12GB, a 70B model, PCIe 4.0 x16, CUDA 12.6, in 2024", []),
        ("pasted {fig}`llama70_q4km_gb:.1f` GB and `24 GB` in code", []),
        (
            '"from 200+ MB to 700+ MB" ([pytorch#28113](https://github.com/pytorch/pytorch/issues/28113))',
            [],
        ),
        ("a link [24 GB](https://example.com/24 GB) to a page", ["24 GB"]),
    ],
)
def test_the_detector_counts_figures_and_spares_names_code_roles_and_cited_quotes(text, figures):
    assert [f.text for f in tf.figures_in_text(text, "x.md")] == figures


@pytest.mark.parametrize(
    "text, figures",
    [
        ("an FP16 weight is 2 bytes and an FMA 2 FLOPs", []),
        ("an FP16 weight is 3 bytes, 2 FLOPs per 4 bytes", ["3 bytes"]),
        ("the card has 2 GB", ["2 GB"]),
    ],
)
def test_definitions_are_typed_and_only_they_are_spared(text, figures):
    assert [f.text for f in tf.figures_in_text(text, "x.md")] == figures


def test_code_blocks_are_not_prose_but_directives_are():
    text = "```python\nx = 24  # 24 GB\n```\n\n```{note}\nIt takes 24 GB.\n```\n"
    assert [f.text for f in tf.figures_in_text(text, "x.md")] == ["24 GB"]


def test_prose_after_a_directive_still_counts():
    """The bare fence that closes a directive is not the start of a code block."""
    text = "```{note}\nIt takes 24 GB.\n```\n\nThen 48 GB.\n\n```\nraw 96 GB\n```\nAnd 12 GB.\n"
    assert [f.text for f in tf.figures_in_text(text, "x.md")] == ["24 GB", "48 GB", "12 GB"]


@pytest.mark.parametrize(
    "text, path, figures",
    [
        ("**Time:** 25 minutes. **Hardware:** a CPU.", "notebooks/x.ipynb", []),
        ("**Time:** 25 minutes, of which 2 GB of downloads.", "notebooks/x.ipynb", ["2 GB"]),
        ("| 0:10 | lab | 20 min |", "book/workshop/instructor_guide.md", []),
        ("| 0:10 | lab | 20 min |", "book/02_vram.md", ["20 min"]),
        ("it takes 10 minutes to load", "notebooks/x.ipynb", ["10 minutes"]),
    ],
)
def test_only_the_courses_own_timings_are_allowed(text, path, figures):
    assert [f.text for f in tf.figures_in_text(text, path)] == figures
