"""Chapter 7's page picture: a ring all-reduce, drawn step by step.

``PICTURES`` maps a picture's name to a function that draws it; the site renders each to
``_pictures/<name>.svg`` and the page shows it with a ``{figure}`` directive. The schedule is
the ring's of the chapter (and of the notebook's ``ring_reduce_scatter`` and
``ring_all_gather``): at reduce-scatter step s, rank r sends chunk (r - s) mod n to rank r + 1,
which adds it; at all-gather step s, rank r sends chunk (r + 1 - s) mod n, which its neighbour
keeps. The bytes per rank in the title come from ``gpulab.collectives``.

    from gpulab.ui import pictures_ch07
    fig = pictures_ch07.PICTURES["ch07-ring"]()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from gpulab.core.validate import PositiveInt, checked
from gpulab.estimate import collectives

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    from matplotlib.figure import Figure

__all__ = ["PICTURES", "RANKS", "RingSend", "ring", "ring_schedule"]

RANKS = 4  # the ring the page draws


class RingSend(NamedTuple):
    """One chunk sent at one step of a ring all-reduce."""

    phase: str  # "reduce-scatter" or "all-gather"
    step: int  # 0-based step within the phase
    rank: int  # the sender; the receiver is (rank + 1) mod n
    chunk: int  # which of the n chunks travels


@checked
def ring_schedule(n: PositiveInt = RANKS) -> list[RingSend]:
    """Every send of a ring all-reduce over n ranks, in order: n - 1 steps of each phase."""
    sends = []
    for phase, offset in (("reduce-scatter", 0), ("all-gather", 1)):
        for step in range(n - 1):
            sends += [RingSend(phase, step, r, (r + offset - step) % n) for r in range(n)]
    return sends


def ring() -> Figure:
    """Ranks on a row, one row per step: which chunk each rank sends to its right (ch07-ring)."""
    import matplotlib.pyplot as plt

    n = RANKS
    sends = ring_schedule(n)
    colours = plt.get_cmap("tab10").colors
    fig, ax = plt.subplots(figsize=(7.5, 5))
    rows = 2 * (n - 1)
    for k, send in enumerate(sends):
        row = k // n  # 0 at the top
        y = rows - row
        x = send.rank
        summed = send.phase == "reduce-scatter"
        ax.add_patch(
            plt.Rectangle(
                (x - 0.3, y - 0.3),
                0.6,
                0.6,
                facecolor=colours[send.chunk],
                alpha=0.35 + 0.15 * send.step if summed else 0.9,
                edgecolor="black",
            )
        )
        ax.text(x, y, f"c{send.chunk}", ha="center", va="center", fontsize=9)
        end = x + 0.7 if send.rank < n - 1 else x + 0.55
        ax.annotate("", xy=(end, y), xytext=(x + 0.32, y), arrowprops={"arrowstyle": "->"})
    ax.axhline(rows - (n - 1) + 0.5, color="gray", linestyle=":")
    ax.text(n - 0.35, rows - 0.9, "reduce-scatter:\nthe receiver adds", fontsize=8, va="top")
    ax.text(n - 0.35, n - 1.9, "all-gather:\nthe receiver keeps", fontsize=8, va="top")
    for chunk in range(n):
        ax.bar(0, 0, color=colours[chunk], label=f"chunk c{chunk}, 1/{n} of the buffer")
    ax.set_xlim(-0.6, n + 1.1)
    ax.set_ylim(0.4, rows + 0.6)
    ax.set_xticks(range(n), [f"rank {r}" for r in range(n)])
    ax.set_yticks(range(rows, 0, -1), [f"step {k % (n - 1) + 1}" for k in range(rows)], fontsize=8)
    ax.set_xlabel(f"rank (each sends to its right; rank {n - 1} sends to rank 0)")
    ax.set_ylabel("step of the ring (top first)")
    factor = collectives.allreduce_bus_factor(n)
    ax.set_title(
        f"A ring all-reduce over {n} ranks: each rank sends {2 * (n - 1)} chunks, "
        f"{factor:g} x the buffer"
    )
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


PICTURES: dict[str, Callable[[], Figure]] = {"ch07-ring": ring}
