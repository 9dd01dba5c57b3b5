"""The fact-check's languages: each translated language's words, and the checks of a translation.

A claim's explanation is a set of templates (``correct_value``, ``reason``, a derivation's
``note``), one sentence (``rubric_why``) and, where a default decides the verdict, the reading
it is judged under (``reading``). Each translated language of the registry
(``gpulab.reference.languages``) has, in its words file under ``factcheck``, its verdict names,
rubric and its rules, section titles, entry lines and, under ``claims`` by claim id, the
translation of every
claim's TRANSLATED_FIELDS. A translation keeps the English placeholders and types no figure
the English lacks; :func:`check_translation` says which claim and field break that.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, checked, lenient
from gpulab.reference import languages

__all__ = [
    "LANGS",
    "NUMBER",
    "RUBRIC_WORDS",
    "RULE_WORDS",
    "SECTION_TITLES",
    "SHORT_NAMES",
    "TRANSLATED_FIELDS",
    "VERDICT_NAMES",
    "WHY_MAX_CHARS",
    "WORDS",
    "Lang",
    "check_template",
    "check_translation",
    "claim_error",
    "computed_line",
    "label",
    "line_template",
    "placeholders",
    "split_template",
    "stored_translations",
]

LANGS = languages.codes()  # the editions' languages, English (the source) first
Lang = Annotated[str, OneOf(LANGS, "language")]
# each translated language's words for the fact-check, from its words file
WORDS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {lang: languages.words(lang, "factcheck") for lang in languages.translated()}
)
# lang -> verdict -> name
VERDICT_NAMES = {lang: words["verdicts"] for lang, words in WORDS.items()}
# lang -> clause id -> its wording in that language
RUBRIC_WORDS = {lang: words["rubric"] for lang, words in WORDS.items()}
# lang -> rule (gpulab.factcheck_rubric.RULES) -> its wording in that language
RULE_WORDS = {lang: words["rubric_rules"] for lang, words in WORDS.items()}
# what a translation of a claim holds (the last three where the English has them)
TRANSLATED_FIELDS = ("rubric_why", "correct_value", "reason", "note", "reading")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")  # a number in digits: "24", "1,008", "560.28.03"
WHY_MAX_CHARS = 300  # rubric_why is one short sentence
# lang -> article -> name
SHORT_NAMES = {lang: words["short_names"] for lang, words in WORDS.items()}
# lang -> section -> its title in that edition (Chinese: the article's own heading)
SECTION_TITLES = {lang: words["section_titles"] for lang, words in WORDS.items()}


@checked
def label(text: str, lang: Lang = "en") -> str:
    """A word of the fact-check page's summary tables (a title, a column, a cell such as
    "total") in `lang`; GpulabConfigError naming the words file where it has none."""
    if lang == languages.source():
        return text
    words = WORDS[lang].get("tables", {})
    if text not in words:
        raise GpulabConfigError(
            f"data/words/{lang}.json, factcheck.tables has no {text!r}: add its translation",
            "text",
        )
    return words[text]


@lenient("the id of a claim being validated may be any JSON value: it is named, not checked")
def claim_error(cid: Any, field_name: str, problem: str) -> GpulabConfigError:
    """The error of one claim's field: it names the claim id and the field."""
    return GpulabConfigError(f"fact_check.json claim {cid!r}, field {field_name!r}: {problem}")


@checked
def placeholders(template: str) -> list[str]:
    """The named placeholders of a template, in order: "{bound:.1f} of {x}" -> ["bound", "x"]."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


@lenient("a fact_check.json value of any kind is reported as that claim's field")
def check_template(cid: Any, field_name: str, text: str) -> None:
    """A template must parse, and name each placeholder (no "{}" and no "{0}")."""
    if not isinstance(text, str):
        raise claim_error(cid, field_name, "must be text")
    try:
        names = placeholders(text)
    except ValueError as exc:
        raise claim_error(
            cid,
            field_name,
            f"is not a valid template ({exc}); write a literal brace as {{{{ or }}}}",
        ) from None
    bad = [n for n in names if not n.isidentifier()]
    if bad:
        raise claim_error(
            cid, field_name, f"placeholder {{{bad[0]}}} must be a name, like {{bound_tok_s:.1f}}"
        )


@checked
def split_template(template: str) -> tuple[set[str], str]:
    """A template's placeholders as written ("{bound:.1f}") and its own text without them."""
    parts = list(string.Formatter().parse(template))
    return (
        {
            "{" + n + ("!" + c if c else "") + (":" + s if s else "") + "}"
            for _, n, s, c in parts
            if n is not None
        },
        "".join(text for text, *_ in parts),
    )


@lenient("a fact_check.json value of any kind is reported as that claim's field")
def check_translation(cid: Any, lang: str, zh: Any, texts: tuple[str, ...]) -> None:
    """A translation of each English text (in TRANSLATED_FIELDS' order): its placeholders, no
    new number."""
    english = {key: text for key, text in zip(TRANSLATED_FIELDS, texts, strict=True) if text}
    if zh is None:
        raise claim_error(cid, lang, "is missing")
    if not isinstance(zh, Mapping):
        raise claim_error(
            cid, lang, f"must be an object with the translation of {', '.join(english)}"
        )
    for key in [*english, *(k for k in zh if k not in english)]:
        name, text = f"{lang}.{key}", zh.get(key)
        if key not in english:
            raise claim_error(
                cid, name, f"has no English to translate; expected: {', '.join(english)}"
            )
        if not isinstance(text, str) or not text.strip():
            raise claim_error(cid, name, "must be non-empty text" if key in zh else "is missing")
        if key == "rubric_why" and len(text) > WHY_MAX_CHARS:
            raise claim_error(
                cid, name, f"must be one short sentence (at most {WHY_MAX_CHARS} characters)"
            )
        if key != "rubric_why":  # a template (rubric_why is plain text)
            check_template(cid, name, text)
        (ours, own), (theirs, their_own) = (
            (set(), t) if key == "rubric_why" else split_template(t) for t in (text, english[key])
        )
        if ours != theirs:
            raise claim_error(
                cid,
                name,
                f"has the placeholders {sorted(ours)}, the English {sorted(theirs)}: "
                "keep the same names and formats",
            )
        added = sorted(
            set(NUMBER.findall(own))
            - set(NUMBER.findall(their_own))
            - set(languages.months_in_digits(their_own, own))
        )
        if added:
            raise claim_error(
                cid,
                name,
                f"holds the number {added[0]}, which the English lacks: write number "
                "words as Chinese numerals (四倍), figures as the English does",
            )


def stored_translations() -> dict[str, Mapping[str, Any]]:
    """Each translated language's claims from its words file: lang -> claim id (text) -> fields."""
    return {lang: words["claims"] for lang, words in WORDS.items()}


# ---------------------------------------------------------------- the computed lines
# A derivation's headline and arithmetic (Computed.text and .how) are English lines built by
# the code. A translated language holds each one under factcheck.computed.<name>.<text|how>:
# "en", the English line with its numbers as positional placeholders ({0}, {1}, ...), and
# "line", its translation with the same placeholders. The numbers are the computed line's own,
# so none is typed; an English line that no longer matches "en" is a translation out of date.
_NUMBER_RUN = re.compile(r"\d+(?:[.,]\d+)*")
_NAME_BEFORE = re.compile(r"[\w.,\-]*$")  # what a number's hyphen is glued to: "DDR5-", "0.15-"


def _is_figure(text: str, start: int) -> bool:
    """Whether the number at `start` is a figure, not part of a name ("FP32", "i9-13900K",
    "Q4_0")."""
    before = text[start - 1] if start else " "
    if before.isalpha() or before == "_":
        return False
    if before == "-":  # a range ("0.15-2.59") is two figures; "DDR5-5600" is one name
        glued = _NAME_BEFORE.search(text[: start - 1]).group(0)
        return not re.search(r"[A-Za-z_]", glued)
    return True


@checked
def line_template(english: str) -> tuple[str, list[str]]:
    """An English computed line as a template, its figures as {0}, {1}, ... (braces escaped),
    and those figures: "FP32 peak 82.6 / 1.2" -> ("FP32 peak {0} / {1}", ["82.6", "1.2"])."""
    parts, figures, end = [], [], 0
    for m in _NUMBER_RUN.finditer(english):
        if _is_figure(english, m.start()):
            parts += [
                english[end : m.start()].replace("{", "{{").replace("}", "}}"),
                f"{{{len(figures)}}}",
            ]
            figures.append(m.group(0))
            end = m.end()
    parts.append(english[end:].replace("{", "{{").replace("}", "}}"))
    return "".join(parts), figures


@checked
def computed_line(
    lang: Annotated[str, OneOf(WORDS, "translated language")],
    name: str,
    part: Annotated[str, OneOf(("text", "how"), "part of a computed line")],
    english: str,
) -> str:
    """A computed line (`part` "text" or "how" of derivation `name`) in `lang`: its translation,
    filled with the English line's own figures; GpulabConfigError where none is up to date."""
    template, figures = line_template(english)
    where = f"data/words/{lang}.json, factcheck.computed.{name}.{part}"
    stored = WORDS[lang].get("computed", {}).get(name, {}).get(part)
    if stored is None:
        raise GpulabConfigError(
            f"{where} is missing: translate the English line {template!r}", "lang"
        )
    if stored.get("en") != template:
        raise GpulabConfigError(
            f"{where} is out of date: its English is {stored.get('en')!r}, the "
            f"line is now {template!r}",
            "lang",
        )
    ours = sorted(set(re.findall(r"(?<!\{)\{(\d+)\}", stored["line"])), key=int)
    if ours != [str(i) for i in range(len(figures))]:
        raise GpulabConfigError(
            f"{where}: the translation must show each of the figures "
            f"{{0}} to {{{len(figures) - 1}}} of its English",
            "lang",
        )
    return stored["line"].format(*figures)
