"""The fact-check of the two source articles: every claim, its verdict and correct value (appendix).

The claims live in ``data/fact_check.json``, one entry per claim id of the course's claim list
(ids 1-119, listed when the course began) plus the claims that list missed (ids 120 and up).
Each entry says what the article states (``quote``, in Chinese, and ``claim_en``), a
``verdict`` (one of VERDICTS) and the rubric clause that decided it, the ``correct_value`` with
units, how that value is derived, and the course ``chapter`` that discusses it (0 is the set-up
page), so that chapters can link to ``fact_check.html#claim-<id>``. ``gpulab.factcheck_claims``
loads and validates them; this module checks and renders them, and re-exports the loader.

A derivation is either ``{"computed": "<name>"}``, a function registered in
``gpulab.derivations`` (by ``gpulab.claims_hardware``, ``gpulab.claims_buying``,
``gpulab.claims_models`` and ``gpulab.claims_speed``) that recomputes the value with gpulab (the
catalogue, the spec table, the memory and perf estimators), or ``{"source": "<URL or
publication>", "note": ...}``. Each computed function returns a :class:`Computed` whose
``text`` (the headline) must appear in the entry's rendered ``correct_value``: ``check_all()``
reports any entry whose template no longer shows it.

    from gpulab import factcheck

    claims = factcheck.load()             # validated, sorted by id
    rows = factcheck.check_all(claims)    # every computed derivation, run now
    factcheck.rendered(claims[0])         # {"correct_value", "reason", "note"}, filled
    factcheck.table(rows)                 # a gpulab.tables.Table for the notebook

Figures that are not in gpulab's tables (a GTX 1650's bandwidth, BERT-base's size) are
constants in ``gpulab.derivations``, each with the source it comes from.

Every verdict is decided by one clause of the RUBRIC (``rubric_clause``, with ``rubric_why``,
one sentence), and both are derived from the claim's stored parts by
``gpulab.factcheck_rubric.derive`` (checked at loading); ``reading`` names the reading a claim is
judged under where a mainstream default decides it. The explanation fields
(``correct_value``, ``reason``, a derivation's ``note``) are templates: ``{name:fmt}``
placeholders are filled from the computed derivation's ``Computed.values`` by
:func:`rendered`, so no figure in them is typed by hand (a literal brace is written ``{{`` or
``}}``). A placeholder the values lack raises GpulabConfigError naming the
claim and the field. The other editions read the same registry: each translated language's
words file (``data/words/<code>.json``, ``gpulab.reference.languages``) holds, by claim id, its
translation of every claim's TRANSLATED_FIELDS (the English placeholders kept, no number in
digits added), and the renderers take a ``lang`` (one of LANGS).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, checked
from gpulab.course.derivations import REGISTRY, Computed, compute
from gpulab.course.factcheck_claims import (
    ALL_SECTIONS,
    ARTICLES,
    CHAPTERS,
    RUBRIC,
    RUBRIC_CLAUSES,
    RULES,
    SECTIONS,
    SEED_FILES,
    TEMPLATE_FIELDS,
    VERDICTS,
    Claim,
    load,
    validate,
)
from gpulab.course.factcheck_words import (
    LANGS,
    RUBRIC_WORDS,
    RULE_WORDS,
    SECTION_TITLES,
    SHORT_NAMES,
    TRANSLATED_FIELDS,
    VERDICT_NAMES,
    WORDS,
    Lang,
    claim_error,
    computed_line,
    label,
    placeholders,
)
from gpulab.reference import languages
from gpulab.ui.tables import Table

__all__ = [
    "ARTICLES",
    "CHAPTERS",
    "LANGS",
    "REGISTRY",
    "RUBRIC",
    "RUBRIC_CLAUSES",
    "RUBRIC_WORDS",
    "RULES",
    "SECTIONS",
    "SECTION_TITLES",
    "SEED_FILES",
    "SHORT_NAMES",
    "attribution",
    "TEMPLATE_FIELDS",
    "VERDICTS",
    "VERDICT_NAMES",
    "TRANSLATED_FIELDS",
    "Claim",
    "Computed",
    "by_chapter",
    "by_section",
    "check_all",
    "clause_wording",
    "compute",
    "computed_lines",
    "counts",
    "label",
    "load",
    "markdown",
    "placeholders",
    "rendered",
    "rubric_markdown",
    "section_title",
    "table",
    "validate",
    "verdict_name",
    "verdicts_by_chapter",
]

# ---------------------------------------------------------------- checking and rendering


def _fill(claim: Claim, field_name: str, template: str, values: Mapping[str, Any]) -> str:
    """One template filled from `values`; a missing placeholder names the claim and the field."""
    missing = [n for n in placeholders(template) if n not in values]
    if missing:
        source = f"computed={claim.computed_name!r}" if claim.computed_name else "a sourced claim"
        raise claim_error(
            claim.id,
            field_name,
            f"placeholder {{{missing[0]}}} is not among the values of "
            f"{source}; known: {', '.join(sorted(values)) or 'none'}",
        )
    try:
        return template.format_map(values)
    except (ValueError, TypeError) as exc:  # a format spec that does not suit the value
        raise claim_error(claim.id, field_name, f"cannot be filled: {exc}") from None


def _texts(claim: Claim, lang: str) -> dict[str, str]:
    """The claim's TRANSLATED_FIELDS in `lang`, unfilled ("" where it has none)."""
    if lang == languages.source():
        return dict(
            zip(
                TRANSLATED_FIELDS,
                (
                    claim.rubric_why,
                    claim.correct_value,
                    claim.reason,
                    claim.derivation.get("note", ""),
                    claim.reading,
                ),
                strict=True,
            )
        )
    translation = claim.translations.get(lang, {})
    texts = {key: translation.get(key, "") for key in TRANSLATED_FIELDS}
    missing = [key for key in ("correct_value", "rubric_why") if not texts[key]]
    if missing:
        raise claim_error(
            claim.id, f"{lang}.{missing[0]}", f"is missing: the {lang} edition needs it"
        )
    return texts


@checked
def rendered(claim: Claim, result: Computed | None = None, lang: Lang = "en") -> dict[str, str]:
    """The claim's correct_value, reason and note in `lang`, filled from its computed values."""
    texts = _texts(claim, lang)
    if result is None and claim.computed_name:
        result = compute(claim.computed_name)
    values = dict(result.values) if result is not None else {}
    if result is not None:  # "headline", the printed headline, as the edition prints it
        values["headline"] = computed_lines(claim, result, lang)[0]
    prefix = "" if lang == languages.source() else f"{lang}."
    return {key: _fill(claim, prefix + key, texts[key], values) for key in TEMPLATE_FIELDS}


@checked
def computed_lines(claim: Claim, result: Computed, lang: Lang = "en") -> tuple[str, str]:
    """A computed claim's headline and arithmetic in `lang`, its figures the computed ones."""
    if lang == languages.source():
        return result.text, result.how
    return tuple(
        computed_line(lang, claim.computed_name, part, getattr(result, part))
        for part in ("text", "how")
    )


@checked
def check_all(claims: Iterable[Claim] | None = None, lang: Lang = "en") -> list[dict[str, Any]]:
    """Run every computed derivation; one row per claim, computed ones with value and consistency.

    `correct_value` is the rendered text and `computed` the computed headline, both in `lang`.
    `consistent` is True when the English headline (Computed.text) appears in the English text,
    False when the template no longer shows what the arithmetic gives, None for sourced claims
    (a translation may word the headline differently; its figures are checked by
    check_translation).
    """
    rows = []
    for c in load() if claims is None else claims:
        r = compute(c.computed_name) if c.computed_name else None
        text = rendered(c, r, lang)["correct_value"]
        english = text if lang == languages.source() else rendered(c, r)["correct_value"]
        row = {
            "id": c.id,
            "chapter": c.chapter,
            "verdict": c.verdict,
            "rubric_clause": c.rubric_clause,
            "claim": c.claim_en,
            "correct_value": text,
            "computed": None,
            "how": None,
            "consistent": None,
            "source": c.derivation.get("source"),
        }
        if r is not None:
            headline, how = computed_lines(c, r, lang)
            row.update(computed=headline, how=how, consistent=r.text in english)
        rows.append(row)
    return rows


@checked
def counts(claims: Iterable[Claim]) -> dict[str, int]:
    """How many claims have each verdict, in VERDICTS order."""
    n = Counter(c.verdict for c in claims)
    return {v: n.get(v, 0) for v in VERDICTS}


@checked
def by_chapter(claims: Iterable[Claim]) -> dict[int, list[int]]:
    """Chapter -> the claim ids it discusses (0 is the set-up page), for cross-links."""
    out: dict[int, list[int]] = {}
    for c in sorted(claims, key=lambda c: c.id):
        out.setdefault(c.chapter, []).append(c.id)
    return dict(sorted(out.items()))


@checked
def by_section(
    claims: Iterable[Claim], seed_file: Annotated[str, OneOf(SEED_FILES, "article")]
) -> list[tuple[str, list[Claim]]]:
    """One article's claims grouped by section, sections in the article's order, claims by id."""
    if seed_file not in SECTIONS:
        raise GpulabConfigError(f"seed_file={seed_file!r} is not one of {', '.join(SEED_FILES)}")
    groups: dict[str, list[Claim]] = {name: [] for name in SECTIONS[seed_file]}
    for c in sorted(claims, key=lambda c: c.id):
        if c.seed_file == seed_file:
            groups[c.section].append(c)
    return [(name, group) for name, group in groups.items() if group]


@checked
def verdicts_by_chapter(claims: Iterable[Claim]) -> dict[int, dict[str, int]]:
    """Chapter -> {verdict: count}, every verdict present (zeros included), for a stacked bar
    chart."""
    out: dict[int, dict[str, int]] = {}
    for c in claims:
        out.setdefault(c.chapter, dict.fromkeys(VERDICTS, 0))[c.verdict] += 1
    return dict(sorted(out.items()))


@checked
def table(
    rows: list[dict[str, Any]],
    columns: tuple[str, ...] = ("id", "verdict", "computed", "consistent"),
    title: str = "",
    lang: Lang = "en",
) -> Table:
    """The rows of check_all as a gpulab Table (by default: id, verdict, computed value,
    consistent), its title, column names and verdicts in `lang` (words: :func:`label`)."""

    def fmt(v: Any) -> str:
        shown = "-" if v is None else ("yes" if v is True else "NO" if v is False else str(v))
        return label(shown, lang) if isinstance(v, bool) else shown

    formats: dict[str, Any] = {c: fmt for c in columns}
    if "verdict" in columns:
        formats["verdict"] = lambda v: verdict_name(v, lang)
    return Table(
        rows,
        list(columns),
        headers={c: label(c, lang) for c in columns},
        formats=formats,
        title=label(title, lang) if title else "",
    )


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


# Another entry named in an English entry's text ("see claim 26"): a link to it, worded as the
# page labels its entries (the Chinese edition's "说法 26" is the {claim} role's own label).
_CROSS_REFERENCE = re.compile(r"\b[Cc]laim (\d+)\b")


def _linked(text: str) -> str:
    return _CROSS_REFERENCE.sub(r"[entry \1](#claim-\1)", text)


@checked
def verdict_name(verdict: Annotated[str, OneOf(VERDICTS, "verdict")], lang: Lang = "en") -> str:
    """A verdict as the edition in `lang` words it: "misleading" is 有误导性 in Chinese."""
    return verdict if lang == languages.source() else VERDICT_NAMES[lang][verdict]


@checked
def section_title(
    section: Annotated[str, OneOf(ALL_SECTIONS, "section")], lang: Lang = "en"
) -> str:
    """An article's section as the edition in `lang` titles it (Chinese: the article's own
    heading)."""
    return section if lang == languages.source() else SECTION_TITLES[lang][section]


@checked
def clause_wording(
    clause: Annotated[str, OneOf(tuple(RUBRIC_CLAUSES), "clause")], lang: Lang = "en"
) -> str:
    """A rubric clause as a reader reads it in `lang` ("every part of it is false"), not its id."""
    if lang != languages.source():
        return RUBRIC_WORDS[lang][clause]
    return next(text for cid, text in RUBRIC[RUBRIC_CLAUSES[clause]] if cid == clause)


@checked
def rubric_markdown(lang: Lang = "en") -> str:
    """The rubric in CommonMark: one line per verdict, in precedence order, with its clauses in
    words, then the rules that apply them (precedence, what a reader acts on, the reading)."""
    source = lang == languages.source()
    words = {"line": "- **{}**: {}.", "join": "; or "} if source else WORDS[lang]["rubric_markdown"]
    line, join = words["line"], words["join"]
    lines = []
    for verdict, clauses in RUBRIC.items():
        wording = join.join(clause_wording(cid, lang) for cid, _ in clauses)
        lines.append(line.format(verdict_name(verdict, lang), wording))
    rules = RULES if source else RULE_WORDS[lang]
    return "\n".join(lines) + "\n\n" + "\n\n".join(rules[key] for key in RULES)


# An entry's words: the articles, "chapter N", the set-up page, then its lines; in English here,
# in a translated language from its words file ("entry", the same keys).
_ENTRY_KEYS = (
    "chapter",
    "setup",
    "head",
    "verdict",
    "correct_value",
    "computed",
    "source",
    "note",
    "reason",
    "reading",
)
_ENTRY = {
    "en": (
        {SEED_FILES[0]: "tutorial", SEED_FILES[1]: "hardware guide"},
        "chapter {}",
        "the set-up page",
        "**{id}.** {claim} ({article}; discussed in {where})",
        "- **Verdict:** {verdict}, since {clause}. {why}",
        "- **Correct value:** {correct_value}",
        "- **Computed in this page:** {text}; {how}",
        "- **Source:** {source}",
        "- **Note:** {note}",
        "- **Why not checkable:** {reason}",
        "- **Reading:** {reading}",
    ),
    **{
        lang: (SHORT_NAMES[lang], *(words["entry"][key] for key in _ENTRY_KEYS))
        for lang, words in WORDS.items()
    },
}


@checked
def markdown(
    claims: Iterable[Claim], results: Mapping[int, Computed] | None = None, lang: Lang = "en"
) -> str:
    """Markdown for a group of claims in `lang`, each under an HTML anchor id="claim-<id>" for
    links."""
    articles, chapter, setup, head, verdict, value, computed, source, note, reason, reading = (
        _ENTRY[lang]
    )
    results = results or {}
    parts = []
    for c in claims:
        r = (results.get(c.id) or compute(c.computed_name)) if c.computed_name else None
        texts = {**_texts(c, lang), **rendered(c, r, lang)}
        text = {k: _linked(_md_escape(v)) for k, v in texts.items()}
        where = chapter.format(c.chapter) if c.chapter else setup
        shown = [_md_escape(line) for line in computed_lines(c, r, lang)] if r is not None else []
        lines = [
            f'<a id="{c.anchor}"></a>',
            "",
            head.format(
                id=c.id, article=articles[c.seed_file], where=where, claim=_md_escape(c.claim_en)
            ),
            "",
            f"> {_md_escape(c.quote)}",
            "",
            verdict.format(
                verdict=verdict_name(c.verdict, lang),
                clause=clause_wording(c.rubric_clause, lang),
                why=text["rubric_why"],
            ),
            *([reading.format(reading=text["reading"])] if text["reading"] else []),
            value.format(**text),
            computed.format(name=c.computed_name, text=shown[0], how=shown[1])
            if r is not None
            else source.format(source=_linked(_md_escape(c.derivation["source"]))),
        ]
        lines += [
            line.format(**text) for key, line in (("note", note), ("reason", reason)) if text[key]
        ]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


@checked
def attribution(seed_file: str, lang: Lang = "en") -> str:
    """One line crediting an article in `lang`: its title (in Chinese, and English), author and
    source."""
    if seed_file not in ARTICLES:
        raise GpulabConfigError(
            f"seed_file={seed_file!r} is not one of {', '.join(SEED_FILES)}", "seed_file"
        )
    a = ARTICLES[seed_file]
    if lang != languages.source():
        words = WORDS[lang]["attribution"]
        author = words["author"].format(author=a["author"]) if a["author"] else words["no_author"]
        return words["line"].format(title=a["title"], title_en=a["title_en"], author=author)
    author = f"by {a['author']}" if a["author"] else "whose author the article does not name"
    return (
        f"“{a['title']}” (“{a['title_en']}”), {author}; the copy the course keeps does not "
        "say where it was published"
    )
