"""gpulab.labs: the exercise check a learner runs, and its one-line failure."""

from __future__ import annotations

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
    assert labs.check(
        lambda a, b: (a + b, a * b), lambda a, b: (b + a, b * a), [(2, 3), {"a": 1, "b": 5}]
    )
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
    shell.run_cell(
        "from gpulab import labs\n"
        "labs.check(abs, abs, [1.0], name='first')\n"
        "if True:\n"
        "    labs.check(abs, abs, [1.0, 2.0], name='second')\n"
        "labs.check(abs, abs, [3.0], name='third')"
    )
    shown = [line for line in capsys.readouterr().out.splitlines() if "✓" in line]
    assert [line.split(":")[0] for line in shown] == ["✓ first", "✓ second", "✓ third"]
    assert "all 2 cases agree" in shown[1]


def test_a_check_outside_jupyter_shows_nothing_and_returns_its_line():
    """A script has no page: check() prints nothing there, and its result reads as the line."""
    code = (
        "from gpulab.course.labs import check\n"
        "result = check(abs, abs, [1.0], name='quiet')\n"
        "print('returned:', repr(result))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(labs.__file__).parents[2])},
    ).stdout
    assert out.splitlines() == [
        "returned: ✓ quiet: all 1 cases agree with the spec (largest absolute error 0.00e+00)"
    ]
