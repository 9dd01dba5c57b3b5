"""Checks of a translation's style that the markup check cannot see (tools/i18n.py runs them).

Three checks, each on one message (an English msgid and its msgstr):

- emphasis: the translation renders as many strong and emphasis spans as the English, under
  CommonMark as MyST parses it. ``**用时：**20 分钟`` does not close (a closing ``**`` after
  full-width punctuation needs a space or punctuation after it), so its asterisks show;
- English left in a Chinese page: no run of three or more Latin-script words outside code,
  math, roles, link targets, names (Title Case, or one token like ``peer-to-peer``), quotes of
  English sources and a bracketed English gloss ("显存（VRAM）");
- the glossary: the terms of the translation's STYLE.md table "Glossary", one accepted term per
  concept, each with the variants that are flagged; matched outside code and math, by regular
  expressions that keep 元素 from matching 元.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from markdown_it import MarkdownIt

# What the build resolves or keeps as written (tools/i18n.py checks that a translation keeps
# them, with these patterns): stripped before the prose is checked.
ROLE = re.compile(r"\{([a-z][\w:.-]*)\}`([^`]*)`")
SUBSTITUTION = re.compile(r"\{\{\s*[\w.]+\s*\}\}")
DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$", re.S)
INLINE_MATH = re.compile(r"(?<![\\$\w])\$(?=\S)([^$\n]+?)(?<=\S)\$(?![\d$])")
CODE = re.compile(r"``(.+?)``|`([^`\n]+)`")
# a bare URL ends at white space or at full-width punctuation: Chinese text runs on after it
LINK_TARGET = re.compile(r"\]\([^)\s]*\)|<https?://[^>\s]+>|https?://[^\s“”‘’（），。；：、]+")
# a link whose target is outside the site: its text is the source's own title
OUTSIDE_LINK = re.compile(r"\[([^\]]*)\]\(https?://[^)\s]*\)")
QUOTED = re.compile(r"“[^”]*”|‘[^’]*’|\"[^\"\n]*\"|'[^'\n]{3,}'|《[^》]*》|「[^」]*」")
# a bracketed gloss: the English term at its first use (STYLE.md), "显存（VRAM）", or the English
# beside its translation, "（对抗扩散蒸馏，adversarial diffusion distillation）"
GLOSS = re.compile(r"[（(][^（）()]*[）)]")
# an English label the page keeps (a part's name as the program prints it), glossed in Chinese
# right after it: "**wait for data**（等待数据）"
GLOSSED_AFTER = re.compile(
    r"(?:[\s*]*[（(][^（）()\u4e00-\u9fff]*[）)])*"
    r"[\s*]*[（(][^（）()]*[\u4e00-\u9fff]"
)
LATIN_RUN = re.compile(r"(?<![\w.\-/])[A-Za-z][\w'’.\-/]*(?:[ \t]+[A-Za-z][\w'’.\-/]*){2,}")
MIN_LATIN_WORDS = 3

_COMMONMARK = MarkdownIt("commonmark")


def emphasis_counts(text: str) -> tuple[int, int]:
    """(strong spans, emphasis spans) of one message as CommonMark renders it."""
    strong = em = 0
    for token in _COMMONMARK.parseInline(text):
        for child in token.children or ():
            strong += child.type == "strong_open"
            em += child.type == "em_open"
    return strong, em


def emphasis_problems(msgid: str, msgstr: str) -> list[str]:
    """A problem when the translation renders another number of strong or emphasis spans."""
    (s_en, e_en), (s_tr, e_tr) = emphasis_counts(msgid), emphasis_counts(msgstr)
    if (s_en, e_en) == (s_tr, e_tr):
        return []
    return [
        f"emphasis as rendered: the English has {s_en} strong and {e_en} emphasis span(s), "
        f"the translation {s_tr} and {e_tr} (a `**` after full-width punctuation closes "
        "only before a space or punctuation)"
    ]


def prose(text: str) -> str:
    """A message's prose: code, math, roles, substitutions and link targets taken out."""
    for pattern in (ROLE, CODE, DISPLAY_MATH, INLINE_MATH, SUBSTITUTION):
        text = pattern.sub(" ", text)
    return LINK_TARGET.sub("]", OUTSIDE_LINK.sub(" ", text))


def _is_name(run: str) -> bool:
    # a product ("Intel Core i9-13900K"), a paper's or a menu's title: every word longer than
    # three letters is capitalised or carries a digit
    return all(w[0].isupper() or any(c.isdigit() for c in w) for w in run.split() if len(w) > 3)


def latin_runs(msgstr: str) -> list[str]:
    """Runs of MIN_LATIN_WORDS or more Latin-script words left in a translation's prose."""
    text = prose(msgstr)
    runs = []
    for m in LATIN_RUN.finditer(GLOSS.sub(lambda g: " " * len(g.group(0)), QUOTED.sub(" ", text))):
        glossed = GLOSSED_AFTER.match(QUOTED.sub(" ", text), m.end())
        if not _is_name(m.group(0)) and not glossed:
            runs.append(m.group(0))
    return runs


def latin_problems(msgstr: str) -> list[str]:
    """A problem for each run of English words left untranslated in a Chinese message."""
    return [f"English left untranslated: {run!r}" for run in latin_runs(msgstr)]


@dataclass(frozen=True)
class Term:
    """One row of the glossary: the concept, its accepted term, and the variants flagged."""

    concept: str
    accepted: str
    variants: re.Pattern


GLOSSARY_HEADING = "## Glossary"


@cache
def glossary(style: Path) -> tuple[Term, ...]:
    """The glossary table of a STYLE.md: | concept | accepted | variants (a regex) |."""
    text = style.read_text(encoding="utf-8")
    if GLOSSARY_HEADING not in text:
        raise ValueError(f"{style}: no {GLOSSARY_HEADING!r} section")
    section = text.split(GLOSSARY_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]  # after the head
    terms = []
    for row in rows:
        # a cell's own pipes (the regex's alternatives) are escaped, as Markdown needs
        cells = [
            c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))
        ]
        if len(cells) != 3:
            raise ValueError(f"{style}: a glossary row needs 3 cells, not {len(cells)}: {row}")
        concept, accepted, variants = cells
        terms.append(Term(concept, accepted, re.compile(variants.strip("`"))))
    return tuple(terms)


def glossary_problems(msgstr: str, terms: tuple[Term, ...]) -> list[str]:
    """A problem for each variant of a glossary term in a translation's prose."""
    rest = prose(msgstr)
    return [
        f"glossary: {m.group(0)!r} for {term.concept}: write {term.accepted}"
        for term in terms
        for m in term.variants.finditer(rest)
    ]


def problems(msgid: str, msgstr: str, terms: tuple[Term, ...]) -> list[str]:
    """The emphasis, English-left and glossary problems of one translated message."""
    return (
        emphasis_problems(msgid, msgstr) + latin_problems(msgstr) + glossary_problems(msgstr, terms)
    )
