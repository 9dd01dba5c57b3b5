"""Fixtures for the checks on the built site (built by `tools/pipeline.py site`)."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright import sync_api  # a dev dependency: imported plainly, never skipped

from tests.helpers import missing
from tools.execution import runs


@pytest.fixture(scope="session")
def site() -> Path:
    """The built site's HTML folder; fails with what to run when it is missing."""
    html = runs.html_dir(runs.RunConfig.from_env(mode="quick"))
    if not (html / "index.html").exists():
        pytest.fail(
            f"no built site at {html}: run `make test` (or tools/pipeline.py site --mode quick)"
        )
    return html


@pytest.fixture(scope="session")
def site_url(site):
    """The site served over HTTP from 127.0.0.1 on a free port, for the browser test."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """A static file handler that does not log every request to the test output."""

    def log_message(self, *args) -> None:
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionResetError:  # the browser closed a tab while a file was being sent
            pass


# GPULAB_CHROMIUM (a path, or a name on PATH) names the browser where none of the usual names
# is it, as on GitHub's Ubuntu runners: their Google Chrome (.github/workflows/test.yml).
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium(env: Mapping[str, str] = os.environ) -> str | None:
    """The browser's executable: GPULAB_CHROMIUM first, then the usual names on PATH; or None."""
    names = (env.get("GPULAB_CHROMIUM"), *CHROMIUM_NAMES)
    return next(filter(None, (shutil.which(n, path=env.get("PATH")) for n in names if n)), None)


CHROMIUM = find_chromium()
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium driven by Playwright."""
    if CHROMIUM is None:
        missing(
            "Chromium",
            "tool:chromium",
            "Debian: apt-get install chromium; .ci/run installs it; "
            "or set GPULAB_CHROMIUM to a Chromium or Chrome executable",
        )
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def open_offline(browser, viewport: dict | None = None):
    """A new tab in which every request that leaves the machine is refused and recorded.

    Returns (tab, outside): the test asserts `outside` is empty once the page has loaded.
    """
    tab = browser.new_page(viewport=viewport) if viewport else browser.new_page()
    outside: list[str] = []

    def guard(route):
        host = urlsplit(route.request.url).hostname
        # data: and file: stay on the machine (file: when a test opens a page as `make book`
        # names it)
        if route.request.url.startswith(("data:", "file:")) or host == "127.0.0.1":
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    tab.route("**/*", guard)
    return tab, outside
