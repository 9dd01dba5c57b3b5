"""Chapter 5's picture: the queue of kernels, drawn from a schedule the tests work out by hand."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpulab.ui import pictures_ch05  # noqa: E402


def test_the_page_has_one_picture_and_it_draws():
    assert set(pictures_ch05.PICTURES) == {"ch05-queue"}
    fig = pictures_ch05.PICTURES["ch05-queue"]()
    try:
        assert fig._suptitle.get_text().startswith("The queue of kernels")
        first, second = fig.axes
        assert first.get_title().startswith(".item() every step")
        assert second.get_title().startswith("loss kept on the device")
        assert "kernel run times" in second.get_xlabel()
        labels = [t.get_text() for t in second.get_legend().get_texts()]
        assert labels == [
            "device: a kernel runs",
            "host: queues a kernel, or reads a value",
            "host: waits for the device",
        ]
    finally:
        plt.close(fig)


@pytest.mark.parametrize(
    ("steps", "kernels", "launch", "read"), [(3, 4, 0.4, 0.3), (5, 2, 0.1, 0.5)]
)
def test_a_read_every_step_leaves_the_device_a_gap_per_step(steps, kernels, launch, read):
    """After each read but the last the device waits for the read and the next launch; with
    launches shorter than a kernel and one read at the end, it never waits."""
    every = pictures_ch05.schedule(steps, kernels, launch, True, read)
    once = pictures_ch05.schedule(steps, kernels, launch, False, read)
    work = steps * kernels  # one unit per kernel
    assert every.device_idle == pytest.approx((steps - 1) * (read + launch))
    assert once.device_idle == pytest.approx(0)
    assert every.end == pytest.approx(launch + work + (steps - 1) * (read + launch) + read)
    assert once.end == pytest.approx(launch + work + read)
    assert len(every.waits) == steps and len(once.waits) == 1


def test_launches_longer_than_kernels_idle_the_device_without_any_read():
    """Too little work per launch (section 4): the device waits for the host between kernels."""
    s = pictures_ch05.schedule(2, 3, 1.5, False, 0.2)
    assert s.device_idle == pytest.approx((1.5 - 1) * (2 * 3 - 1))
    assert s.waits == [(2 * 3 * 1.5, 1.0)]  # only the last kernel is left to wait for
