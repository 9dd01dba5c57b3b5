"""The course's map: every notebook and lab in reading order, what each needs, and its time.

The introduction shows the map as a table and a picture (``gpulab.ui.pictures_intro``). The
stops and what each needs are written here; the minutes are not: each is read from the stop's
title cell ("**Time:** 45 minutes: ..."), the reader's time that the notebook states, so the
map's times and its total follow the notebooks whenever one changes. A chapter page's reading is
in its notebook's time (each title cell says so), so the pages are not stops of their own.

    minutes()             # {"notebooks/00_check_your_setup.ipynb": 35, ...}, in order
    total_minutes()       # their sum

The minutes come from the repository's notebooks, so they are read in a checkout of the course
(the site's build runs in one); an installed package without the notebooks raises.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, checked

__all__ = [
    "NEEDS",
    "STOPS",
    "Stop",
    "minutes",
    "stated_minutes",
    "stop",
    "total_minutes",
]

# What a stop needs to run, from least to most: the map's legend, in this order.
NEEDS: dict[str, str] = {
    "cpu": "a CPU: arithmetic, a GPU changes nothing",
    "any-gpu": "a CPU; any GPU it finds is measured too",
    "cuda-part": "a CPU; a part needs an NVIDIA (or ROCm) GPU",
    "processes": "a CPU, as several processes; several GPUs if you have them",
}
Need = Annotated[str, OneOf(tuple(NEEDS), "needs")]


@checked
@dataclass(frozen=True)
class Stop:
    """One notebook or lab of the course, in the order a reader meets it."""

    path: str  # the notebook, relative to the repository ("labs/01_roofline_lab.ipynb")
    label: str  # its short name on the map ("ch. 1", "lab 1", "fact-check")
    part: str  # the part of the course it belongs to ("set-up", "chapter 1", "appendix")
    needs: Need  # a key of NEEDS


# Every notebook and lab of the table of contents, in its order (a test holds the two in step).
STOPS: tuple[Stop, ...] = (
    Stop("notebooks/00_check_your_setup.ipynb", "set-up", "set-up", "any-gpu"),
    Stop("labs/00_first_kernel_lab.ipynb", "lab 0", "set-up", "any-gpu"),
    Stop("notebooks/01_why_gpus_are_fast.ipynb", "ch. 1", "chapter 1", "any-gpu"),
    Stop("labs/01_roofline_lab.ipynb", "lab 1", "chapter 1", "any-gpu"),
    Stop("notebooks/02_will_it_fit.ipynb", "ch. 2", "chapter 2", "any-gpu"),
    Stop("labs/02_predict_then_measure_lab.ipynb", "lab 2", "chapter 2", "any-gpu"),
    Stop("notebooks/03_inference_vs_training.ipynb", "ch. 3", "chapter 3", "any-gpu"),
    Stop("labs/03_tokens_per_second_lab.ipynb", "lab 3", "chapter 3", "any-gpu"),
    Stop("notebooks/04_backends.ipynb", "ch. 4", "chapter 4", "any-gpu"),
    Stop("labs/04_triton_kernels_lab.ipynb", "lab 4", "chapter 4", "cuda-part"),
    Stop("notebooks/05_pitfalls.ipynb", "ch. 5", "chapter 5", "any-gpu"),
    Stop("labs/05_fix_slow_training_loop_lab.ipynb", "lab 5", "chapter 5", "any-gpu"),
    Stop("notebooks/06_choosing_hardware.ipynb", "ch. 6", "chapter 6", "cpu"),
    Stop("notebooks/07_beyond_one_gpu.ipynb", "ch. 7", "chapter 7", "cpu"),
    Stop("labs/07_torch_distributed_lab.ipynb", "lab 7", "chapter 7", "processes"),
    Stop("book/appendix/fact_check.ipynb", "fact-check", "appendix", "cpu"),
    Stop("book/appendix/published_measurements.ipynb", "published", "appendix", "cpu"),
)

# The title cell's reader time: "**Time:** 45 minutes" (the minutes, then anything after).
TIME = re.compile(r"\*\*Time:\*\*\s*(\d+) minutes")


def _root() -> Path:
    """The checkout the package runs from (src layout), where the notebooks are."""
    import gpulab

    root = Path(gpulab.__file__).resolve().parents[2]
    if not (root / "_toc.yml").exists():
        raise GpulabConfigError(
            "the course map reads the notebooks' title cells, which only a checkout of the "
            "course has; this gpulab is installed without them"
        )
    return root


@checked
def stated_minutes(notebook_json: str) -> int:
    """The minutes a notebook's title cell states ("**Time:** 45 minutes"), from its JSON."""
    try:
        cells = json.loads(notebook_json).get("cells") or [{}]
        source = cells[0].get("source", "")
        title = source if isinstance(source, str) else "".join(map(str, source))
    except (ValueError, AttributeError, TypeError, KeyError):  # not a notebook's JSON
        title = ""
    match = TIME.search(title)
    if match is None:
        raise GpulabConfigError(
            "the notebook's first cell states no '**Time:** N minutes'", "notebook_json"
        )
    return int(match.group(1))


@cache
def minutes() -> dict[str, int]:
    """Each stop's stated minutes, by its path, in the map's order."""
    root = _root()
    return {s.path: stated_minutes((root / s.path).read_text(encoding="utf-8")) for s in STOPS}


def total_minutes() -> int:
    """The whole course's stated minutes: every notebook and lab, the appendices included."""
    return sum(minutes().values())


@checked
def stop(path: Annotated[str, OneOf(tuple(s.path for s in STOPS), "path")]) -> Stop:
    """The stop of a notebook or lab, by its path."""
    return next(s for s in STOPS if s.path == path)
