"""The teaching checks of "teach first" (issues 28 and 29): which files follow them, and the words
learner-facing text must not use.

A chapter's page, notebook and lab are listed in TEACH_FIRST once they follow the conventions of
CONTRIBUTING.md ("Teaching cells"); the checks in tests/unit/test_teaching.py apply to the
listed files only, so that each chapter joins when it is rewritten, and the list ends holding
every chapter.
"""

from __future__ import annotations

# Repository-relative paths of the pages, notebooks and labs the teaching checks apply to.
TEACH_FIRST: tuple[str, ...] = (
    "book/02_vram.md",
    "notebooks/02_will_it_fit.ipynb",
    "labs/02_predict_then_measure_lab.ipynb",
)

# The course's own machinery, which learner-facing text does not name (case-insensitive).
MACHINERY_WORDS: tuple[str, ...] = (
    "registry",
    "registries",
    "csv",
    "seed_claims",
    "data folder",
    "data/measured",
    "drift",
    "quick mode",
    "build mode",
    "pasted",
    "figures_ch",
    "gpulab.course",
)
