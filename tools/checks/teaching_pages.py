"""The teaching checks of the pages, and of learner-facing text anywhere.

- The articles' claims and verdicts (``{claim}``, ``{verdict}``) appear only under the page's
  ``## What the articles said`` heading, up to the next ``## `` heading.
- A ``{figure}`` whose target is ``/_pictures/<name>.svg`` names a registered picture
  (``tools/staging/pictures.py``) and has a non-empty ``:alt:``; a chapter page
  (``book/NN_*.md``) shows at least one such picture.
- Learner-facing text names none of the course's machinery (``MACHINERY_WORDS`` in
  ``tools/checks/teaching.py``, matched as whole words whatever their case), nor a claim by its
  number in prose ("claim 12"; the ``{claim}`` role's own label is fine).

Each function returns the problems as sentences naming the file and the line or cell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from tools.checks.typed_figures import _prose_lines

ARTICLES_HEADING = "## What the articles said"
ARTICLE_ROLE = re.compile(r"\{(claim|verdict)\}`[^`]*`")
ANY_ROLE = re.compile(r"\{[\w:.-]+\}`[^`]*`")
FIGURE_OPEN = re.compile(r"^\s*(?P<fence>`{3,}|~{3,}|:{3,})\{figure\}\s*(?P<target>\S*)\s*$")
OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*)$")
PICTURE_TARGET = re.compile(r"^/_pictures/(?P<name>[^/]+)\.svg$")
CHAPTER_PAGE = re.compile(r"^book/\d\d_[^/]+\.md$")
CLAIM_NUMBER = re.compile(r"\bclaims?[ \u00a0](?:ids?[ \u00a0])?#?\d+", re.I)  # "claim 12"


def role_problems(text: str, where: str) -> list[str]:
    """{claim} and {verdict} roles outside the page's "What the articles said" section."""
    out, section = [], ""
    for number, line in _prose_lines(text):
        if line.startswith("## "):
            section = line.strip()
        for match in ARTICLE_ROLE.finditer(line):
            if section != ARTICLES_HEADING:
                out.append(
                    f"{where}:{number}: {match.group(0)} outside '{ARTICLES_HEADING}' "
                    f"(in {section or 'the top of the page'!r})"
                )
    return out


@dataclass
class FigureDirective:
    """A `{figure}` directive of a page: where, its target, its options."""

    line: int
    target: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def picture(self) -> str | None:
        """The registered picture's name it shows (`/_pictures/<name>.svg`), or None."""
        match = PICTURE_TARGET.match(self.target)
        return match["name"] if match else None


def figure_directives(text: str) -> list[FigureDirective]:
    """Every `{figure}` directive of a page's Markdown, with its `:key: value` options."""
    lines = text.splitlines()
    found = []
    for number, line in enumerate(lines, start=1):
        match = FIGURE_OPEN.match(line)
        if not match:
            continue
        directive = FigureDirective(number, match["target"])
        rest = lines[number:]
        if rest and rest[0].strip() == "---":  # options as a YAML block
            for option in rest[1:]:
                if option.strip() == "---":
                    break
                key, _, value = option.partition(":")
                directive.options[key.strip()] = value.strip().strip("\"'")
        else:
            for option in rest:
                opt = OPTION.match(option)
                if not opt:
                    break
                directive.options[opt["key"]] = opt["value"].strip()
        found.append(directive)
    return found


def picture_problems(text: str, where: str, pictures: Iterable[str]) -> list[str]:
    """Pictures a page shows that are not registered or have no alt text; a chapter page with
    no picture."""
    names = set(pictures)
    out = []
    shown = [d for d in figure_directives(text) if d.picture is not None]
    for d in shown:
        if d.picture not in names:
            out.append(
                f"{where}:{d.line}: {d.target} is not a registered picture (PICTURES of "
                "gpulab.ui.pictures_chNN)"
            )
        if not d.options.get("alt", "").strip():
            out.append(f"{where}:{d.line}: the figure {d.target} has no :alt: text")
    if CHAPTER_PAGE.match(where) and not shown:
        out.append(f"{where}: a chapter page shows at least one picture (/_pictures/<name>.svg)")
    return out


def _word_pattern(words: Iterable[str]) -> re.Pattern:
    # whole words: nothing alphanumeric before; no letter after ("figures_ch01" still counts)
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z])", re.I)


def _without_comments(text: str) -> str:
    """A text without its HTML comments, which no reader sees (their lines kept, blank)."""
    return re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)


def machinery_in(
    text: str, words: Iterable[str], claim_numbers: bool = True
) -> list[tuple[int, str]]:
    """(line, what) for each machinery word, and claim number in prose (unless
    `claim_numbers` is False: the fact-check's entries), in a text."""
    pattern = _word_pattern(words)
    found = []
    for number, line in enumerate(_without_comments(text).splitlines(), start=1):
        found += [(number, m.group(0)) for m in pattern.finditer(line)]
        if claim_numbers:
            prose = ANY_ROLE.sub(" ", line)
            found += [(number, m.group(0)) for m in CLAIM_NUMBER.finditer(prose)]
    return found


def page_prose(text: str) -> str:
    """A page's Markdown without its fenced code and MyST comments (`% ...`), which no reader
    sees (the lines kept, blank, so line numbers stay)."""
    kept = {n: line for n, line in _prose_lines(text) if not line.startswith("%")}
    return "\n".join(kept.get(n, "") for n in range(1, len(text.splitlines()) + 1))


BOX = re.compile(r"^> \*\*On a CPU\*\*.*\*\*On a GPU\*\*", re.S)


def box_problems(nb: dict, where: str) -> list[str]:
    """A chapter notebook whose second Markdown cell is not the box that says what a CPU shows
    and what a GPU shows instead (a blockquote: `> **On a CPU** ...` then `**On a GPU** ...`)."""
    if not where.startswith("notebooks/"):
        return []
    markdown = [c for c in nb.get("cells", []) if c.get("cell_type") == "markdown"]
    text = "".join(markdown[1]["source"]) if len(markdown) > 1 else ""
    if BOX.match(text.strip()):
        return []
    return [
        f"{where}: the second Markdown cell is not the CPU or GPU box (a blockquote opening "
        "with '> **On a CPU** you will see ...', then '**On a GPU** ...')"
    ]


def machinery_problems(
    texts: dict[str, str], where: str, words: Iterable[str], claim_numbers: bool = True
) -> list[str]:
    """Machinery words in learner-facing texts: {label ("cell 3", "line"): text}; claim numbers
    too unless `claim_numbers` is False."""
    words = tuple(words)
    out = []
    for label, text in texts.items():
        for number, hit in machinery_in(text, words, claim_numbers):
            at = f"{where}:{number}" if label == "page" else f"{where}: {label}, line {number}"
            out.append(f"{at}: {hit!r} names the course's machinery, not what a learner needs")
    return out
