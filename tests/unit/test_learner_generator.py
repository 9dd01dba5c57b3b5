"""The learner-copy generator (tools/authoring/learner_generator.py): stubs, copies kept in sync."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from gpulab.course import labs
from tools.authoring import learner_generator

SOLUTION_CELL = '''def f(x):
    """Doc."""
    y = x
    ### BEGIN SOLUTION
    # HINT: add one
    return y + 1
    ### END SOLUTION
'''


def test_stub_source_replaces_the_block_keeping_signature_and_pointing_to_the_hints():
    """The solution block becomes a NotImplementedError stub at the block's indentation, whose
    message sends the learner to the hints under the cell; the hint itself is not in the code."""
    stub = learner_generator.stub_source(SOLUTION_CELL)
    assert "return y + 1" not in stub and "BEGIN SOLUTION" not in stub and "add one" not in stub
    assert 'def f(x):\n    """Doc."""\n    y = x\n    # Your code here.\n' in stub
    assert f"    raise NotImplementedError({learner_generator.HINTED!r})" in stub
    namespace = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match="open the hints below"):
        namespace["f"](1)


def test_stub_source_without_markers_replaces_the_cell():
    """A solution cell without markers is replaced whole; its `hint` metadata is a hint level."""
    stub = learner_generator.stub_source("x = 1", "set x")
    assert stub == f"# Your code here.\nraise NotImplementedError({learner_generator.HINTED!r})"
    assert learner_generator.hints_markdown("x = 1", "set x") == (
        "<details><summary>Hint 1</summary>\n\nset x\n\n</details>"
    )
    bare = learner_generator.stub_source("x = 1")
    assert bare == f"# Your code here.\nraise NotImplementedError({labs.DEFAULT_HINT!r})"
    assert learner_generator.hints_markdown("x = 1") is None


LEVELLED = '''def g(x):
    """Doc."""
    ### BEGIN SOLUTION
    # HINT 2: the idea
    # HINT 1: a nudge
    # HINT 3: the line
    return x * 2
    ### END SOLUTION


def h(x):
    """Other."""
    ### BEGIN SOLUTION
    # HINT: only one
    return x - 1
    ### END SOLUTION
'''


def test_hints_come_in_levels_each_collapsed_and_in_order():
    """HINT 1..3 become one collapsed <details> each, in level order; the old `# HINT:` is
    level 1; with two functions in a cell each hint names its function."""
    text = learner_generator.hints_markdown(LEVELLED)
    summaries = re.findall(r"<details><summary>([^<]*)</summary>\n\n([^\n]*)\n\n</details>", text)
    assert summaries == [
        ("Hint 1 for g", "a nudge"),
        ("Hint 2 for g", "the idea"),
        ("Hint 3 for g", "the line"),
        ("Hint 1 for h", "only one"),
    ]
    assert text.count("<details>") == text.count("</details>") == 4
    stub = learner_generator.stub_source(LEVELLED)
    assert "a nudge" not in stub and "x * 2" not in stub and "x - 1" not in stub
    assert stub.count(f"raise NotImplementedError({learner_generator.HINTED!r})") == 2


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
    # title, note, stub, the stub's hints, then the reference cell
    assert learner["cells"][3]["metadata"]["tags"] == [learner_generator.HINTS_TAG]
    assert learner["cells"][4]["metadata"]["tags"] == [] and learner["cells"][4]["outputs"] == []


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


_IDS = itertools.count()


def _cell(kind: str, source: str, tags=(), **meta) -> dict:
    cell = {"cell_type": kind, "id": f"c{next(_IDS)}", "source": source}
    cell["metadata"] = {"tags": list(tags), **meta} if tags or meta else {}
    if kind == "code":
        cell |= {"execution_count": None, "outputs": []}
    return cell


EXERCISE_ANSWER = """### BEGIN SOLUTION
# HINT 1: how many bytes does one value take?
total = 3 * 4
### END SOLUTION
assert total == 12, f"got {total}, expected 12"
"""


def _lab_with_exercises() -> dict:
    """A synthetic lab: one stub, then an exercise written with markers and one without."""
    hidden = {"jupyter": {"source_hidden": True}, "cellView": "form"}
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            _cell("markdown", "# Lab"),
            _cell("code", SOLUTION_CELL, ["solution"]),
            _cell("code", "check(f, spec, cases)"),
            _cell("markdown", "## Exercises"),
            _cell(
                "markdown", "### Exercise 1: bytes", ["exercise"], gpulab={"exercise": "lab01-a"}
            ),
            _cell("markdown", "#### Solution\n\nThree values of 4 bytes.", ["exercise-solution"]),
            _cell("code", EXERCISE_ANSWER, ["exercise-solution"], **hidden),
            _cell("code", "print(total)", ["exercise-solution"], **hidden),
            _cell(
                "markdown", "### Exercise 2: words", ["exercise"], gpulab={"exercise": "lab01-b"}
            ),
            _cell("markdown", "#### Solution\n\nIn words.", ["exercise-solution"]),
            _cell("code", "assert True", ["exercise-solution"], **hidden),
        ],
    }


def test_an_exercise_written_with_markers_keeps_its_cell_and_check_in_the_learner_copy():
    """The exercise's answer is stubbed and its check kept, visible, with its hint under it; the
    '#### Solution' Markdown and the other solution cells go. An exercise without markers keeps
    only its statement (the labs of part 2 still generate)."""
    from tools.authoring import exercises

    learner = learner_generator.make_learner_copy(_lab_with_exercises(), "labs/01_x_lab.ipynb")
    sources = ["".join(c["source"]) for c in learner["cells"]]
    first = sources.index("### Exercise 1: bytes")
    stub, hints, second = learner["cells"][first + 1 : first + 4]
    stub_text = "".join(stub["source"])
    assert stub_text.startswith("# Your code here.\nraise NotImplementedError(")
    assert 'assert total == 12, f"got {total}, expected 12"' in stub_text
    assert "3 * 4" not in stub_text and "BEGIN SOLUTION" not in stub_text
    assert stub["metadata"]["tags"] == [learner_generator.STUB_TAG]
    assert "jupyter" not in stub["metadata"] and "cellView" not in stub["metadata"]
    assert hints["metadata"]["tags"] == [learner_generator.HINTS_TAG]
    assert "how many bytes does one value take?" in "".join(hints["source"])
    assert "".join(second["source"]) == "### Exercise 2: words"
    assert learner["cells"][-1] is second  # exercise 2 keeps only its statement
    assert not any(s.startswith("#### Solution") or s == "print(total)" for s in sources)
    assert not exercises.holds_solution(learner)
    # run as a learner would: the stub stops the cell before its check
    with pytest.raises(NotImplementedError, match="open the hints below"):
        exec(stub_text, {})


def test_the_solution_notebook_of_an_exercise_with_markers_passes_the_exercise_rules():
    """Writing an exercise's answer between markers is still a checked solution."""
    from tools.authoring import exercises

    assert exercises.problems(_lab_with_exercises()) == []
    namespace = {}
    exec(EXERCISE_ANSWER, namespace)  # the solution runs and its check passes
    assert namespace["total"] == 12


def test_regenerating_writes_the_exercise_cells_and_nbcheck_sees_them_in_sync(tmp_path):
    """The generator writes the synthetic lab's copy; the check of copies then finds it current."""
    labs_dir = tmp_path / "labs"
    labs_dir.mkdir()
    (labs_dir / "01_x_lab.ipynb").write_text(json.dumps(_lab_with_exercises()))
    assert learner_generator.write_learner_copies(labs_dir) == [
        labs_dir / "learner" / "01_x_lab.ipynb"
    ]
    assert learner_generator.out_of_date(labs_dir) == []
    copy = json.loads((labs_dir / "learner" / "01_x_lab.ipynb").read_text())
    assert (
        sum(learner_generator.STUB_TAG in c["metadata"].get("tags", []) for c in copy["cells"]) == 2
    )


def test_a_hint_continues_on_the_comment_lines_under_it():
    """A long hint goes on over the comment lines right under it, up to the next hint or code;
    a level given twice keeps its first text."""
    from tools.authoring import solution_blocks

    lines = [
        "# HINT 1: list what happens to each element: the max, a subtraction,",
        "# the sum, a division",
        "# HINT 2: five FLOPs per element",
        "# HINT 2: a second level 2",
        "#   is ignored",
        "elements = rows * cols",
        "# a comment of the code",
    ]
    assert solution_blocks.hints(lines) == {
        1: "list what happens to each element: the max, a subtraction, the sum, a division",
        2: "five FLOPs per element",
    }
