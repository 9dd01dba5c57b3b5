"""Fixtures for the checks on the built site (built by `tools/pipeline.py site`)."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from tools import pipeline


@pytest.fixture(scope="session")
def site() -> Path:
    """The built site's HTML folder; fails with what to run when it is missing."""
    html = pipeline.html_dir(pipeline.RunConfig.from_env(mode="quick"))
    if not (html / "index.html").exists():
        pytest.fail(f"no built site at {html}: run `make test` (or tools/pipeline.py site --mode quick)")
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
