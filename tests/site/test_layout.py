"""Every page of both editions laid out at a laptop's width (1,280 px) and a phone's (390 px).

What a reader found on the built site, each a check here:

- no page scrolls sideways (the document is no wider than the window);
- a figure in a table keeps its unit on its line ("671.03 GB", never "671.03" over "GB");
- a verdict ({verdict} role) in a claims table is never broken between lines, and its cell is
  at least ``VERDICT_MIN_EM`` wide;
- a code block wider than its box scrolls in it or wraps, never cut off; and lab 5's slow
  loop, the code its learner must study, reads whole at 1,280 px: no line of it needs
  scrolling.

The oracle is the browser's own layout: where each character is drawn (Range.getClientRects),
how wide a box is and how wide its content. The pages are measured once per width, one browser
context each; the measurements are written beside the site (``layout_report.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.site.conftest import open_offline
from tests.site.test_site import _pages

WIDTHS = (1280, 390)
EDITIONS = ("en", "zh_CN")
ZH = "zh_CN"
# A verdict is a word or two ("wrong", "partly correct"; Chinese 错误, 基本正确): 3em holds the
# shortest Chinese one, two characters of 1em each, with the cell's 0.8em padding either side,
# so no verdict column is narrower than its shortest word; the longer ones are kept on one
# line by the one-line check, whatever the column's width.
VERDICT_MIN_EM = 3
LAB5 = "labs/05_fix_slow_training_loop_lab.html"
SLOW_LOOP = "def slow_training_loop("
CHECKS = ("sideways scroll", "number split from its unit", "verdict cell", "code cut off")

MEASURE = r"""async ([verdictEm, slowLoop]) => {
  await document.fonts.ready;
  await (window.MathJax?.startup?.promise ?? Promise.resolve());
  const root = document.documentElement;
  const found = {"sideways scroll": [], "number split from its unit": [], "verdict cell": [],
                 "code cut off": []};
  const snippet = el => el.textContent.replace(/\s+/g, ' ').trim().slice(0, 60);
  const shown = el =>
    el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  // what sticks out of the window: the deepest elements outside every scroll or clip box
  const inside = el => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== 'visible') return true;
    }
    return false;
  };
  if (root.scrollWidth > root.clientWidth + 1) {
    const out = el => el.getBoundingClientRect().right > root.clientWidth + 1;
    const wide = [...document.body.querySelectorAll('*')].filter(el => shown(el) && out(el)
      && !inside(el) && ![...el.children].some(c => out(c) && !inside(c)));
    const tag = el => `<${el.tagName.toLowerCase()}.${[...el.classList].join('.')}>`;
    found["sideways scroll"].push(`${root.scrollWidth} px wide in a ${root.clientWidth} px window: `
      + wide.slice(0, 3).map(el => `${tag(el)} ${snippet(el)}`).join(' | '));
  }
  // the header's buttons (launch, language, ...) all within the window, none clipped
  const buttons = '.bd-header-article .article-header-buttons > *';
  for (const button of document.querySelectorAll(buttons)) {
    if (shown(button) && button.getBoundingClientRect().right > root.clientWidth + 1) {
      found["sideways scroll"].push(
        `header button past the window's edge: ${snippet(button) || button.className}`);
    }
  }
  // a number and its unit in one cell, the space between them (breakable or not) in one text
  // node or at the edge of two (a glued number, then " GB"): the last digit and the unit's first
  // letter must be drawn on the same line
  const units = [/B|kB|KB|MB|GB|TB|PB|KiB|MiB|GiB|TiB|GB\/s|TB\/s|[GTP]FLOP\/s|tokens\/s|tok\/s/,
                 /W|kW|ms|µs|us|ns|s|%|bits?|GHz|MHz|h|min/].map(r => r.source).join('|');
  const unit = new RegExp(String.raw`(\d)(\s+)(${units})(?![\w\/])`, 'g');
  const line = ([node, at]) => {
    const r = document.createRange();
    r.setStart(node, at);
    r.setEnd(node, at + 1);
    const rects = r.getClientRects();
    return rects.length ? rects[0] : null;
  };
  for (const cell of document.querySelectorAll('article td, article th')) {
    if (!shown(cell)) continue;
    const chars = [];  // [text node, offset] of each character of the cell's text
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.data.length; i++) chars.push([node, i]);
    }
    const text = chars.map(([node, i]) => node.data[i]).join('');
    for (const m of text.matchAll(unit)) {
      const digit = line(chars[m.index]);
      const letter = line(chars[m.index + 1 + m[2].length]);
      if (digit && letter && letter.top >= digit.bottom - 1) {
        const around = text.slice(Math.max(0, m.index - 8), m.index + m[0].length);
        found["number split from its unit"].push(`"${around}" in ${snippet(cell)}`);
      }
    }
  }
  for (const link of document.querySelectorAll('article td a.verdict')) {
    if (!shown(link)) continue;
    const cell = link.closest('td');
    const em = parseFloat(getComputedStyle(cell).fontSize);
    const lines = new Set([...link.getClientRects()].map(r => Math.round(r.top))).size;
    const width = cell.getBoundingClientRect().width;
    if (lines > 1 || width < verdictEm * em - 0.5) {
      found["verdict cell"].push(
        `"${link.textContent}" on ${lines} lines in a ${Math.round(width)} px cell`);
    }
  }
  // a code block whose content is wider than its box must scroll in it or wrap
  let loop = null;
  for (const pre of document.querySelectorAll('article pre')) {
    if (pre.textContent.includes(slowLoop)) loop = {box: pre.clientWidth, content: pre.scrollWidth};
    if (!shown(pre) || pre.scrollWidth <= pre.clientWidth + 1) continue;
    const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
    if (!scrolls(pre)) {
      found["code cut off"].push(
        `${pre.scrollWidth} px of code in a ${pre.clientWidth} px box: ${snippet(pre)}`);
    }
  }
  for (const code of document.querySelectorAll('article code')) {
    const box = code.closest('p, li, dd, td, th, div');
    if (!shown(code) || !box || code.closest('pre')) continue;
    if (code.getBoundingClientRect().right > box.getBoundingClientRect().right + 1
        && !box.closest('.gpulab-table-wrap, .table-wrapper, .pst-scrollable-table-container')) {
      found["code cut off"].push(
        `inline code past its ${box.tagName.toLowerCase()}'s edge: ${snippet(code)}`);
    }
  }
  return {found, loop};
}"""


def _page_names(site: Path) -> list[str]:
    """Every page of both editions, by path from the site's root, less the redirects."""
    pages = [p.relative_to(site).as_posix() for p in _pages(site)]
    return [
        p
        for p in pages
        if not (site / p).read_text(encoding="utf-8").startswith("<meta http-equiv")
    ]


def _edition(page: str) -> str:
    return ZH if page.startswith(ZH + "/") else "en"


@pytest.fixture(scope="module")
def layout(browser, site, site_url) -> dict[int, dict[str, dict]]:
    """Each page's measurements at each width: {width: {page: {"found": ..., "loop": ...}}}."""
    measured: dict[int, dict[str, dict]] = {}
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900})
        tab, outside = open_offline(context)
        measured[width] = {}
        for page in _page_names(site):
            tab.goto(f"{site_url}/{page}", wait_until="load")
            measured[width][page] = tab.evaluate(MEASURE, [VERDICT_MIN_EM, SLOW_LOOP])
        context.close()
        assert not outside, f"requests left the machine: {outside[:3]}"
    (site.parent / "layout_report.json").write_text(
        json.dumps({"counts": counts(measured), "pages": measured}, indent=1, ensure_ascii=False),
        encoding="utf-8",
    )
    return measured


def counts(measured: dict[int, dict[str, dict]]) -> dict[str, dict[str, int]]:
    """The number of problems by edition and width ("en 1280"), and by check."""
    table: dict[str, dict[str, int]] = {}
    for width, pages in measured.items():
        for page, result in pages.items():
            row = table.setdefault(f"{_edition(page)} {width}", dict.fromkeys(CHECKS, 0))
            for check, problems in result["found"].items():
                row[check] += len(problems)
    return table


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("check", CHECKS)
def test_every_page_lays_out_at_width(layout, check, width):
    """No page of either edition has a problem of this kind at this width."""
    problems = [
        f"{page}: {p}" for page, result in layout[width].items() for p in result["found"][check]
    ]
    assert layout[width], "no page measured"
    assert not problems, f"{len(problems)} at {width} px ({check}):\n" + "\n".join(problems[:40])


@pytest.mark.parametrize("edition", EDITIONS)
def test_lab5_slow_loop_reads_whole_at_1280(layout, edition):
    """The <pre> of lab 5's slow loop is as wide as its longest line at 1,280 px: the learner
    reads every line without scrolling (the lines are kept short enough, not the font smaller)."""
    page = LAB5 if edition == "en" else f"{ZH}/{LAB5}"
    loop = layout[1280][page]["loop"]
    assert loop, f"no code block holding {SLOW_LOOP!r} on {page}"
    assert loop["content"] <= loop["box"] + 1, (
        f"{page}: {loop['content']} px of code in a {loop['box']} px box"
    )
