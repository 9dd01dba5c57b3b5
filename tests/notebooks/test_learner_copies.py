"""Learner copies are generated from their solutions, in sync, and fail clearly while empty."""

from __future__ import annotations

import json

import pytest

from gpulab import labs
from tools import pipeline

SOLUTIONS = labs.solutions(pipeline.ROOT / "labs")


def test_every_lab_has_a_learner_copy_in_sync():
    """A learner copy that differs from what the generator makes now fails this test."""
    assert SOLUTIONS, "no lab found"
    stale = labs.out_of_date(pipeline.ROOT / "labs")
    assert not stale, f"out of date (run `python -m gpulab.course.labs`): {[str(p) for p in stale]}"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.name)
def test_learner_copy_has_no_solution_left(solution):
    """No solution block survives in the learner copy; every stub raises NotImplementedError."""
    learner = json.loads(labs.learner_path(solution).read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in learner["cells"] if c["cell_type"] == "code"]
    assert not any(labs.BEGIN in s or labs.END in s for s in sources)
    solved = json.loads(solution.read_text(encoding="utf-8"))
    n_solutions = sum(labs.is_solution_cell(c) for c in solved["cells"])
    assert sum("raise NotImplementedError" in s for s in sources) >= n_solutions


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.name)
def test_learner_copy_check_fails_clearly(solution, run):
    """Executing the learner copy stops at the first check with 'is not written yet' and a hint."""
    result = pipeline.execute(labs.learner_path(solution), run)
    assert not result.ok, "the learner copy ran through although its stubs are empty"
    assert "AssertionError" in result.error and "is not written yet" in result.error, result.error
