"""No prediction answered in advance: the number a reveal prints must not be on the screen
before the learner is asked for it.

A prediction's answer is the number its reveal prints after "measured:" or "computed:"
(``gpulab.ui.predict``), at the precision it prints it. It is answered in advance when that
value, or the same value one unit off in its last printed digit, appears earlier.

Where "earlier" looks depends on how the answer was found. A computed answer is the same on
every machine, so it may be given away anywhere the learner reads first: an earlier cell's
source or outputs, the notebook's Markdown above the prediction, or the paired chapter page
(English as rendered, and the Chinese edition). A measured answer is decided by the learner's
machine in this run, so only what this run printed before the prediction can give it away: the
earlier cells' outputs, and among them only numbers printed with at least the answer's digits,
and not in another unit than the answer's (a percentage only for an answer in percent). Text
typed before the run (source, Markdown, a page) can match a measurement only by coincidence, and
so can a shorter number or another quantity: a peak of "333" GFLOP/s printed as a bound lies
within one last digit of a measured 333.0 on some runs, a "-0.3 %" error in a table within one of
a loss change of 0.29, a step's "4.05 ms" within one of a speed-up of 4.06 x. A measurement moves
from run to run, so such matches would make the check fail at random without finding anything;
the leak it is after, this run's measurement printed early, carries the measurement's digits and
its unit, or none. Values with fewer than two significant digits are skipped, and so are the
articles' own numbers, which a prediction may state (it tests them). The executed notebooks' half
runs in ``tests/notebooks``, the built pages' half in ``tests/site``.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, replace
from functools import cache

from tools.checks import notebook_code as code
from tools.notebook_meta import ROOT, cell_source

FACT_CHECK = ROOT / "src" / "gpulab" / "data" / "fact_check.json"
ARTICLE_FIELDS = ("quote", "claim_en")  # the articles' own words
REVEALED = re.compile(
    r"\b(?P<basis>measured|computed): (?P<number>[-+−]?[\d,]*\d(?:\.\d+)?(?:e[-+]?\d+)?)"
)
# a number in any text: digits not glued to a Latin word or another number ("A100" is a name,
# "2.13.0" a version)
NUMBER = re.compile(
    r"(?<![0-9A-Za-z_.,])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![0-9]|\.\d)"
)
# the unit written right after a number (a table puts a no-break space between them): time,
# bytes, rates, a ratio, a percentage, power, money
UNIT = re.compile(
    r"[ \u00a0\u202f]?(?P<unit>%|×|元"
    r"|(?:[A-Za-z]+/s|[nµu]?s|ms|[KMGT]i?B|x|times|W|[MG]Hz|CNY|USD)(?![A-Za-z0-9]))"
)
SAME_UNIT = {"×": "x", "times": "x", "us": "µs"}  # spellings of one unit


@dataclass(frozen=True)
class Printed:
    """A number as printed: its text, its value, the unit of its last digit, its digits, and the
    unit written after it ("" for none)."""

    text: str
    value: float
    last_digit: float  # 0.1 for "42.4", 10 for "1.37e+03"
    significant: int
    unit: str = ""

    def near(self, other: float) -> bool:
        """True when `other` is this value within one unit of the last printed digit."""
        return abs(abs(other) - abs(self.value)) <= self.last_digit * (1 + 1e-9)


def parse(text: str) -> Printed:
    """A printed number: "42.4", "1,372", "1.37e+03", "-0.05"."""
    clean = text.replace(",", "").replace("−", "-").lstrip("+-")
    mantissa, _, exponent = clean.lower().partition("e")
    exp = int(exponent) if exponent else 0
    whole, _, decimals = mantissa.partition(".")
    digits = (whole + decimals).lstrip("0")
    if not decimals:
        digits = digits.rstrip("0")  # "70" or "2000": their zeros may only place the digit
    return Printed(
        text,
        float(clean) * (-1 if text.lstrip().startswith(("-", "−")) else 1),
        10.0 ** (exp - len(decimals)),
        len(digits),
    )


def unit_after(text: str, end: int) -> str:
    """The unit written right after position `end` of a text ("" for none), one spelling per
    unit ("times" and "×" read as "x")."""
    match = UNIT.match(text, end)
    return SAME_UNIT.get(match["unit"], match["unit"]) if match else ""


def _printed_at(text: str, start: int, end: int) -> Printed:
    """The number written at text[start:end], with the unit written after it."""
    return replace(parse(text[start:end]), unit=unit_after(text, end))


def numbers_in(text: str) -> list[Printed]:
    """Every number written in a text, with the unit written after it."""
    return [_printed_at(text, *m.span()) for m in NUMBER.finditer(text)]


def same_quantity(answer_unit: str, number_unit: str) -> bool:
    """False when a number's unit says it is another quantity than an answer in `answer_unit`:
    a percentage is only ever a percentage; otherwise a unit left out tells nothing."""
    if "%" in (answer_unit, number_unit):
        return answer_unit == number_unit
    return not answer_unit or not number_unit or answer_unit == number_unit


def _last_reveal(cell: dict) -> re.Match | None:
    found = list(REVEALED.finditer(output_text(cell)))
    return found[-1] if found else None


def revealed(cell: dict) -> Printed | None:
    """The answer a reveal cell printed (its last "measured:" or "computed:" value), or None."""
    match = _last_reveal(cell)
    return _printed_at(match.string, *match.span("number")) if match else None


def output_text(cell: dict) -> str:
    """What a code cell's outputs show as text: streams, plain text, Markdown, HTML's words."""
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")))
        data = out.get("data", {})
        for mime in ("text/plain", "text/markdown"):
            parts.append("".join(data.get(mime, "")))
        if "text/html" in data:
            parts.append(html.unescape(re.sub(r"<[^>]+>", " ", "".join(data["text/html"]))))
    return "\n".join(parts)


@cache
def article_numbers() -> tuple[Printed, ...]:
    """The numbers of the articles' claims, in their own words (the fact-check's quotes)."""
    claims = json.loads(FACT_CHECK.read_text(encoding="utf-8"))["claims"]
    text = "\n".join(str(c.get(f, "")) for c in claims for f in ARTICLE_FIELDS)
    return tuple(numbers_in(text))


def is_article_number(number: Printed, articles: tuple[Printed, ...] | None = None) -> bool:
    """True when a number is one of the articles' own (a prediction may state them): the same
    value, as the article writes it."""
    values = {abs(n.value) for n in (article_numbers() if articles is None else articles)}
    return abs(number.value) in values


@dataclass(frozen=True)
class Answer:
    """A prediction of an executed notebook and the number its reveal printed."""

    name: str
    ask: int
    reveal: int
    printed: Printed
    measured: bool = False  # measured in this run (True) or computed, the same everywhere


def answers(executed: dict) -> list[Answer]:
    """The predictions of an executed notebook whose reveal printed a number."""
    out = []
    for p in code.prediction_cells(executed):
        match = _last_reveal(executed["cells"][p.reveal])
        if match is not None:
            out.append(
                Answer(
                    p.name,
                    p.ask,
                    p.reveal,
                    _printed_at(match.string, *match.span("number")),
                    measured=match["basis"] == "measured",
                )
            )
    return out


def earlier_texts(executed: dict, before: int, outputs_only: bool = False) -> dict[str, str]:
    """What a learner has seen above cell `before`: each earlier cell's source (unless
    `outputs_only`) and outputs."""
    texts = {}
    for i, cell in enumerate(executed.get("cells", [])[:before]):
        if not outputs_only:
            texts[f"cell {i}"] = cell_source(cell)
        if cell.get("cell_type") == "code":
            texts[f"cell {i} output"] = output_text(cell)
    return texts


def given_away(
    answer: Printed,
    texts: dict[str, str],
    articles: tuple[Printed, ...] | None = None,
    by_unit: bool = False,
    min_significant: int = 0,
) -> list[str]:
    """Where in `texts` ({where: text}) the answer, or it one unit off in its last digit, is;
    an article's own number, which the page may quote, does not count; with `by_unit`, neither
    does a number whose unit makes it another quantity (`same_quantity`), and only numbers
    printed with at least `min_significant` significant digits count."""
    return [
        f"{where} shows {n.text}"
        for where, text in texts.items()
        for n in numbers_in(text)
        if n.significant >= min_significant
        and answer.near(n.value)
        and (not by_unit or same_quantity(answer.unit, n.unit))
        and not is_article_number(n, articles)
    ]


def checked(answer: Answer, articles: tuple[Printed, ...] | None = None) -> bool:
    """True when the rule applies: two significant digits or more, not an article's number."""
    return answer.printed.significant >= 2 and not is_article_number(answer.printed, articles)


def problems(
    executed: dict,
    where: str,
    pages: dict[str, str] | None = None,
    articles: tuple[Printed, ...] | None = None,
    above: bool = True,
) -> list[str]:
    """Predictions of an executed notebook whose answer is shown in advance: above them (unless
    `above` is False), or, for a computed answer, on the `pages` ({label: text}) the learner
    reads first. A measured answer counts only this run's earlier outputs (the module says
    why)."""
    out = []
    for answer in answers(executed):
        if not checked(answer, articles):
            continue
        if answer.measured:
            texts = earlier_texts(executed, answer.ask, outputs_only=True) if above else {}
            by_unit, digits = True, answer.printed.significant
        else:
            texts = (earlier_texts(executed, answer.ask) if above else {}) | dict(pages or {})
            by_unit, digits = False, 0
        for hit in given_away(answer.printed, texts, articles, by_unit, digits):
            out.append(
                f"{where}: the prediction {answer.name!r} (cell {answer.ask}) is answered in "
                f"advance: its reveal prints {answer.printed.text}, and {hit}"
            )
    return list(dict.fromkeys(out))  # once per place, however often the page repeats it


def html_text(page: str) -> str:
    """The words of a built page's article, tags dropped, entities read, spaces plain."""
    article = re.search(r"<article\b.*?</article>", page, re.S)
    text = re.sub(r"<[^>]+>", " ", article.group(0) if article else page)
    return " ".join(html.unescape(text).replace("\u00a0", " ").split())
