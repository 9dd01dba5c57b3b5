"""The teaching report: per notebook or lab, what the teaching checks count, and its reading time.

Columns: main-body code cells, verified mechanism cells, predictions, pictures (the paired
page's ``/_pictures/`` figures, then the notebook's cells that draw a plot), the words of the
paired page (prose: fenced code left out, a role counted as one word) and of the notebook's
Markdown, and the reading time at 200 words a minute: a chapter notebook's counts its page and
its Markdown, a lab's its own Markdown (its page is read with the chapter's notebook).

    python tools/checks/teaching.py --report [PATHS]
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


def paired_page(path: str, root: Path = ROOT) -> str | None:
    """The chapter page a notebook or lab goes with: the page of its part in `_toc.yml`."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    stem = path.removesuffix(".ipynb")
    for part in toc.get("parts", []):
        files = [c["file"] for c in part.get("chapters", [])]
        if stem in files:
            page = next((f for f in files if f.startswith("book/")), None)
            return f"{page}.md" if page else None
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


def plot_cells(nb: dict) -> int:
    """Main-body cells that draw a plot."""
    names = code.bindings(nb)
    return sum(
        any(PLOT_CALL.match(c.written) for c in code.calls(cell_source(nb["cells"][i]), names))
        for i in cells.main_body(nb)
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
        "main-body code cells": len(cells.main_body(nb)),
        "mechanism cells": len(cells.verified_mechanisms(nb)),
        "predictions": len(code.prediction_cells(nb)),
        "pictures (page + plots)": f"{len(figures)} + {plot_cells(nb)}",
        "words (page + notebook)": f"{n_page} + {n_nb}",
        "reading (min)": round(read / WORDS_PER_MINUTE),
    }


def table(paths: list[str], root: Path = ROOT) -> str:
    """The report as a Markdown table, one row per notebook or lab of `paths`."""
    rows = [row(p, root) for p in paths if p.endswith(".ipynb")]
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)
