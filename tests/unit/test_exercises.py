"""Every exercise has an executed, checked solution; the site gets sphinx-exercise blocks; a
learner copy keeps the questions and none of the answers (tools/authoring/exercises.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.authoring import exercises, learner_generator  # noqa: E402
from tools.execution import runs  # noqa: E402
from tools.notebook_meta import cell_source  # noqa: E402

NOTEBOOKS = runs.discover()


def _md(source: str, tags=(), **meta) -> dict:
    metadata = {"tags": list(tags)} if tags else {}
    metadata.update(meta)
    return {
        "cell_type": "markdown",
        "id": f"c{abs(hash(source)) % 10**8}",
        "metadata": metadata,
        "source": source,
    }


def _code(source: str, tags=()) -> dict:
    return {
        "cell_type": "code",
        "id": f"k{abs(hash(source)) % 10**8}",
        "metadata": {"tags": list(tags)} if tags else {},
        "execution_count": None,
        "outputs": [],
        "source": source,
    }


def _exercise(n: int, label: str, check: str = "assert 2 + 2 == 4") -> list[dict]:
    return [
        _md(
            f"### Exercise {n}: sum\n\nAdd two and two.",
            [exercises.EXERCISE_TAG],
            gpulab={"exercise": label},
        ),
        _md("#### Solution\n\nAdd them.", [exercises.SOLUTION_TAG]),
        _code(f"total = 2 + 2\n{check}", [exercises.SOLUTION_TAG]),
    ]


def _nb(*cells) -> dict:
    return {
        "cells": [_md("## Exercises"), *cells],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_a_well_formed_exercise_has_no_problem():
    nb = _nb(*_exercise(1, "ch02-sum"), *_exercise(2, "ch02-sum-again", "labs.check(f, g, [1])"))
    assert exercises.problems(nb) == []
    found = exercises.exercises(nb)
    assert [(e.number, e.title, e.label, e.solution) for e in found] == [
        (1, "sum", "ch02-sum", [2, 3]),
        (2, "sum", "ch02-sum-again", [5, 6]),
    ]


@pytest.mark.parametrize(
    "breakage, expected",
    [
        (lambda cells: cells[:1], "has no solution"),
        (lambda cells: [cells[0], cells[2]], "must open with a Markdown cell '#### Solution'"),
        (
            lambda cells: cells[:2] + [_code("total = 4\nprint(total)", [exercises.SOLUTION_TAG])],
            "no solution code cell checks its answer",
        ),
        (
            lambda cells: [
                _md(
                    cells[0]["source"].replace("Exercise 1", "Exercise 3"),
                    [exercises.EXERCISE_TAG],
                    gpulab={"exercise": "ch02-sum"},
                ),
                *cells[1:],
            ],
            "is numbered 3",
        ),
        (
            lambda cells: [
                _md(cells[0]["source"], [exercises.EXERCISE_TAG], gpulab={"exercise": "Sum"}),
                *cells[1:],
            ],
            "has label 'Sum'",
        ),
    ],
)
def test_each_broken_rule_is_reported(breakage, expected):
    nb = _nb(*breakage(_exercise(1, "ch02-sum")))
    assert any(expected in p for p in exercises.problems(nb)), exercises.problems(nb)


def test_a_plain_list_of_exercises_and_a_stray_solution_are_reported():
    nb = {
        "cells": [
            _md("## Exercises\n\n1. Add two and two.\n2. And three."),
            _code("assert True", [exercises.SOLUTION_TAG]),
        ]
    }
    found = exercises.problems(nb)
    assert any("lists exercises as plain text" in p for p in found)
    assert any("does not follow an exercise" in p for p in found)
    assert any("has no exercise" in p for p in found)


def test_a_label_used_twice_is_reported():
    nb = _nb(*_exercise(1, "ch02-sum"), *_exercise(2, "ch02-sum"))
    assert any("used twice" in p for p in exercises.problems(nb))


def test_normalise_saves_solutions_collapsed_once():
    nb = _nb(*_exercise(1, "ch02-sum"))
    assert exercises.normalise(nb) is True
    heading, code = nb["cells"][2], nb["cells"][3]
    assert heading["metadata"]["jp-MarkdownHeadingCollapsed"] is True
    assert code["metadata"]["jupyter"] == {"source_hidden": True}
    assert code["metadata"]["cellView"] == "form"
    assert exercises.normalise(nb) is False  # idempotent


def test_the_site_copy_holds_sphinx_exercise_blocks_around_the_same_cells():
    nb = _nb(*_exercise(1, "ch02-sum"), *_exercise(2, "ch02-more"))
    site = exercises.to_sphinx_exercise(nb)
    sources = [cell_source(c) for c in site["cells"]]
    assert sources[1].startswith("::::{exercise} sum\n:label: ch02-sum\n")
    assert sources[1].rstrip().endswith("::::") and "Add two and two." in sources[1]
    assert sources[2].startswith(":::{solution-start} ch02-sum\n:class: dropdown\n:::")
    assert sources[3] == nb["cells"][3]["source"]  # the code cell is untouched, so it ran as is
    assert sources[4] == ":::{solution-end}\n:::"
    assert sources[5].startswith("::::{exercise} sum\n:label: ch02-more")
    assert sources[-1] == ":::{solution-end}\n:::"
    assert len(site["cells"]) == len(nb["cells"]) + 2
    assert nb["cells"][1]["source"].startswith("### Exercise 1")  # the input is not changed


def test_strip_solutions_keeps_the_question_only():
    gated = [
        _md(":::{solution-start} ch02-x\n:::"),
        _code("print(1)"),
        _md(":::{solution-end}\n:::"),
    ]
    nb = _nb(*_exercise(1, "ch02-sum"), *gated, _md("after"))
    stripped = exercises.strip_solutions(nb)
    assert [cell_source(c) for c in stripped["cells"]] == [
        "## Exercises",
        nb["cells"][1]["source"],
        "after",
    ]
    assert exercises.holds_solution(nb) and not exercises.holds_solution(stripped)


# ------------------------------------------------------------------ the course's notebooks


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_exercise_of_the_course_has_a_checked_solution(notebook):
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    assert exercises.problems(nb) == []


def test_no_exercise_is_without_a_solution_and_labels_are_unique_in_the_book():
    groups = [
        (p, g)
        for p in NOTEBOOKS
        for g in exercises.exercises(json.loads(p.read_text(encoding="utf-8")))
    ]
    without = [f"{p.relative_to(ROOT)}: {g.label}" for p, g in groups if not g.solution]
    assert len(groups) >= 60 and without == []
    labels = [g.label for _, g in groups]
    assert len(set(labels)) == len(labels)


@pytest.mark.parametrize(
    "solution", learner_generator.solutions(ROOT / "labs"), ids=lambda p: p.name
)
def test_a_learner_copy_keeps_every_question_and_no_answer(solution):
    nb = json.loads(solution.read_text(encoding="utf-8"))
    learner = learner_generator.make_learner_copy(nb, f"labs/{solution.name}")
    assert not exercises.holds_solution(learner)
    questions = [
        cell_source(c)
        for c in learner["cells"]
        if exercises.EXERCISE_TAG in c.get("metadata", {}).get("tags", [])
    ]
    assert questions == [cell_source(nb["cells"][g.index]) for g in exercises.exercises(nb)]
    committed = json.loads(learner_generator.learner_path(solution).read_text(encoding="utf-8"))
    assert not exercises.holds_solution(committed)
