"""Figures typed by hand into the pages: find them, count them, and hold the count down.

The course's promise is that every figure a page states (bytes, bandwidth, FLOP/s, tokens/s,
bits per weight, watts, prices, ratios, percentages) is computed by gpulab and placed into the
text by the book's toolchain (a {fig} role, a claim reference), not typed. This tool finds
the numbers with a unit that are typed instead, in:

- the chapter pages, ``book/**/*.md``;
- the Markdown cells of every notebook and lab (``tools.execution.runs.discover``);
- the course's text fields of ``src/gpulab/data/fact_check.json``: ``correct_value``, ``reason``
  and a derivation's ``note`` (``quote`` and ``claim_en`` are the articles' own words, cited
  once, and are not counted).

What does not count: code (fenced blocks and inline code), MyST roles (a pasted figure, a claim
reference, a cross-reference), link targets and HTML attributes, product names that carry a
number ("A100 80GB", "RTX 3060 12GB", "70B"), a quotation of a third-party source followed
by its link, and the course's own timings, which are its design, not a property of a model or
a GPU: the minutes on a notebook's "**Time:**" line (every title cell states it: docs/design.md)
and the agenda durations of the workshop pages (minutes and hours under ``book/workshop/``).
Nor do definitions ("FP16 is 2 bytes", an FMA's 2 FLOPs), listed once, in ``DEFINITIONS``; a
chosen input ("a context of 8,192 tokens") and a count in a sentence carry no unit it counts.

None is left: ``make test`` fails on any (tests/unit/test_typed_figures.py).

    python tools/checks/typed_figures.py             # the count per file, and the total
    python tools/checks/typed_figures.py --show FILE # each typed figure of one file, with its line
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.execution.runs import discover  # noqa: E402

FACT_CHECK = ROOT / "src" / "gpulab" / "data" / "fact_check.json"
FACT_CHECK_FIELDS = ("correct_value", "reason")  # quote and claim_en: the article's own words

# The units a figure of the course comes in. Longer names first, so "GB/s" wins over "GB".
_UNITS = [
    r"TFLOP/s",
    r"GFLOP/s",
    r"PFLOP/s",
    r"MFLOP/s",
    r"FLOP/s",
    r"TFLOPS",
    r"GFLOPS",
    r"TOPS",
    r"FLOP per byte",
    r"FLOP/byte",
    r"FLOPs?",
    r"GFLOP",
    r"TFLOP",
    r"TB/s",
    r"GB/s",
    r"MB/s",
    r"KB/s",
    r"GiB/s",
    r"MiB/s",
    r"GT/s",
    r"Gbit/s",
    r"Gb/s",
    r"Gbps",
    r"TB",
    r"GB",
    r"MB",
    r"KB",
    r"kB",
    r"TiB",
    r"GiB",
    r"MiB",
    r"KiB",
    r"B",
    r"bytes?",
    r"bits per weight",
    r"bits?",
    r"bpw",
    r"tokens?/s",
    r"tok/s",
    r"samples?/s",
    r"images?/s",
    r"docs?/s",
    r"it/s",
    r"kWh",
    r"Wh",
    r"kW",
    r"W",
    r"GHz",
    r"MHz",
    r"ms",
    r"us",
    r"µs",
    r"ns",
    r"s",
    r"seconds?",
    r"min",
    r"minutes?",
    r"h",
    r"hours?",
    r"days?",
    r"weeks?",
    r"months?",
    r"years?",
    r"CNY",
    r"USD",
    r"RMB",
    r"EUR",
    r"yuan",
    r"dollars",
    r"%",
    r"°C",
]
_NUMBER = (
    r"(?<![\w.,/^{_])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
    r"(?:[–-](?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)?"
)
_WORD_UNITS = "|".join(u for u in _UNITS if u not in ("%", "°C"))
# A word unit needs a space (or the end of a math span) before it: "24 GB" is a figure, while
# "80GB" in "A100 80GB" and "70B" are names. % and °C may touch their number.
FIGURE = re.compile(
    rf"(?P<number>{_NUMBER})(?:(?:\$\s?|\s)(?P<unit>{_WORD_UNITS})|\s?(?P<symbol>%|°C))(?![\w/])"
    rf"|(?P<ratio>{_NUMBER})(?P<times>[x×])(?![\w])"
)
_FENCE = re.compile(r"^(```|~~~)")
_CODE_FENCE_OPEN = re.compile(
    r"^(```|~~~)\s*(python|bash|sh|console|text|json|yaml|toml|ini|js|"
    r"javascript|html|\s*$)"
)
_INLINE_CODE = re.compile(r"``[^`]+``|`[^`]+`")
_ROLE = re.compile(r"\{[\w:.-]+\}`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)|<[^>]+>|https?://\S+")
_CITED_QUOTE = re.compile(r"[\"“][^\"”]*[\"”]\s*\(?\[?[^\n]{0,80}?(\]\(|https?://)")


@dataclass(frozen=True)
class Figure:
    """One typed figure: where it is and what it says."""

    path: str  # relative to the repository
    line: int  # 1-based, within the page or the notebook cell's text
    text: str  # the figure as typed, "42.0 GB"
    context: str  # the line it is on


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the prose of a Markdown text: code fences are left out.

    A MyST directive fenced with backticks (```{note}) holds prose, and its bare closing fence
    closes it; only a fence that opens code (a language or none, outside a directive) starts
    lines that do not count.
    """
    out, in_code, directives = [], False, 0
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if _FENCE.match(stripped):
            if in_code:
                in_code = False
            elif stripped.lstrip("`~").startswith("{"):
                directives += 1  # a directive's fence: its body is prose
            elif directives and not stripped.strip("`~"):
                directives -= 1  # the bare fence that closes the directive
            elif _CODE_FENCE_OPEN.match(stripped):
                in_code = True
            continue
        if not in_code:
            out.append((number, line))
    return out


def _scrub(line: str) -> str:
    """The line without what never counts: code, roles, link targets, cited quotations."""
    line = _INLINE_CODE.sub(" ", line)
    line = _ROLE.sub(" ", line)
    line = _CITED_QUOTE.sub(" ", line)
    return _LINK_TARGET.sub(" ", line)


# Definitions, which a page types (CONTRIBUTING.md, "Rules of the pages"): the width of a number
# format or a unit fixed by definition, not a property of a model, a GPU or a price, so it cannot
# drift. The one allow-list: a typed figure that reads exactly as a key here is not counted.
DEFINITIONS = {
    "2 bytes": "an FP16 or BF16 value",
    "4 bytes": "an FP32 value",
    "4 bits": "a plain 4-bit weight, before scales",
    "16 bits": "an FP16 or BF16 value",
    "8 B": "a 64-bit memory channel's width",
    "16 bytes": "a parameter in mixed-precision AdamW: 2 + 2 + 4 + 4 + 4 (the ZeRO paper's 16Ψ)",
    "2 FLOPs": "a fused multiply-add, one multiply and one add",
    "2 FLOP": "the same, singular",
}

_DURATION_UNITS = {"min", "minutes", "minute", "h", "hour", "hours"}
_TIME_LINE = re.compile(r"^\s*\*\*Time:\*\*")


def _course_timing(match: re.Match, line: str, path: str) -> bool:
    """A duration of the course itself: a title cell's Time line, or a workshop agenda."""
    if match.group("unit") not in _DURATION_UNITS:
        return False
    return path.startswith("book/workshop/") or (
        bool(_TIME_LINE.match(line)) and match.group("unit") in ("minutes", "min")
    )


def figures_in_text(text: str, path: str) -> list[Figure]:
    """Every typed figure in one Markdown text."""
    found = []
    for number, line in _prose_lines(text):
        for m in FIGURE.finditer(_scrub(line)):
            if not _course_timing(m, line, path) and m.group(0).strip() not in DEFINITIONS:
                found.append(Figure(path, number, m.group(0).strip(), line.strip()[:160]))
    return found


def _notebook_markdown(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    parts = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            src = cell["source"]
            parts.append("".join(src) if isinstance(src, list) else src)
    return "\n\n".join(parts)


def _fact_check_text() -> str:
    claims = json.loads(FACT_CHECK.read_text(encoding="utf-8"))["claims"]
    lines = []
    for claim in claims:
        lines += [str(claim.get(f, "")) for f in FACT_CHECK_FIELDS]
        lines.append(str(claim.get("derivation", {}).get("note", "")))
    return "\n".join(lines)


def sources(root: Path = ROOT) -> dict[str, str]:
    """Every text the check reads: relative path -> its Markdown."""
    texts = {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted((root / "book").rglob("*.md"))
    }
    for path in discover(root):
        texts[path.relative_to(root).as_posix()] = _notebook_markdown(path)
    texts[FACT_CHECK.relative_to(root).as_posix()] = _fact_check_text()
    return texts


def count(root: Path = ROOT) -> dict[str, list[Figure]]:
    """Typed figures per file."""
    return {path: figures_in_text(text, path) for path, text in sources(root).items()}


def main(argv: list[str] | None = None) -> int:
    """Print the counts, or --show a file's figures; 1 when any figure is typed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", metavar="FILE", help="list each typed figure of one file")
    args = parser.parse_args(argv)
    found = count()
    if args.show:
        for fig in found.get(args.show, []):
            print(f"{fig.path}:{fig.line}: {fig.text:>14}   {fig.context}")
        return 0
    for path, figs in sorted(found.items(), key=lambda kv: -len(kv[1])):
        if figs:
            print(f"{len(figs):5d}  {path}")
    total = sum(len(f) for f in found.values())
    print(f"{total:5d}  typed figures in {len(found)} files")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
