"""Every notebook and lab solution runs top to bottom, within its CPU-time budget."""

from __future__ import annotations

import html
import json
import re

import pytest

from tests.notebooks.conftest import execute_once
from tools import editions
from tools.execution import runs

NOTEBOOKS = runs.discover()


def test_notebooks_are_found():
    """Discovery finds the chapter notebooks and the lab solutions, not the learner copies."""
    names = [p.relative_to(runs.ROOT).as_posix() for p in NOTEBOOKS]
    assert "notebooks/00_check_your_setup.ipynb" in names
    assert "labs/00_first_kernel_lab.ipynb" in names
    assert not any("/learner/" in n for n in names)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.relative_to(runs.ROOT).as_posix())
def test_notebook_runs(notebook, run):
    """The notebook executes without error; a failure names the notebook and the cell."""
    result = execute_once(notebook)
    assert result.ok, f"{result.notebook} failed in {result.error}"
    assert runs.executed_path(notebook, run).exists()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.relative_to(runs.ROOT).as_posix())
def test_notebook_within_cpu_budget(notebook, run):
    """In quick mode each notebook's kernel stays within its CPU-time budget.

    CPU time, not wall time: on a busy machine a notebook waits longer for the same work, and
    a wall-clock budget would fail a correct course (its wall time is in the report, beside
    the 60 s it should take on an idle 2-core machine).
    """
    result = execute_once(notebook)
    if run.cpu_budget_s is None:
        pytest.skip("full-size runs have no time budget")
    assert result.cpu_seconds is not None, "the kernel's CPU time could not be read"
    assert not result.over_cpu_budget, (
        f"{result.notebook} used {result.cpu_seconds:.1f} CPU seconds, over its "
        f"{run.cpu_budget_s:.0f} s budget ({result.seconds:.1f} s of wall time)"
    )


COMPUTED = {
    "en": re.compile(r"\*\*Computed in this page:\*\* (.+?); "),
    "zh_CN": re.compile(r"\*\*本页计算：\*\* (.+?)；"),
}
ENTRY = re.compile(r'<a id="claim-(\d+)"></a>')  # each entry's anchor, which opens it


def _computed_figures(markdown: str, lang: str) -> dict[str, list[str]]:
    """Each entry's computed headline as its sorted figures, by the entry's claim id."""
    pieces = ENTRY.split(markdown)  # text before the first entry, then (id, entry) pairs
    found = {}
    for cid, entry in zip(pieces[1::2], pieces[2::2], strict=True):
        if line := COMPUTED[lang].search(entry):
            found[cid] = sorted(re.findall(r"\d+(?:[.,]\d+)*", line.group(1)))
    return found


def _markdown_outputs(path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return html.unescape(
        "\n".join(
            "".join(out.get("data", {}).get("text/markdown", ""))
            for cell in cells
            for out in cell.get("outputs", [])
        )
    )


@pytest.mark.parametrize(
    ("notebook", "lang"),
    editions.per_language_runs(),
    ids=lambda v: v if isinstance(v, str) else v.relative_to(runs.ROOT).as_posix(),
)
def test_a_notebook_with_words_per_edition_runs_in_each_language(notebook, lang, run):
    """The fact-check runs once more for the Chinese site: its entries are in Chinese, and
    each computed headline shows the very figures the English page shows."""
    assert execute_once(notebook).ok
    result = execute_once(notebook, lang)
    assert result.ok, f"{result.notebook} [{lang}] failed in {result.error}"
    english = _markdown_outputs(runs.executed_path(notebook, run))
    translated = _markdown_outputs(runs.executed_path(notebook, run, lang))
    assert re.search(r"[\u4e00-\u9fff]{20}", translated)
    # each headline's figures, by derivation: the edition words (and orders) them, the numbers
    # are the same
    computed = _computed_figures(english, "en")
    assert len(computed) > 50
    assert _computed_figures(translated, lang) == computed


# What only a maintainer can act on: a command to run a benchmark, a path inside the source
# tree, a library's warning. A reader's page says what a GPU would show instead.
MAINTAINER_TEXT = (
    "python benchmarks/",
    "src/gpulab/data",
    "Warning:",
    "UserWarning",
    "FutureWarning",
    "DeprecationWarning",
    "[transformers]",
)


def _output_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")))
        for mime in ("text/plain", "text/markdown", "text/html"):
            parts.append("".join(out.get("data", {}).get(mime, "")))
    return "\n".join(parts)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.relative_to(runs.ROOT).as_posix())
def test_no_page_prints_a_maintainer_instruction_or_a_warning(notebook, run):
    """The executed notebook's outputs hold no benchmark command, source path or warning."""
    result = execute_once(notebook)
    assert result.ok

    cells = json.loads(runs.executed_path(notebook, run).read_text(encoding="utf-8"))["cells"]
    found = [
        f"cell {i}: {text!r}"
        for i, c in enumerate(cells)
        for text in MAINTAINER_TEXT
        if text in _output_text(c)
    ]
    assert found == []
