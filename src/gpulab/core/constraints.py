"""The constraints an annotation can carry, and the messages they give (the validation layer).

``Annotated[int, Positive]``, ``Annotated[float, Between(0, 1)]``,
``Annotated[str, OneOf(choices, "weight format")]``: each rule checks a value that already
has the right type and raises ``GpulabConfigError`` naming the field and what is allowed.
``gpulab.validate`` compiles annotations into checks and applies them.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from gpulab.core.errors import GpulabConfigError

__all__ = [
    "MAX_MAGNITUDE",
    "MIN_MAGNITUDE",
    "AtLeast",
    "AtMost",
    "Between",
    "Fraction",
    "NonEmpty",
    "NonNegativeFloat",
    "NonNegativeInt",
    "OneOf",
    "Positive",
    "PositiveFloat",
    "PositiveInt",
    "Rule",
    "SUGGEST_MAX_LENGTH",
    "did_you_mean",
    "did_you_mean_text",
    "show",
    "suggestions",
]

MAX_MAGNITUDE = 1e18
# A nonzero number smaller than this means nothing in the course (a picosecond, a trillionth
# of a byte) and only turns a division into an infinity: 1 / 5e-324 overflows.
MIN_MAGNITUDE = 1e-12


# --------------------------------------------------------------------------- value display


def show(value: Any, limit: int = 60) -> str:
    """A short, safe repr for messages: long values are cut, unprintable ones named by type."""
    try:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
            text = f"<an integer of {len(str(abs(value)))} digits>"
        elif isinstance(value, str) and len(value) > limit:  # not a copy of a huge text first
            text = repr(value[:limit]) + "..."
        else:
            text = repr(value)
    except Exception:  # a repr that raises (or an int too long to print) must not hide the error
        return f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- rules


class Rule:
    """A bound on a value that already has the right type; ``check`` raises on a violation."""

    def check(self, name: str, value: Any) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class _Bounds(Rule):
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def holds(self, value: float) -> bool:
        """Whether ``value`` lies within the bounds."""
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (
            self.high is not None and (value >= self.high if self.high_open else value > self.high)
        )

    def check(self, name: str, value: Any, noun: str = "number") -> None:
        """Raise unless the (already numeric) value lies within the bounds."""
        if not self.holds(value):
            raise GpulabConfigError(f"{name}={show(value)} must be {self.describe(noun)}", name)

    def describe(self, noun: str = "number") -> str:
        """'a positive integer', 'a number >= 0', 'a number from 0 to 1', ..."""
        article = "an" if noun[0] in "aeiou" else "a"
        if self.low == 0 and self.low_open and self.high is None:
            return f"a positive {noun}"
        if self.high is None:
            return f"{article} {noun} {'>' if self.low_open else '>='} {self.low:g}"
        if self.low is None:
            return f"{article} {noun} {'<' if self.high_open else '<='} {self.high:g}"
        left = "above" if self.low_open else "from"
        right = "below" if self.high_open else "to"
        return f"{article} {noun} {left} {self.low:g} {right} {self.high:g}"


Positive = _Bounds(low=0, low_open=True)


def AtLeast(low: float) -> Rule:  # noqa: N802 - reads like a type
    """The value is at least ``low``."""
    return _Bounds(low=low)


def AtMost(high: float) -> Rule:  # noqa: N802
    """The value is at most ``high``."""
    return _Bounds(high=high)


def Between(low: float, high: float, low_open: bool = False, high_open: bool = False) -> Rule:  # noqa: N802
    """The value lies between ``low`` and ``high`` (closed unless told otherwise)."""
    return _Bounds(low=low, high=high, low_open=low_open, high_open=high_open)


@dataclasses.dataclass(frozen=True)
class _NonEmpty(Rule):
    def check(self, name: str, value: Any) -> None:
        """Raise when a string or sequence is empty."""
        if len(value) == 0:
            raise GpulabConfigError(f"{name}={show(value)} must not be empty", name)

    def describe(self) -> str:
        return "non-empty"


NonEmpty = _NonEmpty()


def _normalised(text: str) -> str:
    """Lower case without spaces, dashes, underscores or dots: 'RTX4090' ~ 'RTX 4090'."""
    return re.sub(r"[\s_\-.]+", "", text.lower())


# No name of a choice is this long: a longer value is no near miss, and is not read further
# (difflib is quadratic; a 5-million-character name took seconds and gave nothing).
SUGGEST_MAX_LENGTH = 100
# A text held by more names than this is a family ("RTX"), not a near miss of one of them.
SUGGEST_MAX_HOLDERS = 5


def _is_typo(typed: str, option: str) -> bool:
    """A slip of the keyboard, not another name: letters dropped, added, swapped or changed.

    Numbers name a product, so they must be the same (B200 is not H200, 7B is not 70B); one
    changed letter is a typo only in a word long enough ("mistrel"), since in a short name it
    is another product ("l4" is not "t4").
    """
    if re.findall(r"\d+", typed) != re.findall(r"\d+", option):
        if sorted(typed) != sorted(option):
            return False
    if len(typed) == len(option):
        diff = [i for i, (a, b) in enumerate(zip(typed, option, strict=True)) if a != b]
        if len(diff) == 1:  # one changed letter (the digits are the same, checked above)
            return len(typed) >= 5
        # one swap of neighbours: "bf61" for "bf16"
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and typed[diff[0]] == option[diff[1]]
            and typed[diff[1]] == option[diff[0]]
        )
    short, long_ = sorted((typed, option), key=len)
    if len(long_) - len(short) > 2:
        return False
    rest = iter(long_)  # short is long_ with at most two characters left out
    return all(c in rest for c in short)


def suggestions(value: str, choices: Iterable[str]) -> list[str]:
    """The choices a near miss probably meant, best first ([] when none).

    The same name spelt otherwise ('RTX4090' -> 'RTX 4090'); else every choice that holds what
    was typed ('H100' -> 'H100 SXM', 'H100 PCIe'; not 'H200'), unless so many do that it is a
    family; else the closest choice that a typo would explain ('mi300x-bf61' -> 'mi300x-bf16').
    """
    options = [str(c) for c in choices]
    if not isinstance(value, str) or not options or len(value) > SUGGEST_MAX_LENGTH:
        return []
    wanted = _normalised(value)
    if not wanted:
        return []
    by_norm: dict[str, str] = {}
    for option in options:
        by_norm.setdefault(_normalised(option), option)
    if wanted in by_norm:
        return [by_norm[wanted]]
    holders = [option for norm, option in by_norm.items() if wanted in norm]
    if len(wanted) >= 2 and holders:
        return holders if len(holders) <= SUGGEST_MAX_HOLDERS else []
    close = difflib.get_close_matches(wanted, list(by_norm), n=len(by_norm), cutoff=0.6)
    return [by_norm[norm] for norm in close if _is_typo(wanted, norm)][:1]


def did_you_mean(value: str, choices: Iterable[str]) -> str | None:
    """The choice a near miss probably meant ('RTX4090' -> 'RTX 4090'), or None."""
    found = suggestions(value, choices)
    return found[0] if found else None


def did_you_mean_text(value: str, choices: Iterable[str]) -> str:
    """The phrase "did you mean 'A' or 'B'?" for a near miss (``suggestions``), else ""."""
    found = [repr(s) for s in suggestions(value, choices)]
    if not found:
        return ""
    listed = found[0] if len(found) == 1 else f"{', '.join(found[:-1])} or {found[-1]}"
    return f"did you mean {listed}?"


class OneOf(Rule):
    """The value is one of ``choices`` (a tuple, the keys of a mapping, or a function giving them).

    ``what`` names the kind of choice in the message ("weight format"); ``ignore_case``
    accepts "BF16" for "bf16". A function is called at check time, so a table that is loaded
    lazily (the GPU spec table) is read only when a value needs checking.
    """

    def __init__(
        self,
        choices: Iterable[str] | Mapping[str, Any] | Callable[[], Iterable[str]],
        what: str = "choice",
        ignore_case: bool = False,
    ) -> None:
        self._choices = choices
        self.what = what
        self.ignore_case = ignore_case

    def choices(self) -> list[str]:
        """The allowed values, in their order."""
        source = self._choices() if callable(self._choices) else self._choices
        return [str(c) for c in source]

    def check(self, name: str, value: Any) -> None:
        """Raise with a 'did you mean' unless ``value`` is one of the choices."""
        choices = self.choices()
        if value in choices or (self.ignore_case and value.lower() in {c.lower() for c in choices}):
            return
        guess = did_you_mean_text(value, choices)
        hint = f"; {guess} Use" if guess else "; use"
        raise GpulabConfigError(
            f"{name}={show(value)} is not a known {self.what}{hint} one of: {', '.join(choices)}.",
            name,
        )

    def describe(self) -> str:
        return f"one of {', '.join(self.choices())}"


# Aliases used across the library's signatures.
PositiveInt = Annotated[int, Positive]
NonNegativeInt = Annotated[int, AtLeast(0)]
PositiveFloat = Annotated[float, Positive]
NonNegativeFloat = Annotated[float, AtLeast(0)]
Fraction = Annotated[float, Between(0, 1)]
