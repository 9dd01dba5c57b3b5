"""The teaching conventions on the built site: every picture shown with its SVG and alt text in
both editions, each reveal's output collapsed, and no prediction of a listed notebook answered
on its chapter page, in English or in Chinese (the half of the check that needs built pages;
tests/notebooks holds the half that reads the executed notebooks)."""

from __future__ import annotations

import json
import re

from tools.authoring import picture_registry
from tools.checks import answers, teaching
from tools.checks.teaching_report import paired_page
from tools.execution import runs

EDITIONS = ("", "zh_CN/")  # the English site's root, and the Chinese one's folder
# myst-nb's collapsed output: a <details> without `open`, below the cell's code
COLLAPSED = re.compile(r'<details class="admonition hide below-input[^"]*">')


def _pages(site):
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.parts)


def _images(html: str) -> list[tuple[str, str]]:
    """(src, alt) of every <img> of a page."""
    out = []
    for tag in re.findall(r"<img\b[^>]*>", html):
        src = re.search(r'\bsrc="([^"]*)"', tag)
        alt = re.search(r'\balt="([^"]*)"', tag)
        out.append((src.group(1) if src else "", alt.group(1) if alt else ""))
    return out


def test_every_picture_is_on_its_page_with_its_svg_and_alt_text(site):
    """A registered picture a page shows is an SVG the site carries, with the page's alt text
    (never empty, never the file's name), in each edition."""
    names = set(picture_registry.registered())
    shown = 0
    for page in _pages(site):
        for src, alt in _images(page.read_text(encoding="utf-8")):
            name = src.rsplit("/", 1)[-1].removesuffix(".svg")
            if "_images/" not in src or not src.endswith(".svg") or name not in names:
                continue
            shown += 1
            where = page.relative_to(site).as_posix()
            assert (page.parent / src).resolve().is_file(), f"{where}: {src} is not on the site"
            assert alt.strip() and not alt.endswith(".svg"), f"{where}: {src} has no alt text"
    # every picture a listed page shows is on the site, in both editions
    wanted = sum(
        len(re.findall(r"\{figure\}\s*/_pictures/", (runs.ROOT / p).read_text(encoding="utf-8")))
        for p in teaching.TEACH_FIRST
        if p.endswith(".md")
    )
    assert shown >= wanted * len(EDITIONS)


def test_each_reveal_is_collapsed_until_the_reader_opens_it(site):
    """Every cell tagged `hide-output` (a prediction's reveal) shows its output in a collapsed
    toggle on its page, in both editions: nothing in the pipeline drops the tag."""
    run = runs.RunConfig.from_env(mode="quick")
    for notebook in runs.discover():
        executed = runs.executed_path(notebook, run)
        if not executed.exists():
            continue
        cells = json.loads(executed.read_text(encoding="utf-8"))["cells"]
        tagged = sum(
            "hide-output" in c.get("metadata", {}).get("tags", []) and bool(c.get("outputs"))
            for c in cells
        )
        if not tagged:
            continue
        rel = notebook.relative_to(runs.ROOT).with_suffix(".html").as_posix()
        for edition in EDITIONS:
            html = (site / edition / rel).read_text(encoding="utf-8")
            assert len(COLLAPSED.findall(html)) >= tagged, f"{edition}{rel}"
            assert not re.search(r"<details[^>]*\bhide below-input[^>]*\bopen\b", html)


def test_no_prediction_is_answered_on_its_built_chapter_page(site):
    """The number each computed reveal of a listed notebook prints (±1 in its last digit) is not
    on its chapter page as built, in English or in Chinese (a measured one is this run's own)."""
    run = runs.RunConfig.from_env(mode="quick")
    found = []
    for path in teaching.TEACH_FIRST:
        page = paired_page(path) if path.endswith(".ipynb") else None
        if page is None:
            continue
        executed = json.loads(runs.executed_path(runs.ROOT / path, run).read_text(encoding="utf-8"))
        html_path = page.removesuffix(".md") + ".html"
        pages = {
            f"{edition}{html_path}": answers.html_text(
                (site / edition / html_path).read_text(encoding="utf-8")
            )
            for edition in EDITIONS
        }
        found += answers.problems(executed, path, pages, above=False)
    assert found == []
