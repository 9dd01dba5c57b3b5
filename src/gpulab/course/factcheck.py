"""The fact-check of the two source articles: every claim, its verdict and its correct value (appendix).

The claims live in ``data/fact_check.json``, one entry per claim id of the course's claim list
(ids 1-119, listed when the course began) plus the claims that list missed (ids 120 and up). Each entry
says what the article states (``quote``, in Chinese, and ``claim_en``), a ``verdict`` (one of
VERDICTS) and the rubric clause that decided it, the ``correct_value`` with units, how that
value is derived, and the course ``chapter`` that discusses it (0 is the set-up page), so that
chapters can link to ``fact_check.html#claim-<id>``.

A derivation is either ``{"computed": "<name>"}``, a function registered in ``gpulab.derivations``
(by ``gpulab.claims_hardware`` and ``gpulab.claims_models``) that recomputes
the value with gpulab (the catalogue, the spec table, the memory and perf estimators), or
``{"source": "<URL or publication>", "note": ...}``. Each computed function returns a
:class:`Computed` whose ``text`` (the headline) must appear in the entry's rendered
``correct_value``: ``check_all()`` reports any entry whose template no longer shows it.

    from gpulab import factcheck

    claims = factcheck.load()             # validated, sorted by id
    rows = factcheck.check_all(claims)    # every computed derivation, run now
    factcheck.rendered(claims[0])         # {"correct_value": ..., "reason": ..., "note": ...}, filled
    factcheck.table(rows)                 # a gpulab.tables.Table for the notebook

Figures that are not in gpulab's tables (a GTX 1650's bandwidth, BERT-base's size) are
constants in ``gpulab.derivations``, each with the source it comes from.

Every verdict is decided by one clause of the RUBRIC (``rubric_clause``, with ``rubric_why``, one
sentence). The explanation fields (``correct_value``, ``reason``, a derivation's ``note``) are
templates: ``{name:fmt}`` placeholders are filled from the computed derivation's
``Computed.values`` by :func:`rendered`, so no figure in them is typed by hand (a literal brace
is written ``{{`` or ``}}``). A placeholder the values lack raises GpulabConfigError naming the
claim and the field. The other editions read the same registry: each translated language's words
file (``data/words/<code>.json``, ``gpulab.reference.languages``) holds, by claim id, its
translation of every claim's TRANSLATED_FIELDS (the English placeholders kept, no number in
digits added), and the renderers take a ``lang`` (one of LANGS).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, checked
from gpulab.course import claims_hardware, claims_models  # noqa: F401 - they fill the registry
from gpulab.course.derivations import REGISTRY, Computed, compute
from gpulab.course.factcheck_words import (
    LANGS,
    RUBRIC_WORDS,
    SECTION_TITLES,
    SHORT_NAMES,
    TRANSLATED_FIELDS,
    VERDICT_NAMES,
    WHY_MAX_CHARS,
    WORDS,
    Lang,
    check_template,
    check_translation,
    claim_error,
    computed_line,
    placeholders,
    stored_translations,
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
    "compute",
    "computed_lines",
    "counts",
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

VERDICTS = ("correct", "wrong", "misleading", "not checkable")
# The one rubric every verdict is decided by: verdict -> its clauses, (clause id, wording). The
# appendix shows it at the top; each claim names the clause that decided it (rubric_clause).
RUBRIC: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType(
    {
        "correct": (("correct.all-parts-hold", "every part of the claim holds as stated"),),
        "misleading": (
            ("misleading.unstated-conditions", "it holds only under conditions it does not state"),
            ("misleading.part-false", "one part holds and another does not"),
            (
                "misleading.wrong-conclusion",
                "its figures are right and the conclusion drawn from them is not",
            ),
        ),
        "wrong": (
            ("wrong.false-any-reading", "false under any reasonable reading"),
            (
                "wrong.actionable-part-false",
                "the part a reader would act on is false under every condition",
            ),
        ),
        "not checkable": (
            ("not-checkable.no-source", "no public source or derivation can settle it"),
        ),
    }
)
RUBRIC_CLAUSES: Mapping[str, str] = MappingProxyType(
    {cid: verdict for verdict, clauses in RUBRIC.items() for cid, _ in clauses}
)  # clause -> verdict
TEMPLATE_FIELDS = ("correct_value", "reason", "note")  # the fields rendered from computed values
# 0 is the set-up page (book/setup.md); 1-7 are the chapters.
CHAPTERS = tuple(range(8))
SEED_FILES = ("000_d7744990b21f3d09.txt", "003_660cd49f24af1ba6.txt")
# The two articles, as the copies the course keeps give them: the original title, its English
# rendering, the author where the article names one. Neither copy says where it was published.
ARTICLES = {
    SEED_FILES[0]: {
        "short": "the GPU tutorial",
        "title": "AI工具GPU加速？2026最新完整教程与实操指南",
        "title_en": "GPU acceleration for AI tools? The complete 2026 tutorial and guide",
        "author": None,
    },
    SEED_FILES[1]: {
        "short": "the hardware guide",
        "title": "GPU，本地大模型训练 / 推理硬件完整选型指南",
        "title_en": "GPUs: a complete guide to choosing hardware for training and "
        "running large models locally",
        "author": "接好运鸭",
    },
}
# Each article's sections, in the article's order (the appendix groups claims by them).
SECTIONS = {
    SEED_FILES[0]: (
        "Core conclusions",
        "Step 1: hardware and driver",
        "Step 2: framework and GPU backend",
        "Step 3: configuring the AI tools",
        "Step 4: performance test",
        "Step 5: cloud GPUs",
        "Deep dive: why a GPU is faster",
        "Trends: FlashAttention-3, quantization, operator fusion",
        "Backend comparison: CUDA vs ROCm vs Metal",
        "Pitfalls: why GPU acceleration does not help",
        "Tools compared: large language models",
        "Tools compared: image generation",
        "Tools compared: Cursor",
        "Tools compared: video generation",
        "Case study: a 15,000 CNY workstation",
        "Summary: action guide",
        "FAQ",
    ),
    SEED_FILES[1]: (
        "1. What a GPU is",
        "2. The three key parameters",
        "3. Inference vs training",
        "4. CPU vs GPU table",
        "5. Hardware picks by scenario",
        "6. Five use cases",
        "7. Common myths",
    ),
}
_ALL_SECTIONS = tuple(name for names in SECTIONS.values() for name in names)
_REQUIRED = (
    "id",
    "seed_file",
    "section",
    "quote",
    "claim_en",
    "verdict",
    "rubric_clause",
    "rubric_why",
    "correct_value",
    "derivation",
    "chapter",
)
_OPTIONAL = ("reason",)


@dataclass(frozen=True)
class Claim:
    """One checked claim from data/fact_check.json."""

    id: int  # the claim list's id (1-119), or 120+ for claims the list missed
    seed_file: str  # which article (one of SEED_FILES)
    section: str  # the article's section, in English, for grouping
    quote: str  # the article's words (Chinese), short
    claim_en: str  # the claim in English
    verdict: str  # one of VERDICTS
    rubric_clause: str  # the RUBRIC clause that decided the verdict, e.g. "misleading.part-false"
    rubric_why: str  # one sentence: why that clause applies
    correct_value: str  # template: the right figure with units, or what is true instead
    derivation: Mapping[str, str] = field(hash=False)  # {"computed": name} or {"source", "note"}
    chapter: int  # the course chapter that discusses it; 0 = the set-up page
    reason: str = ""  # template: why it cannot be checked (required for "not checkable")
    # lang -> the translation of the claim's TRANSLATED_FIELDS, from that language's words file
    translations: Mapping[str, Mapping[str, str]] = field(default_factory=dict, hash=False)

    @property
    def anchor(self) -> str:
        """The HTML id of this claim on the appendix page: claim-<id>."""
        return f"claim-{self.id}"

    @property
    def computed_name(self) -> str | None:
        """The registered function that derives the correct value, if any."""
        return self.derivation.get("computed")


# ---------------------------------------------------------------- loading and validation


def _check_derivation(cid: Any, d: Any) -> None:
    if not isinstance(d, Mapping):
        raise claim_error(
            cid, "derivation", 'must be {"computed": name} or {"source": ..., "note": ...}'
        )
    if ("computed" in d) == ("source" in d):
        raise claim_error(cid, "derivation", "needs exactly one of 'computed' or 'source'")
    if set(d) - {"computed", "source", "note"}:
        raise claim_error(
            cid, "derivation", f"unknown keys {sorted(set(d) - {'computed', 'source', 'note'})}"
        )
    if "computed" in d and d["computed"] not in REGISTRY:
        raise claim_error(
            cid,
            "derivation",
            f"computed={d['computed']!r} is not a registered function; "
            f"known: {', '.join(sorted(REGISTRY))}",
        )
    if "source" in d and not (isinstance(d["source"], str) and d["source"].strip()):
        raise claim_error(cid, "derivation", "source must be a non-empty URL or publication")


def _check_rubric(cid: Any, verdict: str, clause: Any, why: Any) -> None:
    """The clause must be a RUBRIC clause of the claim's own verdict; the why one short sentence."""
    if not isinstance(clause, str) or clause not in RUBRIC_CLAUSES:
        raise claim_error(
            cid,
            "rubric_clause",
            f"{clause!r} is not a rubric clause; use one of: {', '.join(RUBRIC_CLAUSES)}",
        )
    if RUBRIC_CLAUSES[clause] != verdict:
        raise claim_error(
            cid,
            "rubric_clause",
            f"{clause!r} decides the verdict {RUBRIC_CLAUSES[clause]!r}, "
            f"not {verdict!r}; use one of: "
            f"{', '.join(c for c, _ in RUBRIC[verdict])}",
        )
    if not isinstance(why, str) or not why.strip():
        raise claim_error(
            cid, "rubric_why", "must be non-empty text: one sentence on why the clause applies"
        )
    if len(why) > WHY_MAX_CHARS:
        raise claim_error(
            cid, "rubric_why", f"must be one short sentence (at most {WHY_MAX_CHARS} characters)"
        )


def _claim(entry: Any, translations: Mapping[str, Mapping[str, Any]]) -> Claim:
    """One entry checked field by field; the error names the claim id and the field."""
    if not isinstance(entry, Mapping):
        raise GpulabConfigError(f"fact_check.json: every claim must be an object, got {entry!r}")
    cid = entry.get("id")
    if not isinstance(cid, int) or isinstance(cid, bool) or cid < 1:
        raise claim_error(cid, "id", "must be a positive integer")
    missing = [k for k in _REQUIRED if k not in entry]
    if missing:
        raise claim_error(cid, missing[0], "is missing")
    unknown = sorted(set(entry) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise claim_error(
            cid, unknown[0], f"is not a known field; allowed: {', '.join(_REQUIRED + _OPTIONAL)}"
        )
    if entry["seed_file"] not in SEED_FILES:
        raise claim_error(
            cid, "seed_file", f"{entry['seed_file']!r} is not one of {', '.join(SEED_FILES)}"
        )
    if entry["verdict"] not in VERDICTS:
        raise claim_error(
            cid, "verdict", f"{entry['verdict']!r} is not one of {', '.join(VERDICTS)}"
        )
    _check_rubric(cid, entry["verdict"], entry["rubric_clause"], entry["rubric_why"])
    if entry["section"] not in SECTIONS[entry["seed_file"]]:
        raise claim_error(
            cid,
            "section",
            f"{entry['section']!r} is not a section of {entry['seed_file']}; "
            f"use one of: {'; '.join(SECTIONS[entry['seed_file']])}",
        )
    for key in ("section", "quote", "claim_en", "correct_value"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise claim_error(cid, key, "must be non-empty text")
    if entry["chapter"] not in CHAPTERS or isinstance(entry["chapter"], bool):
        raise claim_error(cid, "chapter", "must be an integer from 0 (set-up page) to 7")
    reason = entry.get("reason", "")
    if entry["verdict"] == "not checkable" and not (isinstance(reason, str) and reason.strip()):
        raise claim_error(cid, "reason", "is required when the verdict is 'not checkable'")
    _check_derivation(cid, entry["derivation"])
    for key, text in (
        ("correct_value", entry["correct_value"]),
        ("reason", reason),
        ("note", entry["derivation"].get("note", "")),
    ):
        check_template(cid, key, text)
    if "source" in entry["derivation"]:
        _no_placeholders_without_values(cid, entry, reason)
    english = (
        entry["rubric_why"],
        entry["correct_value"],
        reason,
        entry["derivation"].get("note", ""),
    )
    for lang, by_id in translations.items():
        check_translation(cid, lang, by_id.get(str(cid)), english)
    return Claim(
        **{
            **entry,
            "derivation": MappingProxyType(dict(entry["derivation"])),
            "reason": reason,
            "translations": MappingProxyType(
                {
                    lang: MappingProxyType(dict(by_id[str(cid)]))
                    for lang, by_id in translations.items()
                }
            ),
        }
    )


def _no_placeholders_without_values(cid: Any, entry: Mapping[str, Any], reason: str) -> None:
    """A sourced claim has no computed values, so its texts may hold no placeholder."""
    for key, text in (
        ("correct_value", entry["correct_value"]),
        ("reason", reason),
        ("note", entry["derivation"].get("note", "")),
    ):
        names = placeholders(text)
        if names:
            raise claim_error(
                cid,
                key,
                f"placeholder {{{names[0]}}} needs a computed derivation; a sourced "
                "claim quotes its source's figure with the link instead",
            )


def validate(data: Any, translations: Mapping[str, Mapping[str, Any]] | None = None) -> list[Claim]:
    """Check parsed fact_check.json data and the claims' translations (lang -> id -> fields; the
    words files' by default); return its claims sorted by id (no duplicate ids)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("claims"), list):
        raise GpulabConfigError('fact_check.json must be an object with a "claims" list')
    translations = stored_translations() if translations is None else translations
    claims = [_claim(e, translations) for e in data["claims"]]
    seen = Counter(c.id for c in claims)
    dupes = sorted(i for i, n in seen.items() if n > 1)
    if dupes:
        raise claim_error(dupes[0], "id", "appears more than once")
    return sorted(claims, key=lambda c: c.id)


def load(path: str | Path | None = None) -> list[Claim]:
    """The packaged fact_check.json (or the file at `path`), validated."""
    if path is None:
        text = (resources.files("gpulab") / "data" / "fact_check.json").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    claims = validate(json.loads(text))
    ids = {str(c.id) for c in claims}
    for lang, by_id in stored_translations().items():
        extra = sorted(set(by_id) - ids, key=int)
        if extra:
            raise claim_error(
                extra[0], lang, f"data/words/{lang}.json translates a claim fact_check.json lacks"
            )
    return claims


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


def computed_lines(claim: Claim, result: Computed, lang: Lang = "en") -> tuple[str, str]:
    """A computed claim's headline and arithmetic in `lang`, its figures the computed ones."""
    if lang == languages.source():
        return result.text, result.how
    return tuple(
        computed_line(lang, claim.computed_name, part, getattr(result, part))
        for part in ("text", "how")
    )


def check_all(claims: Iterable[Claim] | None = None) -> list[dict[str, Any]]:
    """Run every computed derivation; one row per claim, computed ones with value and consistency.

    `correct_value` is the rendered text. `consistent` is True when the computed headline
    (Computed.text) appears in it, False when the template no longer shows what the arithmetic
    gives, None for sourced claims.
    """
    rows = []
    for c in load() if claims is None else claims:
        r = compute(c.computed_name) if c.computed_name else None
        text = rendered(c, r)["correct_value"]
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
            row.update(computed=r.text, how=r.how, consistent=r.text in text)
        rows.append(row)
    return rows


def counts(claims: Iterable[Claim]) -> dict[str, int]:
    """How many claims have each verdict, in VERDICTS order."""
    n = Counter(c.verdict for c in claims)
    return {v: n.get(v, 0) for v in VERDICTS}


def by_chapter(claims: Iterable[Claim]) -> dict[int, list[int]]:
    """Chapter -> the claim ids it discusses (0 is the set-up page), for cross-links."""
    out: dict[int, list[int]] = {}
    for c in sorted(claims, key=lambda c: c.id):
        out.setdefault(c.chapter, []).append(c.id)
    return dict(sorted(out.items()))


def by_section(claims: Iterable[Claim], seed_file: str) -> list[tuple[str, list[Claim]]]:
    """One article's claims grouped by section, sections in the article's order, claims by id."""
    if seed_file not in SECTIONS:
        raise GpulabConfigError(f"seed_file={seed_file!r} is not one of {', '.join(SEED_FILES)}")
    groups: dict[str, list[Claim]] = {name: [] for name in SECTIONS[seed_file]}
    for c in sorted(claims, key=lambda c: c.id):
        if c.seed_file == seed_file:
            groups[c.section].append(c)
    return [(name, group) for name, group in groups.items() if group]


def verdicts_by_chapter(claims: Iterable[Claim]) -> dict[int, dict[str, int]]:
    """Chapter -> {verdict: count}, every verdict present (zeros included), for a stacked bar chart."""
    out: dict[int, dict[str, int]] = {}
    for c in claims:
        out.setdefault(c.chapter, dict.fromkeys(VERDICTS, 0))[c.verdict] += 1
    return dict(sorted(out.items()))


def table(
    rows: list[dict[str, Any]],
    columns: tuple[str, ...] = ("id", "verdict", "computed", "consistent"),
    title: str = "",
) -> Table:
    """The rows of check_all as a gpulab Table (defaults: id, verdict, computed value, consistent)."""

    def fmt(v: Any) -> str:
        return "-" if v is None else ("yes" if v is True else "NO" if v is False else str(v))

    return Table(rows, list(columns), formats={c: fmt for c in columns}, title=title)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


@checked
def verdict_name(verdict: Annotated[str, OneOf(VERDICTS, "verdict")], lang: Lang = "en") -> str:
    """A verdict as the edition in `lang` words it: "misleading" is 有误导性 in Chinese."""
    return verdict if lang == languages.source() else VERDICT_NAMES[lang][verdict]


@checked
def section_title(
    section: Annotated[str, OneOf(_ALL_SECTIONS, "section")], lang: Lang = "en"
) -> str:
    """An article's section as the edition in `lang` titles it (Chinese: the article's own heading)."""
    return section if lang == languages.source() else SECTION_TITLES[lang][section]


@checked
def rubric_markdown(lang: Lang = "en") -> str:
    """The rubric as a CommonMark list, one line per verdict with its clauses and their ids."""
    source = lang == languages.source()
    words = (
        {"line": "- **{}**: {}.", "join": "; or ", "clause": "{} (`{}`)"}
        if source
        else WORDS[lang]["rubric_markdown"]
    )
    line, join, clause = words["line"], words["join"], words["clause"]
    lines = []
    for verdict, clauses in RUBRIC.items():
        wording = join.join(
            clause.format(text if source else RUBRIC_WORDS[lang][cid], cid) for cid, text in clauses
        )
        lines.append(line.format(verdict_name(verdict, lang), wording))
    return "\n".join(lines)


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
)
_ENTRY = {
    "en": (
        {SEED_FILES[0]: "tutorial", SEED_FILES[1]: "hardware guide"},
        "chapter {}",
        "the set-up page",
        "**Claim {id}** ({article}; discussed in {where}): {claim}",
        "- **Verdict:** {verdict} (`{clause}`: {why})",
        "- **Correct value:** {correct_value}",
        "- **Computed in this page** (`{name}`): {text}; {how}",
        "- **Source:** {source}",
        "- **Note:** {note}",
        "- **Why not checkable:** {reason}",
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
    """Markdown for a group of claims in `lang`, each under an HTML anchor id="claim-<id>" for links."""
    articles, chapter, setup, head, verdict, value, computed, source, note, reason = _ENTRY[lang]
    results = results or {}
    parts = []
    for c in claims:
        r = (results.get(c.id) or compute(c.computed_name)) if c.computed_name else None
        text = {k: _md_escape(v) for k, v in {**_texts(c, lang), **rendered(c, r, lang)}.items()}
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
                clause=c.rubric_clause,
                why=text["rubric_why"],
            ),
            value.format(**text),
            computed.format(name=c.computed_name, text=shown[0], how=shown[1])
            if r is not None
            else source.format(source=_md_escape(c.derivation["source"])),
        ]
        lines += [
            line.format(**text) for key, line in (("note", note), ("reason", reason)) if text[key]
        ]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


@checked
def attribution(seed_file: str, lang: Lang = "en") -> str:
    """One line crediting an article in `lang`: its title (in Chinese, and English), author and source."""
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
