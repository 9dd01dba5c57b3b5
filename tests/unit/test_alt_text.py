"""Alt text read off a figure: what a screen reader says for each plot on the site."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from IPython.core.formatters import DisplayFormatter  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gpulab.ui import alt_text  # noqa: E402


def test_a_line_chart_names_its_title_axes_ranges_and_series():
    fig, ax = plt.subplots()
    ax.plot([1, 10, 100], [2, 4, 8], label="measured")
    ax.plot([1, 100], [3, 3], label="peak")
    ax.set(xscale="log", xlabel="bytes", ylabel="GB/s", title="Copy bandwidth", ylim=(0, 10))
    ax.legend()
    fig.canvas.draw()
    text = alt_text.describe(fig)
    assert text.startswith("line chart: Copy bandwidth.")
    assert "horizontal axis: bytes, log scale" in text
    assert "vertical axis: GB/s, 0 to 10." in text and "series: measured; peak." in text
    plt.close(fig)


def test_bars_read_out_their_categories_and_values():
    fig, ax = plt.subplots()
    ax.bar(["weights", "KV cache"], [14.0, 2.5], label="Llama-3-8B")
    ax.set_ylabel("GB")
    fig.canvas.draw()
    text = alt_text.describe(fig)
    assert "horizontal axis: unlabelled, categories weights, KV cache" in text
    assert "values: Llama-3-8B 14, 2.5." in text
    plt.close(fig)


def test_panels_are_numbered_and_an_empty_figure_says_so():
    fig, (a, b) = plt.subplots(1, 2)
    a.plot([0, 1], [0, 1])
    b.plot([0, 1], [1, 0])
    fig.canvas.draw()
    assert alt_text.describe(fig).startswith("Panel 1 of 2, line chart.")
    assert alt_text.describe(Figure()) == "An empty figure."
    plt.close(fig)


class _Shell:
    def __init__(self):
        self.display_formatter = DisplayFormatter()


def test_install_wraps_the_png_formatter_once_and_adds_alt_text():
    shell = _Shell()
    assert not alt_text.install(shell)  # no figure formatter yet: nothing to wrap
    shell.display_formatter.formatters["image/png"].for_type(Figure, lambda fig: b"\x89PNG")
    assert alt_text.install(shell) and not alt_text.install(shell)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.set_title("T")
    data, metadata = shell.display_formatter.format(fig)
    assert data["image/png"] == b"\x89PNG"
    assert metadata["image/png"]["alt"].startswith("line chart: T.")
    plt.close(fig)
