"""Serving a run's built site over http on 127.0.0.1, with the standard library only.

``make serve`` runs it without the venv, so it imports nothing outside the standard library.
"""

from __future__ import annotations

import os
import sys

from tools import editions
from tools.execution.runs import SERVE_PORT, RunConfig, build_hint, html_dir, serve_hint, shown_path


def _port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:`port` now (http.server would else print a
    traceback for the taken address)."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def serve(run: RunConfig, port: int = SERVE_PORT) -> int:
    """Serve a run's built site over http on 127.0.0.1 (the standard library's server)."""
    html = html_dir(run)
    if not (html / "index.html").is_file():
        print(f"no site built in {shown_path(html)} yet: {build_hint(run)}", file=sys.stderr)
        quick = RunConfig(mode="quick")
        if run.mode != "quick" and (html_dir(quick) / "index.html").is_file():
            print(
                f"`make test` built one in quick mode: {serve_hint(quick, port)}", file=sys.stderr
            )
        return 1
    if not _port_free(port):
        print(
            f"port {port} on 127.0.0.1 is taken (another server?): choose another, as in "
            f"`make serve PORT={port + 1}`",
            file=sys.stderr,
        )
        return 1
    print(
        f"Serving {shown_path(html)} on 127.0.0.1: open http://127.0.0.1:{port}/ "
        f"({editions.other_editions(lambda f: f'http://127.0.0.1:{port}/{f}/')}); Ctrl-C stops it",
        flush=True,
    )
    # the server replaces this process, so Ctrl-C stops it without a traceback from here
    os.execv(
        sys.executable,
        [
            sys.executable,
            "-m",
            "http.server",
            str(port),
            "--bind",
            "127.0.0.1",
            "--directory",
            str(html),
        ],
    )
    return 0  # not reached: execv does not return
