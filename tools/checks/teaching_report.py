"""The teaching report: per notebook or lab, what the teaching checks count, and its reading time.

Columns: main-body code cells, verified mechanism cells, predictions, pictures (the paired
page's ``/_pictures/`` figures, then the notebook's cells that draw a plot), the words of the
paired page (prose: fenced code left out, a role counted as one word) and of the notebook's
Markdown, and the reading time at 200 words a minute: a chapter notebook's counts its page and
its Markdown, a lab's its own Markdown (its page is read with the chapter's notebook).

    python tools/checks/teaching.py --report [PATHS]   # default: every notebook and lab
    python tools/checks/teaching.py --report --pages   # and every page

A page's row (``--pages``): its registered pictures, its ``{claim}``/``{verdict}`` roles (all,
and those outside "What the articles said"), its machinery words, its words and reading time.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tools.checks import notebook_code as code
from tools.checks import teaching_cells as cells
from tools.checks import teaching_pages as pages
from tools.notebook_meta import ROOT, cell_source

WORDS_PER_MINUTE = 200
WORD = re.compile(r"[A-Za-z0-9\u00c0-\u024f]+(?:['’.-][A-Za-z0-9]+)*")
# calls that draw a plot in a cell: gpulab's plots, or matplotlib itself
PLOT_CALL = re.compile(r"^(?:plots\.\w+|plt\.\w+|.*\.(?:subplots|plot|bar|barh|scatter|imshow))$")
COLUMNS = (
    "file",
    "main-body code cells",
    "mechanism cells",
    "predictions",
    "pictures (page + plots)",
    "words (page + notebook)",
    "reading (min)",
)


def toc_files(root: Path = ROOT) -> list[str]:
    """Every page, notebook and lab of the course in `_toc.yml`'s order (the root first), as
    repository-relative paths with their suffix (`.md` or `.ipynb`, whichever exists)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    stems = [toc["root"]] if toc.get("root") else []
    stems += [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    found = []
    for stem in stems:
        for suffix in (".md", ".ipynb"):
            if (root / f"{stem}{suffix}").is_file():
                found.append(f"{stem}{suffix}")
                break
    return found


def paired_page(path: str, root: Path = ROOT) -> str | None:
    """The chapter page a notebook or lab goes with: the Markdown page of its part in
    `_toc.yml` (None for a notebook that is its own page, like an appendix)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    stem = path.removesuffix(".ipynb")
    for part in toc.get("parts", []):
        files = [c["file"] for c in part.get("chapters", [])]
        if stem in files:
            pages = [f for f in files if f.startswith("book/") and (root / f"{f}.md").is_file()]
            return f"{pages[0]}.md" if pages and not stem.startswith("book/") else None
    return None


def words(text: str) -> int:
    """Words a reader reads in Markdown: roles count as one word, tags and link targets none."""
    text = pages.ANY_ROLE.sub(" x ", text)
    # tags, link targets, a directive's fences and its options (":alt:", ":name:") are not read
    text = re.sub(
        r"<[^>]+>|\]\([^)]*\)|^\s*(?:`{3,}|:{3,}|~{3,}).*$|^\s*:[\w-]+:.*$", " ", text, flags=re.M
    )
    return len(WORD.findall(text))


def page_words(page: str | None, root: Path = ROOT) -> int:
    """Words of a page's prose (its fenced code left out); 0 for none."""
    if page is None or not (root / page).exists():
        return 0
    return words(pages.page_prose((root / page).read_text(encoding="utf-8")))


def markdown_words(nb: dict) -> int:
    """Words of a notebook's Markdown cells."""
    return sum(words(cell_source(c)) for c in nb["cells"] if c.get("cell_type") == "markdown")


def plot_cells(nb: dict, where: str = "") -> int:
    """Main-body cells that draw a plot."""
    names = code.bindings(nb)
    return sum(
        any(PLOT_CALL.match(c.written) for c in code.calls(cell_source(nb["cells"][i]), names))
        for i in cells.main_body(nb, where)
    )


def row(path: str, root: Path = ROOT) -> dict:
    """The report's row of one notebook or lab."""
    nb = json.loads((root / path).read_text(encoding="utf-8"))
    page = paired_page(path, root)
    page_text = (root / page).read_text(encoding="utf-8") if page else ""
    figures = [d for d in pages.figure_directives(page_text) if d.picture]
    n_page, n_nb = page_words(page, root), markdown_words(nb)
    read = n_nb + (n_page if path.startswith("notebooks/") else 0)
    return {
        "file": path,
        "main-body code cells": len(cells.main_body(nb, path)),
        "mechanism cells": len(cells.verified_mechanisms(nb, path)),
        "predictions": len(code.prediction_cells(nb)),
        "pictures (page + plots)": f"{len(figures)} + {plot_cells(nb, path)}",
        "words (page + notebook)": f"{n_page} + {n_nb}",
        "reading (min)": round(read / WORDS_PER_MINUTE),
    }


def page_row(path: str, words_to_avoid: tuple[str, ...], root: Path = ROOT) -> dict:
    """The report's row of one page: its pictures, its claim and verdict roles (all, and those
    outside "What the articles said"), its machinery words (of `words_to_avoid`), its words and
    reading time."""
    text = (root / path).read_text(encoding="utf-8")
    n = page_words(path, root)
    prose = pages.page_prose(text)
    return {
        "page": path,
        "pictures": sum(1 for d in pages.figure_directives(text) if d.picture),
        "article roles (all / outside)": (
            f"{len(pages.ARTICLE_ROLE.findall(prose))} / {len(pages.role_problems(text, path))}"
        ),
        "machinery words": len(pages.machinery_in(prose, words_to_avoid)),
        "words": n,
        "reading (min)": round(n / WORDS_PER_MINUTE),
    }


PAGE_COLUMNS = (
    "page",
    "pictures",
    "article roles (all / outside)",
    "machinery words",
    "words",
    "reading (min)",
)


def _markdown(rows: list[dict], columns: tuple[str, ...]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def table(paths: list[str], root: Path = ROOT) -> str:
    """The report as a Markdown table, one row per notebook or lab of `paths`."""
    return _markdown([row(p, root) for p in paths if p.endswith(".ipynb")], COLUMNS)


def page_table(paths: list[str], words_to_avoid: tuple[str, ...], root: Path = ROOT) -> str:
    """The pages' report as a Markdown table, one row per page (`.md`) of `paths`; the
    machinery words counted are `words_to_avoid` (teaching.MACHINERY_WORDS)."""
    rows = [page_row(p, words_to_avoid, root) for p in paths if p.endswith(".md")]
    return _markdown(rows, PAGE_COLUMNS)
