"""The figures the chapter pages paste, by name, in one namespace across the chapters.

A page says ``{fig}`llama70_q4km_gb:.1f``` and the site build pastes the value of that name,
formatted by the spec after the last ":" (tools/sphinx_ext/figures.py). The values are computed in
one place, each chapter's ``figures_ch0N.figures()``, so a constant changed in gpulab changes
every page that shows a figure derived from it; ``tools/checks/page_figures.py`` resolves the same
references without building the site, for the tests.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, checked

__all__ = ["CHAPTER_NOTEBOOKS", "all_figures", "chapter_figures", "format_figure"]

# The chapter notebook (relative to the repository) -> the module that computes its page's figures.
CHAPTER_NOTEBOOKS: dict[str, str] = {
    "notebooks/01_why_gpus_are_fast.ipynb": "gpulab.course.figures_ch01",
    "notebooks/02_will_it_fit.ipynb": "gpulab.course.figures_ch02",
    "notebooks/03_inference_vs_training.ipynb": "gpulab.course.figures_ch03",
    "notebooks/04_backends.ipynb": "gpulab.course.figures_ch04",
    "notebooks/05_pitfalls.ipynb": "gpulab.course.figures_ch05",
    "notebooks/06_choosing_hardware.ipynb": "gpulab.course.figures_ch06",
    "notebooks/07_beyond_one_gpu.ipynb": "gpulab.course.figures_ch07",
    "book/intro.md": "gpulab.course.figures_intro",  # no notebook: the map's times, read from all
}


@checked
def chapter_figures(
    notebook: Annotated[str, OneOf(CHAPTER_NOTEBOOKS, "chapter notebook")],
) -> dict[str, Any]:
    """The figures of ``notebook``'s chapter (a key of CHAPTER_NOTEBOOKS), by name."""
    return importlib.import_module(CHAPTER_NOTEBOOKS[notebook]).figures()


def all_figures() -> dict[str, Any]:
    """Every chapter's figures by name; a name that two chapters give different values is an
    error, as a page could not say which it means."""
    merged: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for notebook in CHAPTER_NOTEBOOKS:
        for name, value in chapter_figures(notebook).items():
            if name in merged and merged[name] != value:
                raise GpulabConfigError(
                    f"figure {name!r} is {merged[name]!r} in "
                    f"{CHAPTER_NOTEBOOKS[owner[name]]} and {value!r} in "
                    f"{CHAPTER_NOTEBOOKS[notebook]}: give one of them "
                    "another name"
                )
            merged.setdefault(name, value)
            owner.setdefault(name, notebook)
    return merged


@checked
def format_figure(value: int | float | str, spec: str = "") -> str:
    """A figure as a page shows it: ``format(value, spec)``, the value first made the kind the
    spec formats (int for d, float for f and %), as myst-nb's glue did; no spec: ``str``."""
    if spec == "":
        return str(value)
    kind = spec[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, spec)
