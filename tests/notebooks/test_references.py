"""nbval's comparison on the reference cells: a changed value fails."""

from __future__ import annotations

import json

import pytest

from tests.notebooks.conftest import execute_once
from tools.execution import references, runs

WITH_REFERENCES = [
    p
    for p in runs.discover()
    if references.reference_cells(json.loads(p.read_text(encoding="utf-8")))
]


def test_some_notebook_has_reference_cells():
    """The mechanism is in use (the setup notebook has one), so this test can fail."""
    assert WITH_REFERENCES


@pytest.mark.parametrize(
    "notebook", WITH_REFERENCES, ids=lambda p: p.relative_to(runs.ROOT).as_posix()
)
def test_reference_outputs_unchanged(notebook, run):
    """Each tagged cell's new output equals its committed reference (after sanitizing)."""
    if run.mode != "quick":
        pytest.skip("references are recorded in quick mode")
    result = execute_once(notebook)
    assert result.ok, f"{result.notebook} failed in {result.error}"
    failures = references.compare(notebook, runs.executed_path(notebook, run))
    assert not failures, f"{notebook.name}: reference output changed:\n" + "\n".join(failures)


def test_changed_value_is_caught(tmp_path):
    """A reference that differs from the new output is reported (the check can fail)."""
    outputs = [{"name": "stdout", "output_type": "stream", "text": "42\n"}]
    cell = {
        "cell_type": "code",
        "id": "x",
        "metadata": {"tags": ["nbval-check-output"]},
        "source": "print(2 * 21)",
        "execution_count": None,
        "outputs": [],
    }
    changed = json.loads(json.dumps(cell)) | {"outputs": [outputs[0] | {"text": "43\n"}]}
    source, executed, store = tmp_path / "a.ipynb", tmp_path / "b.ipynb", tmp_path / "a.json"
    source.write_text(json.dumps({"cells": [cell]}))
    store.write_text(json.dumps({"x": outputs}))
    executed.write_text(json.dumps({"cells": [changed]}))
    failures = references.compare(source, executed, store)
    assert len(failures) == 1 and "42" in failures[0] and "43" in failures[0]
    executed.write_text(json.dumps({"cells": [cell | {"outputs": outputs}]}))
    assert references.compare(source, executed, store) == []
    store.write_text(json.dumps({}))  # a tagged cell without a recorded reference fails too
    assert "missing from the recorded references" in references.compare(source, executed, store)[0]


def test_the_references_are_recorded_beside_the_tests_and_the_notebooks_carry_none():
    """Every tagged cell of every notebook has its reference in tests/notebooks/references,
    and no notebook cell carries an output."""
    for notebook in WITH_REFERENCES:
        nb = json.loads(notebook.read_text(encoding="utf-8"))
        recorded = references.stored(notebook)
        assert {c["id"] for c in references.reference_cells(nb)} == set(recorded), notebook
        assert all(recorded.values()), notebook
        assert not [c for c in nb["cells"] if c.get("outputs")], notebook
