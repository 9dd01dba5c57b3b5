"""gpulab.labs: the exercise check and the learner-copy generator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gpulab import labs
from gpulab.core.errors import GpulabConfigError
from gpulab.course.labs import check


def test_check_passes_and_reports_the_cases():
    """A correct function passes; the result says how many cases and the largest error."""
    result = labs.check(lambda x: x * 2, lambda x: x + x, [torch.ones(3), torch.arange(5.0)])
    assert result.cases == 2 and result.max_abs_error == 0.0
    assert "all 2 cases agree" in repr(result)


def test_check_names_the_worst_mismatch():
    """Of several wrong cases, the error names the one furthest outside the tolerance."""
    def wrong(x):
        y = x.clone()
        y[-1] += 0.5 if len(x) == 4 else 0.01
        return y

    with pytest.raises(AssertionError) as err:
        labs.check(wrong, lambda x: x, [torch.zeros(3), torch.zeros(4), torch.zeros(5)], name="f")
    message = str(err.value)
    assert "`f` disagrees with the spec on 3 of 3 cases" in message
    assert "case 2" in message and "index (3,)" in message and "got 0.5" in message


def test_check_reports_shape_mismatch():
    """A wrong shape is a mismatch, reported with both shapes."""
    with pytest.raises(AssertionError, match=r"shape \(3, 2\), expected \(2, 3\)"):
        labs.check(lambda x: x.T, lambda x: x, [torch.zeros(2, 3)])


def test_check_tolerance_is_respected():
    """Differences within rtol/atol pass; outside them fail."""
    assert labs.check(lambda x: x + 1e-7, lambda x: x, [np.ones(4)], atol=1e-6)
    with pytest.raises(AssertionError):
        labs.check(lambda x: x + 1e-3, lambda x: x, [np.ones(4)], atol=1e-6, rtol=0)


def test_check_handles_numbers_tuples_and_kwargs():
    """Cases may be tuples, dicts of keyword arguments or single values; outputs tuples."""
    assert labs.check(lambda a, b: (a + b, a * b), lambda a, b: (b + a, b * a), [(2, 3), {"a": 1, "b": 5}])
    with pytest.raises(AssertionError, match="output 1"):
        labs.check(lambda a, b: (a + b, a - b), lambda a, b: (a + b, a * b), [(2, 3)])


def test_check_compares_words_exactly():
    """A classification answer ('memory' or 'compute') must equal the spec's word."""
    assert labs.check(lambda x: "memory", lambda x: "memory", [1, 2])
    with pytest.raises(AssertionError, match="got 'compute', expected 'memory'"):
        labs.check(lambda x: "compute" if x > 1 else "memory", lambda x: "memory", [1, 2])


def test_check_nan_must_match_nan():
    """NaN where the spec has NaN is fine; NaN where it has a number is a mismatch."""
    nan = float("nan")
    assert labs.check(lambda x: x, lambda x: x, [torch.tensor([1.0, nan])])
    with pytest.raises(AssertionError):
        labs.check(lambda x: torch.tensor([1.0, nan]), lambda x: torch.tensor([1.0, 2.0]), [0])


def test_check_of_an_empty_stub_says_not_written_yet():
    """A stub raising NotImplementedError gives an AssertionError naming it, with the hint."""
    def stub(x):
        raise NotImplementedError("use torch.add")

    with pytest.raises(AssertionError, match="`stub` is not written yet: use torch.add"):
        labs.check(stub, lambda x: x, [1])


def test_check_needs_cases():
    """An empty case list is a mistake in the lab, not a pass."""
    with pytest.raises(ValueError, match="cases is empty"):
        labs.check(lambda x: x, lambda x: x, [])


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
    stub = labs.stub_source(SOLUTION_CELL)
    assert "return y + 1" not in stub and "BEGIN SOLUTION" not in stub
    assert 'def f(x):\n    """Doc."""\n    y = x\n    # Your code here.\n' in stub
    assert "    raise NotImplementedError('add one')" in stub
    namespace = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match="add one"):
        namespace["f"](1)


def test_stub_source_without_markers_replaces_the_cell():
    """A solution cell without markers is replaced whole, with the cell's hint."""
    assert labs.stub_source("x = 1", "set x") == "# Your code here.\nraise NotImplementedError('set x')"


@pytest.mark.parametrize("source, message", [
    ("### BEGIN SOLUTION\nx = 1", "never closed"),
    ("x = 1\n### END SOLUTION", "without"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "inside another"),
])
def test_stub_source_rejects_broken_markers(source, message):
    """Unbalanced markers are an error in the lab, named with the line."""
    with pytest.raises(ValueError, match=message):
        labs.stub_source(source)


def _lab(tmp_path, solution_source=SOLUTION_CELL):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# Lab"},
        {"cell_type": "code", "id": "b", "metadata": {"tags": ["solution"]}, "execution_count": 2,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "x"}], "source": solution_source},
        {"cell_type": "code", "id": "c", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "check(f, spec, cases)"},
    ]}
    labs_dir = tmp_path / "labs"
    labs_dir.mkdir()
    (labs_dir / "01_x_lab.ipynb").write_text(json.dumps(nb))
    return labs_dir


def test_learner_copy_is_generated_and_kept_in_sync(tmp_path):
    """The generator writes the copy; editing the solution makes it out of date until rerun."""
    labs_dir = _lab(tmp_path)
    assert labs.out_of_date(labs_dir) == [labs_dir / "learner" / "01_x_lab.ipynb"]
    assert labs.write_learner_copies(labs_dir) == [labs_dir / "learner" / "01_x_lab.ipynb"]
    assert labs.out_of_date(labs_dir) == []
    learner = json.loads((labs_dir / "learner" / "01_x_lab.ipynb").read_text())
    stub = learner["cells"][2]
    assert stub["outputs"] == [] and stub["execution_count"] is None
    assert labs.STUB_TAG in stub["metadata"]["tags"] and "solution" not in stub["metadata"]["tags"]
    assert "learner copy" in "".join(learner["cells"][1]["source"])
    assert learner["metadata"]["gpulab"]["learner_copy_of"] == "labs/01_x_lab.ipynb"
    solution = labs_dir / "01_x_lab.ipynb"
    solution.write_text(solution.read_text().replace("y + 1", "y + 2"))
    assert labs.out_of_date(labs_dir) == []  # the answer changed, the stub did not
    solution.write_text(solution.read_text().replace("# HINT: add one", "# HINT: add two"))
    assert labs.out_of_date(labs_dir) == [labs_dir / "learner" / "01_x_lab.ipynb"]


def test_learner_copy_drops_reference_tags(tmp_path):
    """A solution's reference cells lose their nbval tag and output in the learner copy."""
    labs_dir = _lab(tmp_path)
    path = labs_dir / "01_x_lab.ipynb"
    nb = json.loads(path.read_text())
    nb["cells"][2]["metadata"]["tags"] = ["nbval-check-output"]
    learner = labs.make_learner_copy(nb, "labs/01_x_lab.ipynb")
    assert learner["cells"][3]["metadata"]["tags"] == [] and learner["cells"][3]["outputs"] == []


def test_a_notebook_without_solution_cells_is_not_a_lab(tmp_path):
    """A lab must have at least one solution cell."""
    nb = {"cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# Lab"}], "metadata": {}}
    with pytest.raises(ValueError, match="no cell tagged 'solution'"):
        labs.make_learner_copy(nb, "labs/x.ipynb")


def test_orphan_learner_copy_is_out_of_date(tmp_path):
    """A learner copy whose solution was deleted is reported."""
    labs_dir = _lab(tmp_path)
    labs.write_learner_copies(labs_dir)
    (labs_dir / "01_x_lab.ipynb").unlink()
    assert labs.out_of_date(labs_dir) == [labs_dir / "learner" / "01_x_lab.ipynb"]


def test_main_check_and_generate(tmp_path, capsys):
    """`labs.main(["--check"])` exits 1 while stale, 0 after generating."""
    labs_dir = _lab(tmp_path)
    assert labs.main(["--check", str(labs_dir)]) == 1
    assert labs.main([str(labs_dir)]) == 0
    assert labs.main(["--check", str(labs_dir)]) == 0
    assert labs.main([str(tmp_path / "missing")]) == 2


def test_check_accepts_equal_infinities_and_refuses_opposite_ones():
    """-inf against -inf agrees (inf - inf is NaN, which must not count as a difference)."""
    import numpy as np

    neg = lambda x: np.array([-np.inf, 1.0, np.inf]) * x  # noqa: E731
    assert check(neg, neg, [1.0]).max_abs_error == 0.0
    with pytest.raises(AssertionError, match="got inf, expected -inf"):
        check(lambda x: np.array([np.inf]), lambda x: np.array([-np.inf]), [1.0])
    with pytest.raises(AssertionError, match="got nan, expected inf"):
        check(lambda x: np.array([np.nan]), lambda x: np.array([np.inf]), [1.0])


def test_check_does_not_take_none_for_nan():
    """numpy reads None as NaN; an answer of None must still fail against a NaN spec."""
    import numpy as np

    with pytest.raises(AssertionError, match="got None"):
        check(lambda x: None, lambda x: np.nan, [1.0])
    with pytest.raises(AssertionError, match="output 0: got None"):
        check(lambda x: [None, 1.0], lambda x: [np.nan, 1.0], [1.0])
    assert check(lambda x: None, lambda x: None, [1.0]).cases == 1  # both None: they agree


def test_check_refuses_bad_tolerances_naming_them():
    with pytest.raises(GpulabConfigError, match="rtol=-1"):
        check(abs, abs, [1.0], rtol=-1)
    with pytest.raises(GpulabConfigError, match="spec=3 is not callable"):
        check(abs, 3, [1.0])


def test_a_failed_check_shows_the_learner_one_line_in_jupyter():
    """labs.check raises CheckFailed, an AssertionError whose IPython rendering is one line
    plus how to see the traceback, instead of a traceback into gpulab."""
    def stub(x):
        raise NotImplementedError("square x")
    with pytest.raises(labs.CheckFailed) as failed:
        check(stub, lambda x: x * x, [2])
    assert isinstance(failed.value, AssertionError)
    shown = failed.value._render_traceback_()
    assert len(shown) == 2 and "`stub` is not written yet: square x" in shown[0]
    assert "%tb" in shown[1]


def test_ipython_uses_the_one_line_rendering(capsys):
    """IPython's shell calls _render_traceback_ when the exception has it (the hook we rely on)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    result = shell.run_cell("from gpulab import labs\nlabs.check(lambda x: 0, lambda x: x, [1])")
    assert isinstance(result.error_in_exec, labs.CheckFailed)
    shown = capsys.readouterr().out
    assert "Check failed:" in shown and "disagrees with the spec" in shown
    assert "Traceback" not in shown and "labs.py" not in shown


def test_every_check_of_a_cell_shows_its_own_line_in_jupyter(capsys):
    """IPython shows only a cell's last value by itself: check() shows its ✓ line at once, so a
    cell with three checks shows three, and the last one is not shown twice."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    capsys.readouterr()
    shell.run_cell("from gpulab import labs\n"
                   "labs.check(abs, abs, [1.0], name='first')\n"
                   "if True:\n"
                   "    labs.check(abs, abs, [1.0, 2.0], name='second')\n"
                   "labs.check(abs, abs, [3.0], name='third')")
    shown = [line for line in capsys.readouterr().out.splitlines() if "✓" in line]
    assert [line.split(":")[0] for line in shown] == ["✓ first", "✓ second", "✓ third"]
    assert "all 2 cases agree" in shown[1]


def test_a_check_outside_jupyter_shows_nothing_and_returns_its_line():
    """A script has no page: check() prints nothing there, and its result still reads as the line."""
    code = ("from gpulab.course.labs import check\n"
            "result = check(abs, abs, [1.0], name='quiet')\n"
            "print('returned:', repr(result))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(labs.__file__).parents[2])}).stdout
    assert out.splitlines() == ["returned: ✓ quiet: all 1 cases agree with the spec "
                                "(largest absolute error 0.00e+00)"]
