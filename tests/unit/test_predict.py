"""Predict, then measure (gpulab.ui.predict): the comparison a notebook shows."""

from __future__ import annotations

import math

import pytest

from gpulab import predict
from gpulab.core.errors import GpulabConfigError


def test_no_prediction_says_so_and_names_the_variable():
    shown = predict.compare(None, 12.5, "GFLOP/s here", unit="GFLOP/s", variable="my_gflops")
    assert shown.error is None and shown.within is None and shown.factor_off is None
    text = repr(shown)
    assert "measured: 12.5 GFLOP/s" in text and "`my_gflops`" in text
    assert "No prediction" in shown._repr_markdown_()


def test_a_close_guess_is_called_good_and_a_far_one_gets_the_reason():
    close = predict.compare(10, 8, "ms per step", expected_factor=1.5, why="because")
    assert close.error == pytest.approx(0.25) and close.factor_off == pytest.approx(1.25)
    assert close.within and "good estimate" in repr(close) and "because" not in repr(close)
    far = predict.compare(2, 8, "ms per step", expected_factor=1.5, why="Launches dominate.")
    assert far.error == pytest.approx(-0.75) and far.factor_off == pytest.approx(4.0)
    assert not far.within and "Launches dominate." in repr(far) and "4x" in repr(far)


def test_a_guess_of_the_wrong_sign_is_infinitely_off():
    assert math.isinf(predict.compare(-1, 1, "x").factor_off)


@pytest.mark.parametrize("bad, field", [("fast", "my_guess"), (math.nan, "my_guess")])
def test_a_guess_that_is_not_a_number_is_a_clear_error(bad, field):
    with pytest.raises(GpulabConfigError, match=field):
        predict.compare(bad, 1.0, "x")


def test_expected_factor_below_one_is_refused():
    with pytest.raises(GpulabConfigError, match="expected_factor"):
        predict.compare(1, 1, "x", expected_factor=0.5)


def test_a_computed_answer_is_labelled_computed():
    assert "computed: 3 months" in repr(
        predict.compare(2, 3, "break-even", unit="months", basis="computed")
    )
    with pytest.raises(GpulabConfigError, match="basis"):
        predict.compare(2, 3, "x", basis="guessed")
