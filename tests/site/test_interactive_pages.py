"""Every page of the built site that holds a widget or a calculator, moved as a reader would.

The pages are found by their markup (a saved widget's view, a calculator's root), in both
editions. Each is opened over http with every request outside 127.0.0.1 refused; its
calculators must start (Pyodide), and then each control is moved once: another option in each
list, another number in each field, a click on each tab. A console error, an uncaught error,
a calculator that fails or a request that leaves the machine fails the test. On notebook 02,
the calculator must answer a change of model with what gpulab computes here in CPython.
"""

from __future__ import annotations

import html
import json
import re

import pytest

from gpulab.ui import widgets
from tests import calculator_oracle as oracle
from tests.site.conftest import open_offline

WIDGET_VIEW = 'type="application/vnd.jupyter.widget-view+json"'
CALCULATOR = 'class="gpulab-calc"'
RENDERED = ".cell_output .widget-subarea > .jupyter-widgets"  # a saved view, drawn by the site
# pages that must be among those found: notebook 00's tabs, chapter 2's and chapter 6's calculators
KNOWN = (
    "notebooks/00_check_your_setup.html",
    "notebooks/02_will_it_fit.html",
    "notebooks/06_choosing_hardware.html",
)
READY_TIMEOUT_MS = 60_000  # Pyodide starts in about 3-6 s on the 2-core CI machine
NB02 = "notebooks/02_will_it_fit.html"
NB02_CALCULATOR = f"#{widgets.SITE_CALCULATOR_UID}"
SCREENSHOT = "nb02_after_change.png"  # beside the site, as tests/site/test_browser.py keeps its own

# Each control moved once: the next option of a list, its value plus one in a number field (8
# in an empty one), a click on each tab. Returns what was moved, for the failure message.
MOVE = """async (root) => {
  const moved = [];
  const settle = () => new Promise(r => setTimeout(r, 50));
  for (const el of root.querySelectorAll('select')) {
    if (el.disabled || el.options.length < 2) continue;
    el.selectedIndex = (el.selectedIndex + 1) % el.options.length;
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
    moved.push(`select ${el.dataset.in || el.name || ''} = ${el.value}`);
    await settle();
  }
  for (const el of root.querySelectorAll('input[type=number]')) {
    if (el.disabled) continue;
    el.value = el.value === '' ? '8' : String(Number(el.value) + 1);
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
    moved.push(`number ${el.dataset.in || el.name || ''} = ${el.value}`);
    await settle();
  }
  return moved;
}"""


def interactive_pages(site) -> list[str]:
    """The pages of both editions whose HTML holds a saved widget's view or a calculator."""
    found = []
    for path in sorted(site.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        if WIDGET_VIEW in text or CALCULATOR in text:
            found.append(path.relative_to(site).as_posix())
    return found


def _open(browser, site_url, page):
    """Open a page offline, recording console errors and uncaught errors."""
    tab, outside = open_offline(browser)
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    tab.goto(f"{site_url}/{page}", wait_until="networkidle")
    return tab, outside, errors


def _wait_until_live(tab, page: str) -> None:
    """Every saved widget rendered by the site's widget manager, every calculator ready."""
    views = tab.locator(f"script[{WIDGET_VIEW}]").count()
    if views:
        tab.wait_for_function(
            f"n => document.querySelectorAll('{RENDERED}').length >= n", arg=views, timeout=15_000
        )
    for root in tab.locator(".gpulab-calc").all():
        uid = root.get_attribute("id")
        try:
            tab.wait_for_selector(f'#{uid}[data-state="ready"]', timeout=READY_TIMEOUT_MS)
        except Exception:
            pytest.fail(
                f"{page}: calculator {uid} is not ready (data-state="
                f"{root.get_attribute('data-state')!r}: {root.inner_text()[-200:]!r})"
            )


def test_the_pages_with_widgets_or_calculators_are_found(site):
    """The scan finds notebook 00's tabs and the calculators of notebooks 02 and 06, in both
    editions."""
    found = interactive_pages(site)
    for page in KNOWN:
        assert page in found and f"zh_CN/{page}" in found, found


TAB_OPEN_MS = 5_000  # how long a clicked widget tab may take to become the current one


def test_every_control_on_every_interactive_page_moves_without_an_error(browser, site, site_url):
    """Each control of each page moved once; no console error, no uncaught error, no failed
    calculator, no request off the machine."""
    problems = []
    for page in interactive_pages(site):
        tab, outside, errors = _open(browser, site_url, page)
        _wait_until_live(tab, page)
        moved = []
        for root in tab.locator(f".gpulab-calc, {RENDERED}").all():
            moved += root.evaluate(MOVE)
        for widget_tab in tab.locator(f"{RENDERED} .lm-TabBar-tab").all():
            widget_tab.click()
            # the widget manager marks the tab current on its next frame, later on a busy machine
            try:
                widget_tab.element_handle().wait_for_element_state("stable", timeout=TAB_OPEN_MS)
                tab.wait_for_function(
                    "t => t.classList.contains('lm-mod-current')",
                    arg=widget_tab.element_handle(),
                    timeout=TAB_OPEN_MS,
                )
            except Exception:
                problems.append(f"{page}: the tab {widget_tab.inner_text()!r} did not open")
            moved.append(f"tab {widget_tab.inner_text()}")
        failed = tab.locator('.gpulab-calc[data-state="failed"]').all_inner_texts()
        tab.close()
        if not moved:
            problems.append(f"{page}: no control to move")
        problems += [f"{page}: {e} (after {len(moved)} moves)" for e in errors]
        problems += [f"{page}: a calculator failed: {t[-200:]}" for t in failed]
        problems += [f"{page}: a request left the machine: {u}" for u in outside]
    assert not problems, "\n".join(problems)


def _inputs(tab, root: str) -> dict[str, str]:
    """The text each input of a calculator holds, by its data-in name."""
    return tab.eval_on_selector_all(
        f"{root} [data-in]",
        "els => Object.fromEntries(els.map(e => [e.getAttribute('data-in'), e.value]))",
    )


def test_chapter_2s_calculator_answers_a_change_of_model_with_gpulabs_figures(
    browser, site, site_url
):
    """Notebook 02's calculator is live: choosing Llama-3-70B shows the total that gpulab
    computes in CPython for the inputs the page holds, in its data-value and in its text."""
    tab, outside, errors = _open(browser, site_url, NB02)
    _wait_until_live(tab, NB02)
    total = tab.locator(f'{NB02_CALCULATOR} [data-out="total"]')
    before = total.get_attribute("data-value")
    tab.select_option(f'{NB02_CALCULATOR} [data-in="model"]', "Llama-3-70B")
    held = _inputs(tab, NB02_CALCULATOR)
    assert held["model"] == "Llama-3-70B" and held["memory_gb"] == "", held
    want = oracle.memory_expected(
        held["model"],
        held["weights"],
        int(held["context"]),
        int(held["users"]),
        held["gpu"],
        held["kv_cache"],
    )
    assert total.get_attribute("data-value") != before
    assert float(total.get_attribute("data-value")) == pytest.approx(want["total"], rel=1e-9)
    shown = float(re.search(r"[\d.]+", total.inner_text()).group())
    assert shown == pytest.approx(want["total"] / 1e9, abs=0.06), total.inner_text()
    box = tab.locator(
        NB02_CALCULATOR
    ).bounding_box()  # the whole calculator, taller than the window
    scroll = tab.evaluate("[window.scrollX, window.scrollY]")
    tab.screenshot(
        path=str(site.parent / SCREENSHOT),
        full_page=True,
        clip={**box, "x": box["x"] + scroll[0], "y": box["y"] + scroll[1]},
    )
    tab.close()
    assert not errors and not outside, (errors, outside)


def _page_with_widget(built: str, state: dict, view: dict) -> str:
    """A built page's HTML with its saved widget state and its first view replaced."""
    state_tag = re.compile(
        r'(<script type="application/vnd.jupyter.widget-state\+json">)(.*?)(</script>)', re.S
    )
    view_tag = re.compile(
        r'(<script type="application/vnd.jupyter.widget-view\+json">)(.*?)(</script>)', re.S
    )
    assert state_tag.search(built) and view_tag.search(built)
    built = state_tag.sub(
        lambda m: m[1] + html.escape(json.dumps(state), quote=False) + m[3], built
    )
    return view_tag.sub(lambda m: m[1] + json.dumps(view) + m[3], built, count=1)


def test_a_widget_with_math_in_its_label_typesets_it_with_the_sites_mathjax(
    browser, site, site_url
):
    """The widget manager typesets a label with MathJax v2's Hub.Queue; on the site's pages
    (notebook 00's scripts, its MathJax v3 included) a dropdown labelled with math renders the
    math, with no error."""
    import ipywidgets
    from ipywidgets.embed import embed_data

    page = KNOWN[0]
    dropdown = ipywidgets.Dropdown(options=["a", "b"], description=r"\(x^2\)")
    data = embed_data(views=[dropdown])
    built = _page_with_widget(
        (site / page).read_text(encoding="utf-8"), data["manager_state"], data["view_specs"][0]
    )
    tab, outside = open_offline(browser)
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    # registered after open_offline's guard, so this route answers the page's own address first
    tab.route(
        f"{site_url}/{page}", lambda route: route.fulfill(body=built, content_type="text/html")
    )
    tab.goto(f"{site_url}/{page}", wait_until="networkidle")
    tab.wait_for_selector(".widget-dropdown mjx-container", timeout=15_000)
    tab.select_option(".widget-dropdown select", "b")
    tab.close()
    assert not errors and not outside, (errors, outside)
