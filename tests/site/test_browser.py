"""The setup notebook's page in headless Chromium, served from localhost (DESIGN.md).

The DOM must hold the title, the matrix-product result, the plot, a rendered widget and
rendered math, and no request may leave the machine. Skips, saying why, where no Chromium
exists; `.ci/run` installs Debian's chromium so CI does not skip.
"""

from __future__ import annotations

from tests.site.conftest import open_offline


def test_setup_page_renders_offline(browser, site, site_url):
    """Title, result, plot, widget and math are in the DOM; every request stays on 127.0.0.1."""
    page, outside = open_offline(browser)
    page.goto(f"{site_url}/notebooks/00_check_your_setup.html", wait_until="networkidle")
    assert "Check your setup" in page.title()
    body = page.inner_text("body")
    assert "matches the float64 CPU reference" in body
    # the plot: an image written by matplotlib, loaded from the site
    assert page.evaluate("""() => [...document.querySelectorAll('img')]
        .some(i => i.src.includes('/_images/') && i.naturalWidth > 100)""")
    # the widget: the saved Tab rendered by the site's own widget manager
    page.wait_for_selector(".widget-tab, .jupyter-widget-tab", timeout=15_000)
    tabs = page.inner_text(".widget-tab, .jupyter-widget-tab")
    assert "Machine" in tabs and "Doctor" in tabs
    # math typeset by the site's own MathJax
    page.wait_for_selector("mjx-container", timeout=15_000)
    # kept beside the site so a person can look at what the test saw
    page.screenshot(path=str(site.parent / "setup_page.png"), full_page=True)
    assert not outside, f"requests left the machine: {outside}"
    page.close()
