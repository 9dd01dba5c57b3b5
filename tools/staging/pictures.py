"""The pages' pictures, drawn at build time from gpulab's data.

Each chapter's drawing functions live in the ``ui`` layer, one module per chapter
(``gpulab.ui.pictures_ch01``, ``_ch02``...), found by name: each has ``PICTURES``, a dict from a
picture's name (``"ch01-threads"``) to a function that takes no argument and returns a
matplotlib Figure. Before Sphinx runs, the build renders every registered picture to
``_pictures/<name>.svg`` at the root of each edition's staged tree, with matplotlib's Agg
backend and no network; a page shows one with a ``{figure}`` directive whose target is
``/_pictures/<name>.svg``. The Chinese edition shows the same file: a picture's text is
numbers and units, and its alt text and caption are translated with the page.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

from tools.authoring.picture_registry import PACKAGE, registered

FOLDER = "_pictures"  # at the root of a staged tree: /_pictures/<name>.svg on a page


@contextlib.contextmanager
def no_network() -> Iterator[None]:
    """Refuse every connection while drawing: a picture draws from the library's data only."""

    def refuse(*args, **kwargs):
        raise OSError("a picture must not use the network: draw it from gpulab's data")

    saved = socket.socket.connect, socket.socket.connect_ex, socket.create_connection
    socket.socket.connect = socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        socket.socket.connect, socket.socket.connect_ex, socket.create_connection = saved


def render(target: Path, package: str = PACKAGE) -> list[Path]:
    """Draw every registered picture to `target`/<name>.svg (Agg, no network); the files."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    target.mkdir(parents=True, exist_ok=True)
    written = []
    # the same SVG on every build: no date, fixed ids
    with no_network(), matplotlib.rc_context({"svg.hashsalt": "gpulab", "svg.fonttype": "path"}):
        for name, draw in registered(package).items():
            fig = draw()
            if not isinstance(fig, Figure):
                raise ValueError(f"picture {name!r} returned {type(fig).__name__}, not a Figure")
            path = target / f"{name}.svg"
            fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
            plt.close(fig)
            written.append(path)
    return written
