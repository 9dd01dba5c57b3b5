"""The translated editions' message catalogues: keep them in step with the pages, and check them.

The pipeline's gettext build (``tools/pipeline.py site``) writes one template per page into
``_build/<run>/gettext/_build/gettext/<page>.pot``. This tool merges those templates into
``locales/<code>/LC_MESSAGES/<page>.po`` for each translated language of the registry
(``gpulab.reference.languages``) and checks every translation:

- coverage: at least MIN_TRANSLATED of the messages are translated, none is fuzzy; a msgstr
  equal to its msgid counts as untranslated;
- no figure typed in translation: a msgstr holds no number its msgid lacks, except a month
  in digits where the msgid names it ("July 2024" is "2024 年 7 月", STYLE.md);
- nothing the build resolves is lost: the figure roles, claim references, links, substitutions
  and inline code of a msgid are all in its msgstr, and none is added; every equation is there
  with the same structure (its \\text{} labels may be translated, a gloss may be added);
- style (tools/checks/catalogue_style.py): as many bold and italic spans as rendered, no English
  left untranslated, and the accepted term of the glossary in STYLE.md.

    python tools/i18n.py update            # after a site build: new messages, fuzzy changes
    python tools/i18n.py check             # coverage and markup, as make test checks them
    python tools/i18n.py check-po FILE...  # one translator's files, without a build
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `tools.checks.catalogue_style` when this file runs as a script
from gpulab.reference import languages  # noqa: E402
from tools.checks import catalogue_style  # noqa: E402

LOCALES = ROOT / "locales"
LANG = languages.translated()[0]  # the language the functions below take when given none
MIN_TRANSLATED = 0.98

# What a translation must keep exactly, in the patterns the style checks share. A role's shown
# title may be translated ({doc}`Title <target>`), so only its name and target count.
ROLE, SUBSTITUTION, CODE = catalogue_style.ROLE, catalogue_style.SUBSTITUTION, catalogue_style.CODE
DISPLAY_MATH, INLINE_MATH = catalogue_style.DISPLAY_MATH, catalogue_style.INLINE_MATH
LINK = re.compile(r"\]\(([^)\s]+)\)|<(https?://[^>\s]+)>")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
WORD = re.compile(r"[A-Za-z]{2,}")
# units stay as written in Chinese (STYLE.md): "16 GB" or "300 W" alone has nothing to translate
UNITS = re.compile(
    r"\b(?:[kMGTP]i?B|[kMGT]?FLOP|TOPS|[mun]?s|[kMG]?Hz|[kM]?W|kWh|GT|x|min)(?:/s)?\b"
)


BIT_WIDTH = re.compile(r"\d+-bits?")  # "4-bit", "8-bit": 4 位, 8 位 (STYLE.md's glossary)
NAME_TOKEN = re.compile(r"[A-Za-z0-9][\w.+-]*")
TEXT_IN_MATH = re.compile(r"\\text\{([^{}]*)\}")
LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")


def is_math_block(msgid: str) -> bool:
    """True for a display equation's message: LaTeX with no $ delimiters and no prose."""
    return "$" not in msgid and bool(LATEX_COMMAND.search(CODE.sub(" ", msgid)))


def normalized_math(tex: str) -> str:
    """An equation as its structure: no spaces, and each \\text{...} label emptied, since a
    label may be translated and the mathematics may not."""
    return re.sub(r"\s+", "", TEXT_IN_MATH.sub(r"\\text{}", tex))


def _role_key(name: str, body: str) -> str:
    target = re.search(r"<([^<>]+)>\s*$", body)
    return f"{{{name}}}" + (target.group(1) if target and name != "math" else body)


@dataclass
class Markup:
    """What the build resolves in one message: each kind as a multiset of strings."""

    roles: Counter = field(default_factory=Counter)
    substitutions: Counter = field(default_factory=Counter)
    links: Counter = field(default_factory=Counter)
    math: Counter = field(default_factory=Counter)
    code: Counter = field(default_factory=Counter)
    numbers: Counter = field(default_factory=Counter)  # in the prose: outside every kind above


def markup(text: str) -> Markup:
    """The roles, substitutions, links, math, inline code and prose numbers of a message."""
    m = Markup()
    if is_math_block(text):
        m.math[normalized_math(text)] += 1
        m.numbers.update(NUMBER.findall(text))
        return m
    rest = text
    for match in ROLE.finditer(rest):
        m.roles[_role_key(*match.groups())] += 1
    rest = ROLE.sub(" ", rest)
    m.substitutions.update(s.replace(" ", "") for s in SUBSTITUTION.findall(rest))
    rest = SUBSTITUTION.sub(" ", rest)
    for match in LINK.finditer(rest):
        m.links[match.group(1) or match.group(2)] += 1
    rest = re.sub(r"\]\([^)\s]+\)", "]", LINK.sub(lambda mt: "]" if mt.group(1) else " ", rest))
    m.code.update(a or b for a, b in CODE.findall(rest))
    rest = CODE.sub(" ", rest)
    # numbers in the prose and in its math: a digit typed into an equation is typed too
    m.numbers.update(NUMBER.findall(rest))
    m.math.update(normalized_math(s) for s in DISPLAY_MATH.findall(rest))
    rest = DISPLAY_MATH.sub(" ", rest)
    m.math.update(normalized_math(s) for s in INLINE_MATH.findall(rest))
    return m


# a role that shows a title in front of its target: {doc}`Check your setup <../notebooks/00>`
TITLED_TARGET = re.compile(r"^(.*?\S)\s*<[^<>]+>$", re.S)


def _shown_title(role: re.Match) -> str:
    """What a role puts on the page that a translator words: the title in front of its target
    (the one part of a role the catalogues translate), else nothing."""
    titled = TITLED_TARGET.match(role.group(2))
    return f" {titled.group(1)} " if titled else " "


def has_words(msgid: str) -> bool:
    """True when a message has prose to translate once its markup is taken out (in an
    equation, only its \\text{} labels are prose)."""
    if is_math_block(msgid):
        return any(WORD.search(UNITS.sub(" ", label)) for label in TEXT_IN_MATH.findall(msgid))
    rest = ROLE.sub(_shown_title, msgid)
    for pattern in (SUBSTITUTION, LINK, DISPLAY_MATH, INLINE_MATH, CODE, UNITS):
        rest = pattern.sub(" ", rest)
    # names of products, formats and versions ("RTX 4090", "FP16 / BF16", "ZeRO-3") read the
    # same in Chinese: every token carries a digit or is an acronym; a bit width ("4-bit") does
    # not, Chinese writes it 4 位
    tokens = NAME_TOKEN.findall(rest)
    if tokens and all(
        re.search(r"\d|[A-Z].*[A-Z]", t) and not BIT_WIDTH.fullmatch(t) for t in tokens
    ):
        return False
    return bool(WORD.search(rest))


def problems(msgid: str, msgstr: str) -> list[str]:
    """What a translation loses or adds against its source, in words; [] when it keeps all."""
    source, target = markup(msgid), markup(msgstr)
    found = []
    # an equation must survive whole; a translation may add a gloss beside it
    lost_math = [tex for tex in source.math.elements() if not any(tex in t for t in target.math)]
    if lost_math:
        found.append(f"math missing: {', '.join(sorted(lost_math))}")
    for kind in ("roles", "substitutions", "links", "code"):
        lost = getattr(source, kind) - getattr(target, kind)
        added = getattr(target, kind) - getattr(source, kind)
        if lost:
            found.append(f"{kind} missing: {', '.join(sorted(lost))}")
        if added:
            found.append(f"{kind} not in the English: {', '.join(sorted(added))}")
    # a number the English has anywhere (in its prose or its markup) may stand in the prose
    allowed = Counter(NUMBER.findall(msgid))
    allowed.update(languages.months_in_digits(msgid, msgstr))
    typed = target.numbers - allowed
    if typed:
        found.append(f"numbers the English lacks: {', '.join(sorted(typed))}")
    return found


def translation_problems(
    msgid: str, msgstr: str, locales: Path = LOCALES, lang: str = LANG
) -> list[str]:
    """The markup problems of a translation, then its style problems against the glossary of
    its language's STYLE.md (none where a scratch set of catalogues has no STYLE.md)."""
    style = locales / lang / "STYLE.md"
    terms = catalogue_style.glossary(style) if style.exists() else ()
    return problems(msgid, msgstr) + catalogue_style.problems(msgid, msgstr, terms)


@dataclass
class PageStats:
    """The state of one page's catalogue against its template."""

    page: str
    total: int = 0
    translated: int = 0
    fuzzy: int = 0
    untranslated: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _read(path: Path) -> Catalog:
    with path.open("rb") as f:
        return read_po(f)


def _write(path: Path, catalog: Catalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        # one line per message (no wrapping), so a diff shows whole messages
        write_po(f, catalog, width=0, no_location=True, omit_header=False, include_previous=True)


def drop_untranslatable(pot_dir: Path) -> int:
    """Remove from the templates every message with no words (a lone role, a number, code)."""
    dropped = 0
    for pot in sorted(pot_dir.rglob("*.pot")):
        catalog = _read(pot)
        for message in list(catalog):
            if message.id and not has_words(message.id):
                del catalog[message.id]
                dropped += 1
        _write(pot, catalog)
    return dropped


def po_path(pot: Path, pot_dir: Path, locales: Path = LOCALES, lang: str = LANG) -> Path:
    """The catalogue of a template: <page>.pot -> locales/<lang>/LC_MESSAGES/<page>.po."""
    return locales / lang / "LC_MESSAGES" / pot.relative_to(pot_dir).with_suffix(".po")


def update(pot_dir: Path, locales: Path = LOCALES, lang: str = LANG) -> list[str]:
    """Merge each template into its catalogue: new messages empty, changed ones fuzzy (with the
    previous msgid, for the translator), removed ones dropped; catalogues of gone pages removed."""
    templates = sorted(pot_dir.rglob("*.pot"))
    if not templates:  # a failed extraction must not read as "every page is gone"
        raise ValueError(f"no message templates in {pot_dir}: the gettext build did not finish")
    written = []
    kept = set()
    for pot in templates:
        template = _read(pot)
        path = po_path(pot, pot_dir, locales, lang)
        kept.add(path)
        catalog = _read(path) if path.exists() else Catalog(locale=lang, project="gpulab course")
        catalog.update(template, update_creation_date=False)
        catalog.obsolete.clear()
        _write(path, catalog)
        written.append(str(path.relative_to(locales)))
    for stale in (locales / lang / "LC_MESSAGES").rglob("*.po"):
        if stale not in kept:
            stale.unlink()
    return written


def page_stats(pot: Path, pot_dir: Path, locales: Path = LOCALES, lang: str = LANG) -> PageStats:
    """Coverage and problems of one page's catalogue, its template being the truth."""
    page = pot.relative_to(pot_dir).with_suffix("").as_posix()
    stats = PageStats(page)
    path = po_path(pot, pot_dir, locales, lang)
    catalog = _read(path) if path.exists() else Catalog(locale=lang)
    for message in _read(pot):
        if not message.id:
            continue
        stats.total += 1
        entry = catalog.get(message.id)
        msgstr = entry.string if entry is not None else ""
        if entry is not None and entry.fuzzy:
            stats.fuzzy += 1
        elif msgstr and msgstr != message.id:
            stats.translated += 1
            stats.problems += [
                f"{page}: {p} in {message.id[:70]!r}"
                for p in translation_problems(message.id, msgstr, locales, lang)
            ]
            continue
        stats.untranslated.append(message.id)
    return stats


def check(
    pot_dir: Path, locales: Path = LOCALES, min_translated: float = MIN_TRANSLATED, lang: str = LANG
) -> list[str]:
    """Each failure of a language's catalogues against the templates, in words; [] if they pass."""
    pages = [page_stats(pot, pot_dir, locales, lang) for pot in sorted(pot_dir.rglob("*.pot"))]
    total = sum(p.total for p in pages)
    translated = sum(p.translated for p in pages)
    failures = [problem for p in pages for problem in p.problems]
    failures += [
        f"{p.page}: {p.fuzzy} fuzzy messages (review them, then clear the flag)"
        for p in pages
        if p.fuzzy
    ]
    if total and translated / total < min_translated:
        failures.append(
            f"{translated} of {total} messages translated ({translated / total:.1%}); "
            f"at least {min_translated:.0%} are needed"
        )
    return failures


def summary(pot_dir: Path, locales: Path = LOCALES, lang: str = LANG) -> str:
    """A table of per-page message counts in a language: total, translated, fuzzy, untranslated."""
    rows = [page_stats(pot, pot_dir, locales, lang) for pot in sorted(pot_dir.rglob("*.pot"))]
    width = max(len(r.page) for r in rows)
    lines = [
        f"{'page':<{width}}  {'total':>5}  {'translated':>10}  {'fuzzy':>5}  {'untranslated':>12}"
    ]
    everything = PageStats(
        "all",
        sum(p.total for p in rows),
        sum(p.translated for p in rows),
        sum(p.fuzzy for p in rows),
        [m for p in rows for m in p.untranslated],
    )
    for r in [*rows, everything]:
        lines.append(
            f"{r.page:<{width}}  {r.total:>5}  {r.translated:>10}  {r.fuzzy:>5}  "
            f"{len(r.untranslated):>12}"
        )
    return "\n".join(lines)


def check_files(paths: list[Path]) -> list[str]:
    """The markup and number problems of .po files on their own (for a translator)."""
    found = []
    for path in paths:
        for message in _read(path):
            if message.id and message.string and message.string != message.id:
                found += [
                    f"{path.name}: {p} in {message.id[:70]!r}"
                    for p in translation_problems(message.id, message.string)
                ]
    return found


def main(argv: list[str] | None = None) -> int:
    """Command line: update, check, or check-po."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["update", "check", "check-po"])
    parser.add_argument("files", nargs="*", type=Path, help="check-po: the .po files to check")
    parser.add_argument(
        "--mode",
        choices=["quick", "full"],
        default="quick",
        help="the pipeline run whose templates to use (default: quick)",
    )
    args = parser.parse_args(argv)
    pot_dir = ROOT / "_build" / args.mode / "gettext" / "_build" / "gettext"
    if args.command != "check-po" and not list(pot_dir.rglob("*.pot")):
        print(
            f"no templates in {pot_dir}: run `python tools/pipeline.py site --mode {args.mode}` "
            "first",
            file=sys.stderr,
        )
        return 2
    if args.command == "check-po":
        failures = check_files(args.files)
    else:
        failures = []
        for lang in languages.translated():
            if args.command == "update":
                for name in update(pot_dir, lang=lang):
                    print(f"updated {name}")
            print(summary(pot_dir, lang=lang))
            failures += check(pot_dir, lang=lang) if args.command == "check" else []
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
