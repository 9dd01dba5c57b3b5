"""The introduction's picture: the course as a path, stop by stop (book/intro.md shows it).

- ``intro-map``: one row per part of the course (set-up, chapters 1 to 7, the appendix), each
  notebook and lab a bar that starts where the one before it ends, as long as the minutes its
  title cell states, coloured by what it needs to run (``gpulab.course_map.NEEDS``). Read from
  the top left to the bottom right, it is the path through the course and its time.

Registered under the name ``pictures_intro`` (the picture registry finds ``pictures_chNN`` and
``pictures_intro``). The function takes no argument and returns a matplotlib Figure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpulab.reference import course_map

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    from matplotlib.figure import Figure

__all__ = ["PICTURES", "course_path", "path_bars"]

# One colour per need, from least to most (colour-blind safe: Okabe and Ito's palette).
_COLOURS = {"cpu": "#999999", "any-gpu": "#0072B2", "cuda-part": "#E69F00", "processes": "#CC79A7"}
_LABEL_INSIDE_H = 0.5  # a bar of at least half an hour holds its label; a shorter one has it beside


def path_bars() -> list[tuple[course_map.Stop, float, float]]:
    """Each stop with its start and its length in hours, the next starting where it ends."""
    bars, start = [], 0.0
    for stop in course_map.STOPS:
        hours = course_map.minutes()[stop.path] / 60
        bars.append((stop, start, hours))
        start += hours
    return bars


def course_path() -> Figure:
    """The course as a path: a row per part, a bar per notebook or lab, coloured by its needs."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    bars = path_bars()
    parts = list(dict.fromkeys(stop.part for stop, _, _ in bars))
    fig, ax = plt.subplots(figsize=(9, 4.8))
    narrow: dict[str, int] = {}  # a row's bars too short for a label: above, below, in turn
    for stop, start, hours in bars:
        row = parts.index(stop.part)
        ax.barh(row, hours, left=start, height=0.6, color=_COLOURS[stop.needs], edgecolor="white")
        if hours >= _LABEL_INSIDE_H:
            ax.text(
                start + hours / 2,
                row,
                stop.label,
                ha="center",
                va="center",
                fontsize=7,
                color="black" if stop.needs == "cuda-part" else "white",
            )
        else:
            below = narrow.get(stop.part, 0) % 2 == 1
            ax.text(
                start + hours / 2,
                row + (0.32 if below else -0.32),
                stop.label,
                ha="center",
                va="top" if below else "bottom",
                fontsize=7,
            )
            narrow[stop.part] = narrow.get(stop.part, 0) + 1
    handles = [Patch(color=_COLOURS[need], label=words) for need, words in course_map.NEEDS.items()]
    total = course_map.total_minutes()
    ax.set(
        yticks=range(len(parts)),
        yticklabels=parts,
        xlabel="hours from the start (each notebook's stated time: reading and work)",
        ylabel="part of the course",
        title=f"The path through the course: {len(bars)} notebooks and labs, "
        f"{total // 60} h {total % 60} min",
    )
    ax.invert_yaxis()
    ax.set_xlim(0, sum(h for _, _, h in bars) * 1.02)
    ax.legend(
        handles=handles,
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.15),
        ncol=2,
        frameon=False,
    )
    fig.tight_layout()
    return fig


PICTURES: dict[str, Callable[[], Figure]] = {"intro-map": course_path}
