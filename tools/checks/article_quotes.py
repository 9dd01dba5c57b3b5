"""The Chinese edition quotes the two source articles in their own words (the quote check).

Which spans count as a quote of an article:

- in a Chinese catalogue (``locales/zh_CN/LC_MESSAGES/**/*.po``), every span a msgstr puts
  in corner brackets 「…」, and the same in the fact-check's Chinese words
  (``src/gpulab/data/words/zh_CN.json``). The Chinese edition keeps 「」 for the articles'
  own words and for nothing else; curly quotes “…” mark everything else (a term, a label, our
  own wording, a translated quote of an English source) and are never read as the article's
  words. A Chinese page that presents words as the article's puts them in 「」, or drops the
  quotation marks and says it paraphrases;
- in the fact-check registry (``src/gpulab/data/fact_check.json``), every claim's ``quote``:
  what a ``{claim}`` role renders in the Chinese edition. A quote of two places in an article
  separates them with " / ".

A span holds when it is a substring of one article after normalising both: Unicode NFKC
(full-width letters, digits and punctuation become half-width), curly quotes made straight,
all white space removed. "…" (or "...") marks cut text only: each piece between ellipses must
be found in the same article, in order, and the punctuation at either end of a piece is not
compared (a quote may end its sentence where the article runs on). A role in a quote
(``{fig}`article_buy_hours_per_day```, the article's number as the build prints it) is
compared as cut text. The English pages quote the articles in translation and are not
checked (CONTRIBUTING.md, STYLE.md).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"
FACT_CHECK = ROOT / "src" / "gpulab" / "data" / "fact_check.json"
WORDS = ROOT / "src" / "gpulab" / "data" / "words" / "zh_CN.json"

QUOTE = re.compile(r"「([^」]*)」")
ROLE = re.compile(r"\{[a-z][\w:.-]*\}`[^`]*`")
ELLIPSIS = re.compile(r"…+|\.{3,}")
TWO_PLACES = " / "
EDGE_PUNCTUATION = ",.;:!?、。，；：！？ "
STRAIGHT = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})


def normalise(text: str) -> str:
    """Text as compared: NFKC (full-width to half-width), straight quotes, no white space."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text).translate(STRAIGHT))


def _found_in_order(pieces: list[str], article: str) -> bool:
    """Whether each piece occurs in the (normalised) article after the previous one."""
    start = 0
    for piece in pieces:
        at = article.find(piece, start)
        if at < 0:
            return False
        start = at + len(piece)
    return True


def holds(span: str, articles: list[str]) -> bool:
    """Whether a quoted span is an article's words, "…" standing only for cut text."""
    pieces = [normalise(p).strip(EDGE_PUNCTUATION) for p in ELLIPSIS.split(ROLE.sub("…", span))]
    pieces = [p for p in pieces if p]
    if not pieces:
        return False
    texts = [normalise(a) for a in articles]
    return any(_found_in_order(pieces, text) for text in texts)


def quote_holds(quote: str, articles: list[str]) -> bool:
    """A fact-check quote holds as a whole, or each of its " / "-separated places does."""
    return holds(quote, articles) or all(holds(p, articles) for p in quote.split(TWO_PLACES))


def spans(msgstr: str) -> list[str]:
    """The spans a Chinese message marks as the articles' words: its 「…」."""
    return QUOTE.findall(msgstr)


def catalogue_spans(root: Path = CATALOGUES) -> Iterator[tuple[str, str]]:
    """(catalogue, span) for every 「…」 span of every Chinese catalogue."""
    for path in sorted(root.rglob("*.po")):
        with path.open("rb") as f:
            for message in read_po(f):
                if message.id and isinstance(message.string, str):
                    for span in spans(message.string):
                        yield str(path.relative_to(root)), span


def _strings(value: object) -> Iterator[str]:
    """Every string of a JSON value, however deep."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


def words_spans(path: Path = WORDS) -> Iterator[tuple[str, str]]:
    """(file, span) for every 「…」 span of the fact-check's Chinese words."""
    for text in _strings(json.loads(path.read_text(encoding="utf-8"))):
        for span in spans(text):
            yield path.name, span


def fact_check_quotes(path: Path = FACT_CHECK) -> Iterator[tuple[int, str]]:
    """(claim id, quote) for every claim of the fact-check registry."""
    for claim in json.loads(path.read_text(encoding="utf-8"))["claims"]:
        yield claim["id"], claim["quote"]


def problems(articles: list[str]) -> list[str]:
    """Each quote of the Chinese edition that is not the articles' words; [] if all are."""
    found = [
        f"claim {cid}: {quote!r}"
        for cid, quote in fact_check_quotes()
        if not quote_holds(quote, articles)
    ]
    marked = [*catalogue_spans(), *words_spans()]
    found += [f"{where}: 「{span}」" for where, span in marked if not holds(span, articles)]
    return found
