"""One verdict per claim, said once, and notebooks that a Jupyter reader can read raw.

A page states a claim's verdict only through {verdict}`N`, which renders the registry's
(gpulab.course.factcheck); a verdict word typed next to a claim reference, or in a table's
verdict column, could contradict it, so it fails here. Notebooks are opened by JupyterLab
and Colab, which render CommonMark and show a MyST role or directive as raw text.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.helpers import need_module

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.execution import runs  # noqa: E402

PAGES = sorted((ROOT / "book").rglob("*.md"))
NOTEBOOKS = [*runs.discover(), *runs.learner_copies()]
CLAIM_ROLE = re.compile(r"\{(?:claim|verdict)\}`[^`]*`")
ANY_ROLE = re.compile(r"\{[\w:.-]+\}`[^`]*`")
INLINE_CODE = re.compile(r"`[^`]*`")
# The verdicts of the rubric and the words pages used to grade claims with before it.
VERDICT_WORDS = re.compile(
    r"\b(correct|incorrect|wrong|misleading|not checkable|uncheckable|"
    r"plausible|implausible|impossible)\b",
    re.IGNORECASE,
)
PLAIN_CLAIM_REF = re.compile(r"\bclaims? \d+|\(id \d+\)", re.IGNORECASE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def _units(text: str) -> list[str]:
    """The paragraphs of a page's prose, and each table row on its own."""
    units = []
    for para in re.split(r"\n\s*\n", FENCE.sub("", text)):
        units += para.splitlines() if para.lstrip().startswith("|") else [para]
    return units


def verdict_problems(text: str) -> list[str]:
    """Places where a text states a verdict or cites a claim other than through the roles."""
    problems = []
    for unit in _units(text):
        prose = INLINE_CODE.sub(" ", ANY_ROLE.sub(" ", unit))
        for ref in PLAIN_CLAIM_REF.findall(prose):
            problems.append(
                f"a claim cited as plain text ({ref!r}): use {{claim}}`N`: {unit[:120]}"
            )
        if CLAIM_ROLE.search(unit) or PLAIN_CLAIM_REF.search(prose):
            for word in VERDICT_WORDS.findall(prose):
                problems.append(f"verdict word {word!r} beside a claim: {unit[:120]}")
    problems += _verdict_column_problems(text)
    return problems


def _verdict_column_problems(text: str) -> list[str]:
    """Every cell of a table's "verdict" column is one or more {verdict} roles, nothing else."""
    problems, column = [], None
    for line in text.splitlines():
        cells = (
            [c.strip() for c in line.strip().strip("|").split("|")]
            if line.lstrip().startswith("|")
            else None
        )
        if cells is None:
            column = None
            continue
        if column is None:
            lowered = [c.lower() for c in cells]
            column = lowered.index("verdict") if "verdict" in lowered else -1
            continue
        if column < 0 or set(line.replace("|", "").strip()) <= set("-: "):
            continue
        cell = cells[column] if column < len(cells) else ""
        if not re.fullmatch(r"(\{verdict\}`[\d, ]+`\s*)+", cell):
            problems.append(f"verdict column holds {cell!r}, not {{verdict}}`N`: {line[:120]}")
            continue
        cited = set(re.findall(r"\{claim\}`(\d+)`", line))
        graded = set(re.findall(r"\d+", " ".join(re.findall(r"\{verdict\}`([\d, ]+)`", cell))))
        if cited and cited != graded:
            problems.append(
                f"the row cites claims {sorted(cited)} but grades {sorted(graded)}: {line[:120]}"
            )
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_states_verdicts_only_through_the_registry(page):
    assert verdict_problems(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "text, found",
    [
        ("Claim 42 is wrong.", ["plain text", "verdict word 'wrong'"]),
        ("The article says {claim}`42`, which is misleading.", ["verdict word 'misleading'"]),
        (
            "| claim | verdict |\n|---|---|\n| {claim}`2` | wrong |",
            ["verdict word 'wrong'", "verdict column"],
        ),
        ("| claim | verdict |\n|---|---|\n| {claim}`2` | {verdict}`2` |", []),
        ("| claim | verdict |\n|---|---|\n| {claim}`2` | {verdict}`3` |", ["cites claims ['2']"]),
        ("What goes wrong when the driver is old.", []),
    ],
)
def test_the_verdict_check_can_fail(text, found):
    problems = verdict_problems(text)
    assert len(problems) == len(found)
    for problem, expected in zip(problems, found, strict=True):
        assert expected in problem


def _markdown_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c["cell_type"] == "markdown"
    ]


def reader_problems(markdown: str) -> list[str]:
    """MyST syntax that CommonMark (JupyterLab, Colab) would show as raw text."""
    markdown_it = need_module("markdown_it", "dev")
    html = markdown_it.MarkdownIt("commonmark").render(markdown)
    found = re.findall(r"\{[\w:.-]+\}<code>[^<]*</code>", html)  # a role: {doc}`x`
    found += re.findall(r'<code class="language-\{[\w-]+\}"', html)  # ```{note} directive
    found += re.findall(r":::\s*\{[\w-]+\}", html)  # :::{note} colon fence
    found += re.findall(r"\{[\w:.-]+\}`", html)  # a role whose backticks did not pair
    return found


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_jupyter_reader_sees_no_raw_myst(notebook):
    problems = [p for cell in _markdown_cells(notebook) for p in reader_problems(cell)]
    assert problems == []


@pytest.mark.parametrize(
    "markdown", ["See {doc}`../book/02_vram`.", "```{note}\nhi\n```", ":::{tip}\nhi\n:::"]
)
def test_the_reader_check_can_fail(markdown):
    assert reader_problems(markdown)
