"""The course's map (gpulab.course_map), the introduction's figures (figures_intro) and its
picture (pictures_intro): every notebook and lab of the table of contents, in order, with the
minutes its own title cell states, and the page's table saying the same."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import pytest
import yaml

from gpulab.core.errors import GpulabConfigError
from gpulab.course import figures_intro
from gpulab.reference import course_map
from gpulab.ui import pictures_intro

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[2]
INTRO = ROOT / "book" / "intro.md"
# the page's words for each need (its table's "needs" column)
NEED_WORDS = {
    "CPU only": "cpu",
    "any GPU": "any-gpu",
    "CUDA for a part": "cuda-part",
    "several processes": "processes",
}


def _notebooks_in_toc() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [c["file"] for part in toc["parts"] for c in part.get("chapters", [])]
    return [f"{f}.ipynb" for f in files if (ROOT / f"{f}.ipynb").exists()]


def _title_minutes(path: str) -> int:
    """The oracle: the first '**Time:**' of the file's raw text, read without parsing JSON."""
    raw = (ROOT / path).read_text(encoding="utf-8")
    return int(re.search(r"\*\*Time:\*\* ?(\d+) minutes", raw).group(1))


def test_the_map_holds_every_notebook_and_lab_of_the_toc_in_its_order():
    assert [s.path for s in course_map.STOPS] == _notebooks_in_toc()
    assert {s.needs for s in course_map.STOPS} <= set(course_map.NEEDS)
    assert course_map.stop("labs/04_triton_kernels_lab.ipynb").needs == "cuda-part"


def test_each_stops_minutes_are_those_its_title_cell_states():
    minutes = course_map.minutes()
    assert list(minutes) == [s.path for s in course_map.STOPS]
    assert minutes == {s.path: _title_minutes(s.path) for s in course_map.STOPS}
    assert course_map.total_minutes() == sum(_title_minutes(s.path) for s in course_map.STOPS)


def test_a_title_cell_without_minutes_is_refused():
    cell = {"cells": [{"cell_type": "markdown", "source": ["# T\n", "**Time:** 12 minutes."]}]}
    assert course_map.stated_minutes(json.dumps(cell)) == 12
    cell["cells"][0]["source"] = "# T\n\n**Time:** a quarter of an hour."
    with pytest.raises(GpulabConfigError, match="states no"):
        course_map.stated_minutes(json.dumps(cell))


def test_the_introductions_figures_are_the_stops_minutes_and_their_sum():
    figures = figures_intro.figures()
    minutes = course_map.minutes()
    assert figures["map_nb02_min"] == minutes["notebooks/02_will_it_fit.ipynb"]
    assert figures["map_lab07_min"] == minutes["labs/07_torch_distributed_lab.ipynb"]
    assert figures["map_factcheck_min"] == minutes["book/appendix/fact_check.ipynb"]
    assert len(figures) == len(course_map.STOPS) + 2
    total = figures["map_total_hours"] * 60 + figures["map_total_rest_min"]
    assert total == sum(_title_minutes(s.path) for s in course_map.STOPS)
    assert 0 <= figures["map_total_rest_min"] < 60


def test_the_pages_table_names_each_stop_with_its_needs_and_its_minutes():
    rows = [line for line in INTRO.read_text(encoding="utf-8").splitlines() if "{fig}`map_" in line]
    table = [line for line in rows if line.startswith("|")]
    assert len(table) == len(course_map.STOPS)
    for stop, row in zip(course_map.STOPS, table, strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert stop.path.removesuffix(".ipynb").split("/")[-1] in cells[1], (stop.path, row)
        assert NEED_WORDS[cells[3]] == stop.needs, (stop.path, cells[3])
        assert cells[4] == f"{{fig}}`{figures_intro.figure_name(stop.path)}`"
    assert "{fig}`map_total_hours` h {fig}`map_total_rest_min` min" in " ".join(rows)


def test_the_map_picture_draws_each_stop_as_long_as_its_minutes():
    fig = pictures_intro.PICTURES["intro-map"]()
    ax = fig.axes[0]
    bars = ax.patches
    assert len(bars) == len(course_map.STOPS)
    widths = [round(b.get_width() * 60, 6) for b in bars]
    assert widths == [float(course_map.minutes()[s.path]) for s in course_map.STOPS]
    starts = [b.get_x() for b in bars]  # each starts where the one before ends
    assert all(
        abs(s - (p.get_x() + p.get_width())) < 1e-9
        for s, p in zip(starts[1:], bars[:-1], strict=True)
    )
    assert ax.get_title() and ax.get_xlabel().startswith("hours") and ax.get_ylabel()
    assert len(ax.get_legend().get_texts()) == len(course_map.NEEDS)
