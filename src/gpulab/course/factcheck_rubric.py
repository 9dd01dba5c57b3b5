"""The fact-check's rubric: its clauses, the parts of a claim, and the verdict the parts give.

Every entry of ``data/fact_check.json`` stores its claim's parts: for each, whether it holds
(``true``, ``false``, or ``null`` where no source or derivation settles it), whether a reader acts
on it, and the conditions it holds under but leaves unstated. :func:`derive` gives the verdict and
the RUBRIC clause from those alone, with one precedence (wrong, then misleading, then not
checkable, then correct), so a stored verdict that its parts do not give is an error at loading
(``gpulab.factcheck_claims``), not a judgment call left standing.

    derive((Part("the INT4 minimum", True, True), Part("the FP16 minimum", False, True)))
    # -> ("wrong", "wrong.actionable-part-false"): a part a reader acts on is false
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked, lenient
from gpulab.course.factcheck_words import claim_error

__all__ = [
    "PART_FIELDS",
    "RUBRIC",
    "RUBRIC_CLAUSES",
    "RULES",
    "VERDICTS",
    "Part",
    "derive",
    "parse_parts",
]

VERDICTS = ("correct", "wrong", "misleading", "not checkable")
# The one rubric every verdict is decided by: verdict -> its clauses, (clause id, wording), in
# the order derive() tries them. The appendix shows it at the top; each claim names its clause.
RUBRIC: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType(
    {
        "wrong": (
            ("wrong.false-any-reading", "every part of it is false"),
            (
                "wrong.actionable-part-false",
                "a part a reader acts on is false, whatever else in it holds",
            ),
        ),
        "misleading": (
            (
                "misleading.part-false",
                "a part that holds sits beside a false part that no reader acts on",
            ),
            (
                "misleading.unstated-conditions",
                "it holds only under conditions it does not state (a ratio that holds for some "
                "cards and not others is such a claim, and the entry gives its range)",
            ),
        ),
        "not checkable": (
            (
                "not-checkable.no-source",
                "no public source or derivation can settle a part a reader acts on",
            ),
        ),
        "correct": (
            (
                "correct.all-parts-hold",
                "every part holds as stated, with no condition left unstated",
            ),
        ),
    }
)
# clause -> the verdict it decides
RUBRIC_CLAUSES: Mapping[str, str] = MappingProxyType(
    {cid: verdict for verdict, clauses in RUBRIC.items() for cid, _ in clauses}
)
# How the clauses are applied, shown under the rubric (each translated language words them too).
RULES: Mapping[str, str] = MappingProxyType(
    {
        "precedence": "The verdicts are tried in the order above, and the first whose clause "
        "fits decides: wrong before misleading, misleading before not checkable, and correct "
        "only when no other fits.",
        "acted_on": "A part a reader acts on is one they run, set, buy, size a card by or expect "
        "a result from; a part that only explains or labels is not, and an aside that no "
        "source settles and no reader acts on is set aside.",
        "reading": "A claim is read as a reader following mainstream defaults would read it: "
        "Ollama's automatic split of a model that does not fit, NVIDIA's Windows driver "
        "spilling GPU memory into system RAM, a computer's usual two memory channels. Where a "
        "default decides the verdict, the entry names the reading.",
    }
)
PART_FIELDS = ("part", "holds", "acted_on", "unstated")  # one part of an entry's "parts"


@checked
@dataclass(frozen=True)
class Part:
    """One part of a claim, as the rubric reads it."""

    text: str  # the part in English, as a reader takes it (not shown on the page)
    holds: bool | None  # True, False, or None where no source or derivation settles it
    acted_on: bool  # a reader runs, sets, buys, sizes a card by or expects a result from it
    unstated: tuple[str, ...] = ()  # conditions it holds only under, which the claim leaves out


@checked
def derive(parts: tuple[Part, ...]) -> tuple[str, str]:
    """The verdict and the RUBRIC clause a claim of these parts gets (wrong first, correct last)."""
    if not parts:
        raise GpulabConfigError(
            "parts=() must not be empty: a claim has at least one part", "parts"
        )
    holds = [p.holds for p in parts]
    if all(h is False for h in holds):
        return "wrong", "wrong.false-any-reading"
    if any(p.acted_on and p.holds is False for p in parts):
        return "wrong", "wrong.actionable-part-false"
    if any(h is False for h in holds) and any(h is True for h in holds):
        return "misleading", "misleading.part-false"
    if any(p.unstated for p in parts if p.holds is True):
        return "misleading", "misleading.unstated-conditions"
    if not any(h is True for h in holds) or any(p.acted_on and p.holds is None for p in parts):
        return "not checkable", "not-checkable.no-source"
    return "correct", "correct.all-parts-hold"


def _text(cid: Any, field_name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise claim_error(cid, field_name, "must be non-empty text")
    return value


def _part(cid: Any, i: int, raw: Any) -> Part:
    """Entry `cid`'s part number `i`, checked field by field."""
    where = f"parts[{i}]"
    if not isinstance(raw, Mapping):
        raise claim_error(cid, where, f"must be an object with {', '.join(PART_FIELDS)}")
    missing = [k for k in PART_FIELDS if k not in raw]
    if missing:
        raise claim_error(cid, f"{where}.{missing[0]}", "is missing")
    unknown = sorted(set(raw) - set(PART_FIELDS))
    if unknown:
        raise claim_error(
            cid, f"{where}.{unknown[0]}", f"is not a field of a part; use {', '.join(PART_FIELDS)}"
        )
    text = _text(cid, f"{where}.part", raw["part"])
    if not (raw["holds"] is None or isinstance(raw["holds"], bool)):
        raise claim_error(
            cid,
            f"{where}.holds",
            "must be true, false or null (no source or derivation settles it)",
        )
    if not isinstance(raw["acted_on"], bool):
        raise claim_error(cid, f"{where}.acted_on", "must be true or false")
    if not isinstance(raw["unstated"], list):
        raise claim_error(cid, f"{where}.unstated", "must be a list of conditions (may be empty)")
    unstated = tuple(_text(cid, f"{where}.unstated[{j}]", c) for j, c in enumerate(raw["unstated"]))
    if unstated and raw["holds"] is not True:
        raise claim_error(
            cid,
            f"{where}.unstated",
            "only a part that holds can hold under conditions it leaves unstated; a false or "
            "unsettled part has none",
        )
    return Part(text, raw["holds"], raw["acted_on"], unstated)


@lenient("a fact_check.json value of any kind is reported as that claim's field")
def parse_parts(cid: Any, raw: Any) -> tuple[Part, ...]:
    """An entry's "parts" as Parts; a malformed one raises an error naming claim and field."""
    if not isinstance(raw, list) or not raw:
        raise claim_error(
            cid, "parts", f"must be a non-empty list of parts, each with {', '.join(PART_FIELDS)}"
        )
    return tuple(_part(cid, i, p) for i, p in enumerate(raw))
