"""Pages of the built site in headless Chromium, served from localhost (docs/design.md).

Every page opened here must load without a console error or a failed request, send no request
off the machine, pass axe-core's accessibility rules at the "serious" and "critical" levels,
and fit its column: at a 1,200 px wide window the article is 688 px wide, and no table may be
wider than that unless it scrolls in its own box with its key column in view; printed output
wraps; no display equation is cut off. The setup page must also hold its title, the
matrix-product result, the plot, a rendered widget and rendered math.

Skips, saying why, where no Chromium exists; `.ci/run` installs Debian's chromium so CI does
not skip.
"""

from __future__ import annotations

import pytest

from tests.site.conftest import open_offline
from tools.execution import runs

AXE = runs.ROOT / "node_modules" / "axe-core" / "axe.min.js"  # self-hosted, from npm
WINDOW = {"width": 1200, "height": 900}  # the theme lays the article out 688 px wide here
COLUMN_PX = 688
# A lab page, the scenario tables of notebook 06, chapter pages with wide tables and math,
# the widget and plot of the setup page, the front page.
PAGES = [
    "notebooks/00_check_your_setup.html",
    "notebooks/05_pitfalls.html",
    "notebooks/06_choosing_hardware.html",
    "labs/01_roofline_lab.html",
    "book/02_vram.html",
    "book/06_choosing_hardware.html",
    "index.html",
    # the Chinese edition: a chapter page with wide tables and math, a notebook with plots
    "zh_CN/book/02_vram.html",
    "zh_CN/notebooks/03_inference_vs_training.html",
]
SCREENSHOTS = {
    "notebooks/00_check_your_setup.html": "setup_page.png",
    "notebooks/06_choosing_hardware.html": "choosing_hardware_page.png",
    "labs/01_roofline_lab.html": "roofline_lab_page.png",
    "zh_CN/notebooks/03_inference_vs_training.html": "chinese_chapter_page.png",
}

LAYOUT = """() => {
  const article = document.querySelector('article.bd-article');
  const style = getComputedStyle(article);
  const column =
    article.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const problems = [];
  const name = el => (el.querySelector('caption') || el).textContent.trim().slice(0, 70);
  const scroller = el => {
    for (let p = el.parentElement; p && p !== article; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return p;
    }
    return null;
  };
  for (const table of article.querySelectorAll('table')) {
    if (table.getBoundingClientRect().width <= column + 1) continue;
    const box = scroller(table);
    if (!box || box.getBoundingClientRect().width > column + 1) {
      problems.push(`table wider than the ${Math.round(column)} px column, `
        + `not in its own scroll box: ${name(table)}`);
      continue;
    }
    const keys = parseInt(table.dataset.keyColumns || '1', 10);
    const head = table.querySelectorAll('tr')[0];
    const last = head && head.children[Math.min(keys, head.children.length) - 1];
    if (last && last.getBoundingClientRect().right > box.getBoundingClientRect().right + 1) {
      problems.push(`key columns hidden until scrolled: ${name(table)}`);
    }
  }
  for (const pre of article.querySelectorAll('div.output.stream pre, div.output.text_plain pre')) {
    if (pre.scrollWidth > pre.clientWidth + 1) {
      problems.push(`printed output scrolls sideways: ${pre.textContent.trim().slice(0, 70)}`);
    }
  }
  for (const math of article.querySelectorAll('mjx-container[display="true"]')) {
    const host = math.parentElement;
    if (math.getBoundingClientRect().width > host.clientWidth + 1) {
      problems.push(
        `display equation wider than its column: ${host.textContent.trim().slice(0, 70)}`);
    }
  }
  return {column: article.clientWidth, problems};
}"""

AXE_RUN = """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
  .filter(v => v.impact === 'serious' || v.impact === 'critical')
  .map(v => {
    const where = v.nodes.slice(0, 3).map(n => n.target.join(' ')).join('; ');
    return `${v.impact} ${v.id}: ${v.help} (${where})`;
  })"""


def open_page(browser, site_url, page_name):
    """Open a page at the test's window size, recording console errors and failed requests."""
    tab, outside = open_offline(browser, viewport=WINDOW)
    errors, failed = [], []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    tab.on("requestfailed", lambda r: failed.append(f"{r.url} ({r.failure})"))
    tab.on(
        "response", lambda r: failed.append(f"{r.url} ({r.status})") if r.status >= 400 else None
    )
    tab.goto(f"{site_url}/{page_name}", wait_until="networkidle")
    # the layout is measured once MathJax has typeset the page's math (where it has any)
    tab.evaluate("() => window.MathJax?.startup?.promise?.then(() => true) ?? true")
    return tab, outside, errors, failed


@pytest.mark.parametrize("page_name", PAGES)
def test_page_loads_cleanly_is_accessible_and_fits_its_column(browser, site, site_url, page_name):
    """No console error, failed request or outside request; no serious axe violation; every
    table, printed line and equation fits the 688 px column or scrolls in its own box."""
    tab, outside, errors, failed = open_page(browser, site_url, page_name)
    layout = tab.evaluate(LAYOUT)
    assert layout["column"] == COLUMN_PX, f"the theme's column is {layout['column']} px at {WINDOW}"
    tab.add_script_tag(path=str(AXE))
    violations = tab.evaluate(AXE_RUN)
    if page_name in SCREENSHOTS:  # kept beside the site so a person can look at what the test saw
        tab.screenshot(path=str(site.parent / SCREENSHOTS[page_name]), full_page=True)
    tab.close()
    assert not errors, f"console errors on {page_name}: {errors}"
    assert not failed, f"failed requests on {page_name}: {failed}"
    assert not outside, f"requests left the machine from {page_name}: {outside}"
    assert not violations, f"axe on {page_name}: " + "\n".join(violations)
    assert not layout["problems"], f"{page_name}: " + "\n".join(layout["problems"])


def test_setup_page_renders_its_result_plot_widget_and_math(browser, site, site_url):
    """Title, result, plot (with alt text), widget and math are in the DOM."""
    tab, outside, _, _ = open_page(browser, site_url, "notebooks/00_check_your_setup.html")
    assert "Check your setup" in tab.title()
    assert "matches the float64 CPU reference" in tab.inner_text("body")
    # the plot: an image written by matplotlib, loaded from the site, described in words
    plots = tab.evaluate("""() => [...document.querySelectorAll('article img')]
        .filter(i => i.src.includes('/_images/') && i.naturalWidth > 100).map(i => i.alt)""")
    assert plots and all(alt.startswith("bar chart: Memory on this machine.") for alt in plots), (
        plots
    )
    # the widget: the saved Tab rendered by the site's own widget manager
    tab.wait_for_selector(".widget-tab, .jupyter-widget-tab", timeout=15_000)
    tabs = tab.inner_text(".widget-tab, .jupyter-widget-tab")
    assert "Machine" in tabs and "Doctor" in tabs
    tab.wait_for_selector("mjx-container", timeout=15_000)
    tab.close()
    assert not outside


CJK_FONT = '"Noto Sans SC Variable"'  # the site's own CJK font (tools/staging/stage.py, from npm)
GLYPHS = """async (font) => {
  await document.fonts.ready;
  const article = document.querySelector('article.bd-article');
  const paragraph = [...article.querySelectorAll('p')]
    .find(p => /[\\u4e00-\\u9fff]{8}/.test(p.textContent));
  const sample = paragraph.textContent.match(/[\\u4e00-\\u9fff]/g).slice(0, 40).join('');
  await document.fonts.load(`16px ${font}`, sample);
  // two different characters drawn in the font: glyphs differ, an empty box (tofu) does not
  const draw = (ch) => {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 64;
    const ctx = canvas.getContext('2d');
    ctx.font = `48px ${font}`;
    ctx.fillText(ch, 8, 52);
    return Array.from(ctx.getImageData(0, 0, 64, 64).data).join(',');
  };
  const [a, b] = [draw('\u663e'), draw('\u5b58')];  // 显, 存
  return {lang: document.documentElement.lang, sample,
          cjk: (article.textContent.match(/[\\u4e00-\\u9fff]/g) || []).length,
          check: document.fonts.check(`16px ${font}`, sample),
          family: getComputedStyle(paragraph).fontFamily,
          distinct: a !== b, inked: a.split(',').some((v, i) => i % 4 === 3 && v !== '0'),
          math: article.querySelectorAll('mjx-container').length,
          plots: [...article.querySelectorAll('img')]
            .filter(i => i.src.includes('/_images/') && i.naturalWidth > 100).length};
}"""


def test_a_chinese_chapter_page_renders_chinese_glyphs_math_and_a_plot(browser, site, site_url):
    """The Chinese notebook page of chapter 3: Chinese text drawn in the site's CJK font (its
    glyphs, not empty boxes: two characters draw differently), rendered math and its plot."""
    tab, outside, errors, _ = open_page(
        browser, site_url, "zh_CN/notebooks/03_inference_vs_training.html"
    )
    tab.wait_for_selector("mjx-container", timeout=15_000)
    found = tab.evaluate(GLYPHS, CJK_FONT)
    tab.screenshot(path=str(site.parent / "chinese_chapter_page_top.png"))
    tab.close()
    assert found["lang"] == "zh-CN"
    assert found["cjk"] > 500, found
    assert found["family"].startswith('"Noto Sans SC Variable"'), found["family"]
    assert found["check"], f"document.fonts.check failed for {CJK_FONT} on {found['sample']}"
    assert found["distinct"] and found["inked"], "the CJK characters render as empty boxes"
    assert found["math"] > 0 and found["plots"] > 0, found
    assert not errors and not outside


EQUATION_LABELS = """() => [...document.querySelectorAll('article mjx-container mjx-utext')]
  .filter(e => /[\\u4e00-\\u9fff]/.test(e.textContent))
  .map(e => ({text: e.textContent, width: e.getBoundingClientRect().width,
              family: getComputedStyle(e).fontFamily}))"""


def test_chinese_equation_labels_render_in_the_cjk_font(browser, site, site_url):
    """Chapter 2's equations keep their structure and carry Chinese \\\\text{} labels (the
    catalogue's): each label is drawn in the page's CJK font, as wide as its characters."""
    tab, outside, errors, _ = open_page(browser, site_url, "zh_CN/book/02_vram.html")
    labels = tab.evaluate(EQUATION_LABELS)
    tab.close()
    assert labels, "no Chinese label in the chapter's equations"
    for label in labels:
        assert "Noto Sans SC Variable" in label["family"], label
        assert label["width"] >= 8 * len(label["text"].strip()), label
    assert not errors and not outside


def _teaching_samples(site) -> list[str]:
    """One page per edition that shows a picture (a registered /_pictures/ SVG) and one that
    shows a collapsed reveal (myst-nb's hide-output), where the site has any."""
    from tools.authoring import picture_registry

    pictures = [f"_images/{name}.svg" for name in picture_registry.registered()]
    kinds = {
        "picture": lambda html: any(p in html for p in pictures),
        "reveal": lambda html: 'class="admonition hide below-input' in html,
    }
    found = {}
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        if "_static" in rel:
            continue
        edition = rel.split("/", 1)[0] if rel.startswith("zh_CN/") else ""
        html = page.read_text(encoding="utf-8")
        for kind, shows in kinds.items():
            if (kind, edition) not in found and shows(html):
                found[(kind, edition)] = rel
    return sorted(set(found.values()))


def test_pictures_and_reveals_pass_axe_and_load(browser, site, site_url):
    """A page's picture loads (an SVG from the site) with its alt text, and a reveal's collapsed
    output, in each edition, pass axe-core like every page above."""
    for page_name in _teaching_samples(site):
        tab, outside, errors, failed = open_page(browser, site_url, page_name)
        images = tab.evaluate(
            """() => [...document.querySelectorAll('figure img')]
            .filter(i => i.src.endsWith('.svg')).map(i => [i.alt, i.naturalWidth])"""
        )
        tab.add_script_tag(path=str(AXE))
        violations = tab.evaluate(AXE_RUN)
        tab.close()
        assert not violations, f"axe on {page_name}: " + "\n".join(violations)
        assert not errors and not failed and not outside, (page_name, errors, failed, outside)
        assert all(alt and width > 0 for alt, width in images), (page_name, images)
