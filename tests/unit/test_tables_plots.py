"""gpulab.tables and chapter 1's plots."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from gpulab import plots  # noqa: E402
from gpulab.bench.measure import RatePoint  # noqa: E402
from gpulab.ui.tables import Table  # noqa: E402


def test_table_text_and_html_agree():
    """Both renderings carry the same formatted cells; numbers right-aligned, HTML escaped."""
    t = Table(
        [{"a": "x<y", "b": 1234.5}, {"a": "z", "b": None}],
        ["a", "b"],
        headers={"b": "value"},
        formats={"b": lambda v: "-" if v is None else f"{v:.1f}"},
        title="T",
    )
    text = str(t)
    assert text.splitlines() == ["T", "a    value", "---  ------", "x<y  1234.5", "z    -"]
    html = t._repr_html_()
    assert "x&lt;y" in html and "<caption>T</caption>" in html and "1234.5" in html


def _points():
    return [
        RatePoint(
            "matmul", f"{n}x{n}x{n}", "fp32", 1e-3, 0.0, 2 * n**3, "FLOP/s", 12 * n * n, n / 6
        )
        for n in (64, 128)
    ]


def test_matmul_plot_has_a_line_per_precision_and_peak():
    """One line per precision plus a dashed line per known peak."""
    fig = plots.matmul_sweep(_points(), {"fp32": 1e12, "bf16": None})
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2  # the fp32 curve and the fp32 peak; no line for an unknown peak


def test_bandwidth_plot_marks_caches():
    """Copy and triad curves, and a dotted line per cache level."""
    pts = [RatePoint(k, "4 KiB", "fp32", 1e-6, 0.0, 8192, "B/s", 4096) for k in ("copy", "triad")]
    fig = plots.bandwidth_sweep(pts, None, {"L1d": 49152, "L2": 2**21})
    assert len(fig.axes[0].get_lines()) == 4


def test_roofline_plot_has_roof_ridge_and_points():
    """The roof, the ridge line and one marker per point with an intensity."""
    fig = plots.roofline(1e12, 1e11, _points())
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert any("ridge 10 FLOP/B" in t for t in labels) and labels.count("matmul") == 2


def test_table_columns_default_to_the_first_rows_keys():
    from gpulab.ui.tables import Table

    t = Table([{"a": 1, "b": 2.5}, {"a": 3, "b": None}])
    assert list(t.columns) == ["a", "b"]
    assert "2.5" in str(t) and "-" in str(t)


def test_throughput_vs_batch_draws_one_line_per_device():
    from gpulab import plots
    from gpulab.bench.batching import BatchPoint

    pts = [BatchPoint(1, 1e-4, 1e4, 1e9), BatchPoint(8, 2e-4, 4e4, 4e9)]
    fig = plots.throughput_vs_batch({"cpu": pts, "cuda:0": pts})
    ax = fig.axes[0]
    assert len(ax.lines) == 2
    assert list(ax.lines[0].get_xdata()) == [1, 8]
    assert ax.get_xscale() == "log"


def test_cost_plots_draw_the_curves_they_are_given():
    from gpulab import cost, plots

    box = cost.LocalSetup(15000, 350, 0.6, 10)
    rate = cost.CloudRate(12)
    fig = plots.cost_over_time({"A100": cost.cost_over_time(box, rate, 12)}, "buy")
    assert [line.get_label() for line in fig.axes[0].lines] == ["A100", "buy"]
    fig = plots.break_even_by_hours([1, 2], {"A100": [5.0, None]}, useful_life_years=3)
    assert len(fig.axes[0].lines) == 2


def test_stacked_counts_and_reference_lines():
    from gpulab import plots

    fig = plots.stacked_counts(
        {"ch. 1": {"correct": 2, "wrong": 1}, "ch. 2": {"wrong": 3}}, ["correct", "wrong"]
    )
    bars = fig.axes[0].patches
    assert [b.get_height() for b in bars] == [2, 0, 1, 3]
    fig = plots.lines_with_reference([0, 1], {"a": [1, 2]}, reference=(1.5, "ref"))
    assert [line.get_label() for line in fig.axes[0].lines] == ["a", "ref"]


@pytest.mark.parametrize(
    "spec, value, shown",
    [
        (".1f", 3.14159, "3.1"),
        (",.0f", 1234567.8, "1,234,568"),
        (".0%", 0.256, "26%"),
        ("+.1%", -0.0123, "-1.2%"),
        (".2f x", 1.5, "1.50x"),
        (".1f GiB", 3 * 2**30, "3.0 GiB"),
        (".2f MiB", 2**19, "0.50 MiB"),
        (".1f GB", 24e9, "24.0 GB"),
        (".2f ms", 0.0042, "4.20 ms"),
        (".0f us", 3e-5, "30 us"),
        (".0f GB/s", 1.008e12, "1008 GB/s"),
        (".1f TFLOP/s", 82.6e12, "82.6 TFLOP/s"),
        (".2f tokens/s", 12.345, "12.35 tokens/s"),  # not a scaled unit: appended as it is
        (".2f x|skipped", None, "skipped"),
        (".1f", None, "-"),
        (".1f|", None, ""),
        ("seconds", 0.0042, "4.2 ms"),
        ("size", 2**30, "1 GiB"),
        ("yes/no", False, "no"),
    ],
)
def test_a_format_string_shows_the_value_as_written_by_hand(spec, value, shown):
    table = Table([{"v": value}], formats={"v": spec})
    assert str(table).split("\n")[-1].strip() == shown
    # on the site the unit is held to its number by a no-break space
    assert f">{shown}</td>" in table._repr_html_().replace("\u00a0", " ")


def test_a_figure_keeps_its_unit_on_its_line():
    """A value cell never wraps; in words, a number and its unit are joined by a no-break space."""
    html = Table(
        [{"gpu": "RTX 4090", "size": 24e9, "why": "needs 48 GB at FP16, 35 tokens/s"}],
        headers={"size": "batch in 5.7 GiB"},
        formats={"size": ".1f GB"},
    )._repr_html_()
    assert ">batch in 5.7\u00a0GiB</th>" in html
    assert 'text-align:right;white-space:nowrap">24.0\u00a0GB</td>' in html
    assert ">needs 48\u00a0GB at FP16, 35\u00a0tokens/s</td>" in html
    assert 'text-align:left">RTX 4090</td>' in html  # a name's space is no unit's


def test_a_bad_format_string_names_its_column():
    with pytest.raises(ValueError, match=r"formats\['speed'\]"):
        Table([{"speed": 1.0}], formats={"speed": ".1q"})
    with pytest.raises(TypeError, match=r"formats\['speed'\]"):
        Table([{"speed": 1.0}], formats={"speed": 3})


def test_a_table_scrolls_in_its_own_box_and_names_its_key_columns():
    """The HTML is wrapped in a scroll container, so a wide table never spills over the page."""
    html = Table([{"gpu": "A", "needed_gb": 1.5}], key_columns=1, title='GPUs "fit"')._repr_html_()
    # a region a keyboard reaches, named by the title
    assert html.startswith(
        '<div class="gpulab-table-wrap" role="region" aria-label="GPUs &quot;fit&quot;" '
        'tabindex="0" style="max-width:100%;overflow-x:auto">'
    )
    assert html.endswith("</table></div>") and 'data-key-columns="1"' in html
    # a key without a title reads as words, never as a raw field name
    assert "<th" in html and ">needed gb</th>" in html and "needed_gb" not in html
    # a column already named in words keeps its underscores
    assert ">Q4_K_M (4.84\u00a0bit)</th>" in Table([{"Q4_K_M (4.84 bit)": 1.0}])._repr_html_()


def _overlaps(a, b) -> bool:
    """Two display-space boxes share area (touching edges do not count)."""
    return a.x0 < b.x1 - 0.5 and b.x0 < a.x1 - 0.5 and a.y0 < b.y1 - 0.5 and b.y0 < a.y1 - 0.5


def _collisions(fig):
    """Boxes the legend lies on: bars, text written in the axes, the axis labels."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        things = [*ax.patches, *ax.texts, ax.xaxis.label, ax.yaxis.label]
        found += [
            t for t in things if t.get_visible() and _overlaps(box, t.get_window_extent(renderer))
        ]
    return found


def test_legends_lie_on_no_bar_label_or_text():
    """The reported collisions: the legend over 'GiB' (notebook 00), capacity labels and the
    legend over the bars (chapter 2's calculator, notebook 05)."""
    from gpulab import hardware
    from gpulab.estimate.memory import Breakdown

    g = 10**9
    overview = plots.memory_overview(hardware.detect())
    breakdown = plots.memory_breakdown(
        {
            "fp32, gradients kept": Breakdown(5 * g, 0, 70 * g, 5 * g, 10 * g),
            "all of the above": Breakdown(2 * g, 0, 6 * g, 3 * g, 14 * g),
        },
        {"24 GB card": 24 * g, "80 GB card": 80 * g},
        title="t",
    )
    for fig in (overview, breakdown):
        assert _collisions(fig) == []
    # the capacities are named in the legend, not written over the bars
    assert {"24 GB card", "80 GB card"} <= {
        t.get_text() for t in breakdown.axes[0].get_legend().get_texts()
    }
    assert len(breakdown.axes[0].texts) == 0
