"""gpulab.tables and chapter 1's plots."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from gpulab import plots  # noqa: E402
from gpulab.measure import RatePoint  # noqa: E402
from gpulab.tables import Table  # noqa: E402


def test_table_text_and_html_agree():
    """Both renderings carry the same formatted cells; numbers right-aligned, HTML escaped."""
    t = Table([{"a": "x<y", "b": 1234.5}, {"a": "z", "b": None}], ["a", "b"],
              headers={"b": "value"}, formats={"b": lambda v: "-" if v is None else f"{v:.1f}"},
              title="T")
    text = str(t)
    assert text.splitlines() == ["T", "a    value", "---  ------", "x<y  1234.5", "z    -"]
    html = t._repr_html_()
    assert "x&lt;y" in html and "<caption>T</caption>" in html and "1234.5" in html


def _points():
    return [RatePoint("matmul", f"{n}x{n}x{n}", "fp32", 1e-3, 0.0, 2 * n**3, "FLOP/s", 12 * n * n,
                      n / 6) for n in (64, 128)]


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
