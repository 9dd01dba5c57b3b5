"""Which notebook computes the figures of which chapter page, and what they are.

Each chapter page ``book/0N_*.md`` pastes its figures from its chapter notebook with
myst-nb's glue (``{glue:text}`../notebooks/0N_*.ipynb::key:.1f```). The values are computed in
one place, the chapter's ``figures_ch0N.figures()``, and glued by the notebook's last cell, so a
constant changed in gpulab changes every page that shows a figure derived from it.
``tools/glued_pages.py`` resolves the pages' references against these same functions, which
lets a test check every reference without building the site.
"""

from __future__ import annotations

import importlib
from typing import Any

from gpulab.core.errors import GpulabConfigError

__all__ = ["CHAPTER_NOTEBOOKS", "chapter_figures", "glue_cell_source"]

# The chapter notebook (relative to the repository) -> the module whose figures() it glues.
CHAPTER_NOTEBOOKS: dict[str, str] = {
    "notebooks/01_why_gpus_are_fast.ipynb": "gpulab.course.figures_ch01",
    "notebooks/02_will_it_fit.ipynb": "gpulab.course.figures_ch02",
    "notebooks/03_inference_vs_training.ipynb": "gpulab.course.figures_ch03",
    "notebooks/04_backends.ipynb": "gpulab.course.figures_ch04",
    "notebooks/05_pitfalls.ipynb": "gpulab.course.figures_ch05",
    "notebooks/06_choosing_hardware.ipynb": "gpulab.course.figures_ch06",
    "notebooks/07_beyond_one_gpu.ipynb": "gpulab.course.figures_ch07",
}


def chapter_figures(notebook: str) -> dict[str, Any]:
    """The figures that ``notebook`` (a key of CHAPTER_NOTEBOOKS) glues, by key."""
    module = CHAPTER_NOTEBOOKS.get(notebook)
    if module is None:
        raise GpulabConfigError(f"notebook={notebook!r} glues no chapter figures; allowed: "
                                + ", ".join(CHAPTER_NOTEBOOKS))
    return importlib.import_module(module).figures()


def glue_cell_source(notebook: str) -> str:
    """The code of the notebook's last cell, which glues its chapter's figures."""
    module = CHAPTER_NOTEBOOKS[notebook].rsplit(".", 1)[1]
    return ("# The figures the chapter page quotes, computed by gpulab and pasted there by\n"
            "# myst-nb's glue; they stay hidden here, where the cells above print their own.\n"
            f"from gpulab import glue, {module}\n\n"
            f"glue.glue_figures({module}.figures())")
