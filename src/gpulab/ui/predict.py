"""Predict first, then measure: the reader's guess beside the measurement, and the error.

A notebook asks for a number before it measures (``my_guess = None``: the reader replaces
None), then shows ``compare(my_guess, measured, ...)``: prediction, measurement, how far off,
and, when the guess is further off than the page expects, why a guess usually misses there.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Annotated, Any

from gpulab.core.constraints import show
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import AtLeast, OneOf, checked, lenient

__all__ = ["Comparison", "compare"]


@dataclass(frozen=True)
class Comparison:
    """A prediction against a measurement (or the note that no prediction was made)."""

    quantity: str  # what was predicted, for example "the matmul's GFLOP/s here"
    measured: float
    prediction: float | None
    unit: str = ""
    spec: str = ".3g"  # format spec of both numbers
    expected_factor: float = 2.0  # a guess within this factor of the measurement is good here
    why: str = ""  # what usually explains a miss larger than that
    variable: str = "my_guess"  # the name the reader assigns the prediction to
    basis: str = "measured"  # how the answer was found: "measured" here, or "computed" by gpulab

    @property
    def factor_off(self) -> float | None:
        """How many times too high or too low the prediction was (1.0: exact); None without one."""
        if self.prediction is None:
            return None
        low, high = sorted((abs(self.prediction), abs(self.measured)))
        if low == 0:
            return 1.0 if high == 0 else math.inf
        return high / low if (self.prediction > 0) == (self.measured > 0) else math.inf

    @property
    def error(self) -> float | None:
        """(prediction - measured) / measured; None without a prediction."""
        if self.prediction is None or self.measured == 0:
            return None
        return (self.prediction - self.measured) / self.measured

    @property
    def within(self) -> bool | None:
        """True when the prediction is within `expected_factor` of the measurement."""
        factor = self.factor_off
        return None if factor is None else factor <= self.expected_factor

    def _number(self, value: float) -> str:
        unit = f" {self.unit}" if self.unit else ""
        return f"{format(value, self.spec)}{unit}"

    def lines(self) -> list[str]:
        """The comparison as sentences."""
        measured = f"{self.basis}: {self._number(self.measured)}"
        if self.prediction is None:
            return [
                f"{self.quantity}: {measured}.",
                f"No prediction was made: set `{self.variable}` to your guess in the cell "
                "above, then run both cells again.",
            ]
        out = [
            f"{self.quantity}: your prediction {self._number(self.prediction)}, {measured}"
            + (f", error {self.error:+.0%}." if self.error is not None else ".")
        ]
        if self.within:
            out.append(f"Within {self.expected_factor:g}x of the measurement: a good estimate.")
        else:
            out.append(
                f"Off by {self.factor_off:.3g}x, more than the {self.expected_factor:g}x "
                f"this page expects. {self.why}".rstrip()
            )
        return out

    def _repr_markdown_(self) -> str:
        return "\n\n".join(self.lines())

    def __repr__(self) -> str:
        return "\n".join(self.lines())


@lenient("the reader's guess is refused naming the reader's variable (my_guess), not `prediction`")
@checked
def compare(
    prediction: Any,
    measured: float,
    quantity: str,
    *,
    unit: str = "",
    spec: str = ".3g",
    expected_factor: Annotated[float, AtLeast(1)] = 2.0,
    why: str = "",
    variable: str = "my_guess",
    basis: Annotated[str, OneOf(("measured", "computed"), "basis")] = "measured",
) -> Comparison:
    """The reader's prediction next to what was measured (or computed), ready to display."""
    # The guess is checked here, not by its annotation, so that the message names the
    # reader's variable (`my_guess`) rather than this function's parameter.
    if prediction is not None:
        if isinstance(prediction, bool) or not isinstance(prediction, numbers.Real):
            raise GpulabConfigError(
                f"{variable}={show(prediction)}: write a number (or leave "
                f"None), not {type(prediction).__name__}",
                variable,
            )
        try:
            prediction = float(prediction)
        except OverflowError:  # a Fraction or an int beyond the floats
            prediction = math.inf
        if not math.isfinite(prediction):
            raise GpulabConfigError(
                f"{variable}={show(prediction)}: write a finite number", variable
            )
    return Comparison(
        quantity, float(measured), prediction, unit, spec, expected_factor, why, variable, basis
    )
