"""The learner-copy generator (tools/authoring/learner_generator.py): stubs, copies kept in sync."""

from __future__ import annotations

import json

import pytest

from tools.authoring import learner_generator

SOLUTION_CELL = '''def f(x):
    """Doc."""
    y = x
    ### BEGIN SOLUTION
    # HINT: add one
    return y + 1
    ### END SOLUTION
'''


def test_stub_source_replaces_the_block_keeping_signature_and_hint():
    """The solution block becomes a NotImplementedError stub at the block's indentation."""
    stub = learner_generator.stub_source(SOLUTION_CELL)
    assert "return y + 1" not in stub and "BEGIN SOLUTION" not in stub
    assert 'def f(x):\n    """Doc."""\n    y = x\n    # Your code here.\n' in stub
    assert "    raise NotImplementedError('add one')" in stub
    namespace = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match="add one"):
        namespace["f"](1)


def test_stub_source_without_markers_replaces_the_cell():
    """A solution cell without markers is replaced whole, with the cell's hint."""
    stub = learner_generator.stub_source("x = 1", "set x")
    assert stub == "# Your code here.\nraise NotImplementedError('set x')"


@pytest.mark.parametrize(
    "source, message",
    [
        ("### BEGIN SOLUTION\nx = 1", "never closed"),
        ("x = 1\n### END SOLUTION", "without"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "inside another"),
    ],
)
def test_stub_source_rejects_broken_markers(source, message):
    """Unbalanced markers are an error in the lab, named with the line."""
    with pytest.raises(ValueError, match=message):
        learner_generator.stub_source(source)


def _lab(tmp_path, solution_source=SOLUTION_CELL):
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# Lab"},
            {
                "cell_type": "code",
                "id": "b",
                "metadata": {"tags": ["solution"]},
                "execution_count": 2,
                "outputs": [{"output_type": "stream", "name": "stdout", "text": "x"}],
                "source": solution_source,
            },
            {
                "cell_type": "code",
                "id": "c",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": "check(f, spec, cases)",
            },
        ],
    }
    labs_dir = tmp_path / "labs"
    labs_dir.mkdir()
    (labs_dir / "01_x_lab.ipynb").write_text(json.dumps(nb))
    return labs_dir


def test_learner_copy_is_generated_and_kept_in_sync(tmp_path):
    """The generator writes the copy; editing the solution makes it out of date until rerun."""
    labs_dir = _lab(tmp_path)
    copy = labs_dir / "learner" / "01_x_lab.ipynb"
    assert learner_generator.out_of_date(labs_dir) == [copy]
    assert learner_generator.write_learner_copies(labs_dir) == [copy]
    assert learner_generator.out_of_date(labs_dir) == []
    learner = json.loads((labs_dir / "learner" / "01_x_lab.ipynb").read_text())
    stub = learner["cells"][2]
    assert stub["outputs"] == [] and stub["execution_count"] is None
    tags = stub["metadata"]["tags"]
    assert learner_generator.STUB_TAG in tags and "solution" not in tags
    assert "learner copy" in "".join(learner["cells"][1]["source"])
    assert learner["metadata"]["gpulab"]["learner_copy_of"] == "labs/01_x_lab.ipynb"
    solution = labs_dir / "01_x_lab.ipynb"
    solution.write_text(solution.read_text().replace("y + 1", "y + 2"))
    assert learner_generator.out_of_date(labs_dir) == []  # the answer changed, the stub did not
    solution.write_text(solution.read_text().replace("# HINT: add one", "# HINT: add two"))
    assert learner_generator.out_of_date(labs_dir) == [labs_dir / "learner" / "01_x_lab.ipynb"]


def test_learner_copy_drops_reference_tags(tmp_path):
    """A solution's reference cells lose their nbval tag and output in the learner copy."""
    labs_dir = _lab(tmp_path)
    path = labs_dir / "01_x_lab.ipynb"
    nb = json.loads(path.read_text())
    nb["cells"][2]["metadata"]["tags"] = ["nbval-check-output"]
    learner = learner_generator.make_learner_copy(nb, "labs/01_x_lab.ipynb")
    assert learner["cells"][3]["metadata"]["tags"] == [] and learner["cells"][3]["outputs"] == []


def test_a_notebook_without_solution_cells_is_not_a_lab(tmp_path):
    """A lab must have at least one solution cell."""
    nb = {
        "cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# Lab"}],
        "metadata": {},
    }
    with pytest.raises(ValueError, match="no cell tagged 'solution'"):
        learner_generator.make_learner_copy(nb, "labs/x.ipynb")


def test_orphan_learner_copy_is_out_of_date(tmp_path):
    """A learner copy whose solution was deleted is reported."""
    labs_dir = _lab(tmp_path)
    learner_generator.write_learner_copies(labs_dir)
    (labs_dir / "01_x_lab.ipynb").unlink()
    assert learner_generator.out_of_date(labs_dir) == [labs_dir / "learner" / "01_x_lab.ipynb"]


def test_main_check_and_generate(tmp_path, capsys):
    """`learner_generator.main(["--check"])` exits 1 while stale, 0 after generating."""
    labs_dir = _lab(tmp_path)
    assert learner_generator.main(["--check", str(labs_dir)]) == 1
    assert learner_generator.main([str(labs_dir)]) == 0
    assert learner_generator.main(["--check", str(labs_dir)]) == 0
    assert learner_generator.main([str(tmp_path / "missing")]) == 2
