"""The teaching checks that need a notebook's executed outputs, on every notebook and lab that
tools/checks/teaching.py lists (TEACH_FIRST): no printed output names the course's machinery,
and no prediction's answer is shown before it is asked, in the notebook or on its chapter page
as rendered in English (the Chinese edition's half is in tests/site, on the built pages). An
appendix notebook is its own page (no chapter page to read); a lab's %%writefile scripts are
checked before the run (teaching_labs.writefile_problems: the run leaves the checkout as it was).
The notebooks run once per session, shared with tests/notebooks/test_execute.py's budgets."""

from __future__ import annotations

import json

from tests.notebooks.conftest import execute_once
from tools.checks import answers, page_figures, teaching, teaching_pages
from tools.checks.teaching_report import paired_page
from tools.execution import runs

LISTED = [runs.ROOT / p for p in teaching.TEACH_FIRST if p.endswith(".ipynb")]


def _executed(notebook, run) -> dict:
    result = execute_once(notebook)
    assert result.ok, f"{result.notebook} failed in {result.error}"
    return json.loads(runs.executed_path(notebook, run).read_text(encoding="utf-8"))


def test_no_printed_output_names_the_courses_machinery(run):
    """The outputs a learner reads (printed lines, tables, Markdown) say what they need."""
    found = []
    for notebook in LISTED:
        executed = _executed(notebook, run)
        texts = {
            f"cell {i} output": answers.output_text(c)
            for i, c in enumerate(executed["cells"])
            if c.get("cell_type") == "code"
        }
        where = notebook.relative_to(runs.ROOT).as_posix()
        found += teaching_pages.machinery_problems(
            texts, where, teaching.MACHINERY_WORDS, teaching.claim_numbers_checked(where)
        )
    assert found == []


def test_no_prediction_is_answered_in_the_notebook_or_on_its_page(run):
    """For each prediction, the number its reveal prints (±1 in its last digit) is nowhere
    above it: a computed answer not in an earlier cell's source or output, not in the Markdown
    above, not on the chapter page as rendered in English; a measured answer not in this run's
    earlier outputs (tools/checks/answers.py says why)."""
    found = []
    for notebook in LISTED:
        where = notebook.relative_to(runs.ROOT).as_posix()
        page = paired_page(where)
        pages = {page: page_figures.render(runs.ROOT / page)} if page else {}
        found += answers.problems(_executed(notebook, run), where, pages)
    assert found == []
