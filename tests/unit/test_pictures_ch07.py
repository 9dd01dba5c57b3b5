"""Chapter 7's page picture: the ring all-reduce, its schedule checked by running it."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gpulab.ui import pictures_ch07  # noqa: E402


def _simulate(n: int) -> list[list[list[int]]]:
    """Run the schedule on ranks whose chunk c starts as the set {rank}: what each ends with."""
    held = [[{r} for _ in range(n)] for r in range(n)]
    sends = pictures_ch07.ring_schedule(n)
    for phase in ("reduce-scatter", "all-gather"):
        for step in range(n - 1):
            batch = [s for s in sends if s.phase == phase and s.step == step]
            assert sorted(s.rank for s in batch) == list(range(n))  # every rank sends once
            outgoing = [(s.rank, s.chunk, set(held[s.rank][s.chunk])) for s in batch]
            for rank, chunk, data in outgoing:
                to = (rank + 1) % n
                if phase == "reduce-scatter":
                    assert not held[to][chunk] & data  # a sum never counts a rank twice
                    held[to][chunk] |= data
                else:
                    held[to][chunk] = data
    return [[sorted(c) for c in rank] for rank in held]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_the_schedule_is_an_all_reduce(n):
    """After both phases every rank holds every chunk summed over all ranks, exactly once each."""
    assert all(chunk == list(range(n)) for rank in _simulate(n) for chunk in rank)
    # each rank sends 2 (n - 1) chunks of 1/n of the buffer: the ring's 2 (n - 1) / n
    sends = pictures_ch07.ring_schedule(n)
    assert all(sum(s.rank == r for s in sends) == 2 * (n - 1) for r in range(n))


def test_the_page_has_one_picture_and_it_draws():
    assert set(pictures_ch07.PICTURES) == {"ch07-ring"}
    fig = pictures_ch07.PICTURES["ch07-ring"]()
    try:
        ax = fig.axes[0]
        assert ax.get_title().startswith("A ring all-reduce over 4 ranks")
        assert "6 chunks, 1.5 x the buffer" in ax.get_title()
        assert ax.get_xlabel() and ax.get_ylabel()
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == [f"chunk c{c}, 1/4 of the buffer" for c in range(4)]
    finally:
        plt.close(fig)
