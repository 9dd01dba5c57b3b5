"""The language button opens the same page of the other edition at the same place: the page's
#hash goes with it (tools/staging/static/language-link.js), in the same tab. Clicked in Chromium;
the oracle is the URL the browser lands on, and the anchor being there."""

from __future__ import annotations

import pytest

from tests.site.conftest import open_offline

ZH = "zh_CN"
PAGE = "book/02_vram.html"
# two of the page's sections: ids come from the English headings, the same in both editions
FIRST, SECOND = "the-kv-cache-context-costs-memory", "what-the-articles-said"


@pytest.mark.parametrize(("start", "other"), [(PAGE, f"{ZH}/{PAGE}"), (f"{ZH}/{PAGE}", PAGE)])
def test_the_language_button_keeps_the_section(browser, site, site_url, start, other):
    """From a page opened at a section, and again after moving to another section, the button
    lands on that section of the other edition's page."""
    tab, outside = open_offline(browser, viewport={"width": 1280, "height": 900})
    tab.goto(f"{site_url}/{start}#{FIRST}", wait_until="load")
    with tab.expect_navigation():
        tab.click("a.gpulab-language-button")
    assert tab.url == f"{site_url}/{other}#{FIRST}"
    assert tab.evaluate(f"() => document.getElementById('{FIRST}') !== null")
    # a section reached inside the page (the hash changes, the page stays)
    tab.evaluate(f"() => {{ window.location.hash = '{SECOND}'; }}")
    with tab.expect_navigation():
        tab.click("a.gpulab-language-button")
    assert tab.url == f"{site_url}/{start}#{SECOND}"
    assert len(tab.context.pages) == 1, "the other edition opened in a new tab"
    tab.close()
    assert not outside
