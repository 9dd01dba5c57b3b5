"""The fact-check's claims: their fields, the two articles, loading and validation.

``load()`` reads ``data/fact_check.json`` and checks every entry field by field (the error names
the claim id and the field): its article and section, its parts, its verdict and the RUBRIC
clause that decided it (both must be the ones ``gpulab.factcheck_rubric.derive`` gives from the
parts), the reading it is judged under where a default decides it, its templates, its derivation
(a registered ``{"computed": name}``, or a ``{"source": ..., "note": ...}``) and each translated
language's words for it. The claims come back as frozen :class:`Claim` records sorted by id;
``gpulab.factcheck`` renders them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked
from gpulab.course import (  # noqa: F401 - they fill the registry
    claims_buying,
    claims_hardware,
    claims_models,
    claims_speed,
)
from gpulab.course.derivations import REGISTRY
from gpulab.course.factcheck_rubric import (
    RUBRIC,
    RUBRIC_CLAUSES,
    RULES,
    VERDICTS,
    Part,
    derive,
    parse_parts,
)
from gpulab.course.factcheck_words import (
    WHY_MAX_CHARS,
    check_template,
    check_translation,
    claim_error,
    placeholders,
    stored_translations,
)

__all__ = [
    "ALL_SECTIONS",
    "ARTICLES",
    "CHAPTERS",
    "RUBRIC",
    "RUBRIC_CLAUSES",
    "RULES",
    "SECTIONS",
    "SEED_FILES",
    "TEMPLATE_FIELDS",
    "VERDICTS",
    "Claim",
    "load",
    "validate",
]

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
ALL_SECTIONS = tuple(name for names in SECTIONS.values() for name in names)
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
    "parts",
)
_OPTIONAL = ("reason", "reading")


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
    # each part: whether it holds, whether a reader acts on it, the conditions it leaves unstated
    parts: tuple[Part, ...] = ()
    reason: str = ""  # template: why it cannot be checked (required for "not checkable")
    reading: str = ""  # the reading it is judged under, where a mainstream default decides it
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


def _check_parts(cid: Any, entry: Mapping[str, Any]) -> tuple[Part, ...]:
    """The entry's parts; its stored verdict and clause must be the ones they give."""
    parts = parse_parts(cid, entry["parts"])
    verdict, clause = derive(parts)
    if (verdict, clause) != (entry["verdict"], entry["rubric_clause"]):
        wrong_field = "verdict" if verdict != entry["verdict"] else "rubric_clause"
        raise claim_error(
            cid,
            wrong_field,
            f"is {entry[wrong_field]!r}, but its parts give {verdict!r} by {clause!r}: store "
            "the verdict and clause that gpulab.factcheck_rubric.derive gives, or correct a part",
        )
    return parts


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
    parts = _check_parts(cid, entry)
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
    reading = entry.get("reading", "")
    if "reading" in entry and (not isinstance(reading, str) or not reading.strip()):
        raise claim_error(
            cid, "reading", "must be non-empty text: the reading the claim is judged under"
        )
    check_template(cid, "reading", reading)
    english = (
        entry["rubric_why"],
        entry["correct_value"],
        reason,
        entry["derivation"].get("note", ""),
        reading,
    )
    for lang, by_id in translations.items():
        check_translation(cid, lang, by_id.get(str(cid)), english)
    return Claim(
        **{
            **entry,
            "derivation": MappingProxyType(dict(entry["derivation"])),
            "reason": reason,
            "reading": reading,
            "parts": parts,
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


@checked
def validate(
    data: Mapping[str, Any], translations: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Claim]:
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


@checked
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
