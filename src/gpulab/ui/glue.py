"""Markdown that a notebook builds from computed figures, shown as Markdown.

The chapter pages paste their figures with the {fig} role (gpulab.course.figures); this is
what is left of the notebooks' glue, for the cells that still write their prose in code.
"""

from __future__ import annotations

__all__ = ["show_markdown"]


def show_markdown(text: str) -> None:
    """Display Markdown that code filled with computed figures (a notebook's prose figures)."""
    from IPython.display import Markdown, display

    display(Markdown(text))
