"""Values a notebook hands to the book's pages, through myst-nb's glue protocol.

A chapter page (``book/*.md``) never types a figure: it pastes one that a notebook computed,
with ``{glue:text}`../notebooks/02_will_it_fit.ipynb::key:.1f```. myst-nb finds the value in
the executed notebook as a display output whose metadata names the key (the "scrapbook"
protocol that papermill and myst-nb share). This module writes that output without importing
myst-nb, so a notebook runs in a kernel that has only IPython.

Glued values are hidden in the notebook itself (``display=False``): a Jupyter reader sees the
values where the notebook prints them, and the pages see them where they quote them.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from gpulab.core.errors import GpulabConfigError

__all__ = ["GLUE_PREFIX", "glue", "glue_figures", "plain_value", "show_markdown"]

# The MIME prefix myst-nb strips from a hidden glued output (myst_nb.ext.glue.GLUE_PREFIX).
GLUE_PREFIX = "application/papermill.record/"


def plain_value(name: str, value: Any) -> int | float | str:
    """The value as the plain int, float or str that a page's format spec can format."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise GpulabConfigError(
            f"glued value {name!r}: {type(value).__name__} is not allowed; glue an int, a float "
            f"or a str (a page formats it with a spec such as :.1f or :,d)")
    if isinstance(value, str):
        return value
    # numpy and torch scalars become Python numbers, so their text is what literal_eval reads
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def glue(name: str, value: Any) -> None:
    """Hand ``value`` to the pages under ``name``, hidden in the notebook's own view."""
    from IPython.display import display  # imported here: the module loads without IPython

    if not (isinstance(name, str) and name.isidentifier()):
        raise GpulabConfigError(f"glue name {name!r}: must be an identifier such as 'llama70_gb'")
    text = repr(plain_value(name, value))
    display({GLUE_PREFIX + "text/plain": text}, raw=True,
            metadata={"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}})


def glue_figures(figures: Mapping[str, Any]) -> None:
    """Glue every figure of a mapping (a chapter's ``figures()``) under its own key."""
    for name, value in figures.items():
        glue(name, value)


def show_markdown(text: str) -> None:
    """Display Markdown that code filled with computed figures (a notebook's prose figures)."""
    from IPython.display import Markdown, display

    display(Markdown(text))
