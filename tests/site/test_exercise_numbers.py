"""Exercises are numbered on each page from 1 (tools/sphinx_ext/numbers.py), as the notebook numbers
them: the oracle is each notebook's own headings ("### Exercise 2: ..."), which
tools.authoring.exercises checks count 1, 2, 3 in the notebook."""

from __future__ import annotations

import json
import re

import pytest

from tools.authoring import exercises
from tools.execution import runs

ZH = "zh_CN"
# sphinx-exercise's title number, and the one in a solution's title (its link to the exercise)
TITLE = re.compile(r'<span class="caption-number">(?:Exercise|练习) (\d+) </span>')
SOLUTION = re.compile(
    r'<p class="admonition-title">(?:Solution to|解答)\s*<a [^>]*>\s*(?:Exercise|练习) (\d+)'
)
NUMBERED = {
    nb: [g.number for g in exercises.exercises(json.loads(nb.read_text(encoding="utf-8")))]
    for nb in runs.discover()
}


def test_the_notebooks_number_their_exercises_from_one():
    """The oracle itself: several notebooks with exercises, each counting 1, 2, 3 ..."""
    with_exercises = [n for n in NUMBERED.values() if n]
    assert len(with_exercises) >= 2
    assert all(n == list(range(1, len(n) + 1)) for n in with_exercises)


@pytest.mark.parametrize("edition", ["en", ZH])
def test_each_page_numbers_its_exercises_from_one(site, edition):
    """On every page the exercises' titles, and their solutions' titles, read 1, 2, 3 ..., the
    notebook's own numbers; a book-wide count (chapter 2 starting at 15) fails."""
    root = site if edition == "en" else site / ZH
    wrong, pages = [], 0
    for notebook, numbers in NUMBERED.items():
        if not numbers:
            continue
        page = root / notebook.relative_to(runs.ROOT).with_suffix(".html")
        html = page.read_text(encoding="utf-8")
        titles = [int(n) for n in TITLE.findall(html)]
        solutions = [int(n) for n in SOLUTION.findall(html)]
        pages += 1
        if titles != numbers or solutions != numbers:
            wrong.append(
                f"{page.relative_to(site)}: titles {titles}, solutions {solutions}, "
                f"the notebook's {numbers}"
            )
    assert pages >= 2
    assert not wrong, "\n".join(wrong)
