"""Learner copies are generated from their solutions, in sync, and fail clearly while empty."""

from __future__ import annotations

import json

import pytest

from tools.authoring import learner_generator as generator
from tools.execution import executor, runs

SOLUTIONS = generator.solutions(runs.ROOT / "labs")


def test_every_lab_has_a_learner_copy_in_sync():
    """A learner copy that differs from what the generator makes now fails this test."""
    assert SOLUTIONS, "no lab found"
    stale = generator.out_of_date(runs.ROOT / "labs")
    assert not stale, f"out of date (run `{generator.REGENERATE}`): {[str(p) for p in stale]}"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.name)
def test_learner_copy_has_no_solution_left(solution):
    """No solution block survives in the learner copy; every stub raises NotImplementedError."""
    learner = json.loads(generator.learner_path(solution).read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in learner["cells"] if c["cell_type"] == "code"]
    assert not any(generator.BEGIN in s or generator.END in s for s in sources)
    solved = json.loads(solution.read_text(encoding="utf-8"))
    # a solution cell with a learner_source starts the learner from library code to edit
    n_stubs = sum(
        generator.is_solution_cell(c) and not _edits_library_code(c) for c in solved["cells"]
    )
    assert sum("raise NotImplementedError" in s for s in sources) >= n_stubs
    for cell in solved["cells"]:
        if generator.is_solution_cell(cell) and _edits_library_code(cell):
            meta = cell["metadata"]["gpulab"]
            start = generator.library_source(meta["learner_source"], meta.get("learner_name"))
            assert any(s.endswith(start) for s in sources), f"{cell['id']}: no copy to edit"


def _edits_library_code(cell: dict) -> bool:
    return bool(cell.get("metadata", {}).get("gpulab", {}).get("learner_source"))


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.name)
def test_learner_copy_check_fails_clearly(solution, run):
    """Executing the learner copy stops at the first check with 'is not written yet' and a hint,
    or, where the learner starts from library code to edit (lab 5's slow loop), with the
    grader's list of the checks that code fails."""
    result = executor.execute(generator.learner_path(solution), run)
    assert not result.ok, "the learner copy ran through although its stubs are empty"
    solved = json.loads(solution.read_text(encoding="utf-8"))
    edits = any(generator.is_solution_cell(c) and _edits_library_code(c) for c in solved["cells"])
    clear = "is not written yet" in result.error or (
        edits and "failed" in result.error and "check(s)" in result.error
    )
    # labs.CheckFailed, an AssertionError that Jupyter shows as one line
    assert ("CheckFailed" in result.error or "AssertionError" in result.error) and clear, (
        result.error
    )
