"""Matplotlib figures over the library's results; no logic of their own (docs/design.md)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpulab.core.validate import checked

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    from matplotlib.figure import Figure

    from gpulab.machine.hardware import HardwareReport

GIB = 1024**3


__all__ = [
    "PART_COLORS",
    "bandwidth_sweep",
    "break_even_by_hours",
    "cost_over_time",
    "lines_with_reference",
    "matmul_sweep",
    "memory_breakdown",
    "memory_overview",
    "roofline",
    "stacked_counts",
    "throughput_vs_batch",
]


@checked
def memory_overview(report: HardwareReport) -> Figure:
    """Bar chart of RAM and each GPU's memory: in use vs free (introduced in notebook 00)."""
    import matplotlib.pyplot as plt

    rows = []  # (label, total GiB, free GiB)
    if report.ram_total_bytes:
        free = report.ram_available_bytes or 0
        rows.append(("RAM", report.ram_total_bytes / GIB, free / GIB))
    for gpu in report.gpus:
        if gpu.memory_total_bytes:
            rows.append(
                (
                    f"GPU {gpu.index}: {gpu.name}",
                    gpu.memory_total_bytes / GIB,
                    (gpu.memory_free_bytes or 0) / GIB,
                )
            )
    fig, ax = plt.subplots(figsize=(7, 1.6 + 0.5 * max(len(rows), 1)))
    if not rows:
        ax.text(0.5, 0.5, "memory sizes could not be read on this machine", ha="center")
        ax.set_axis_off()
        return fig
    labels = [r[0] for r in rows]
    used = [r[1] - r[2] for r in rows]
    free = [r[2] for r in rows]
    ax.barh(labels, used, color="#d95f02", label="in use")
    ax.barh(labels, free, left=used, color="#1b9e77", label="free")
    for y, (_, total, _) in enumerate(rows):
        ax.text(total, y, f" {total:.1f} GiB", va="center")
    ax.set_xlabel("GiB")
    ax.set_xlim(0, max(r[1] for r in rows) * 1.25)
    ax.invert_yaxis()
    # beside the bars, outside the axes: below them it would sit on the axis label
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("Memory on this machine")
    fig.tight_layout()
    return fig


def _peak_line(ax, value: float | None, label: str, scale: float, color: str) -> None:
    """A dashed horizontal line at a peak, labelled; nothing when the peak is unknown."""
    if value:
        ax.axhline(value / scale, linestyle="--", color=color, linewidth=1)
        ax.text(ax.get_xlim()[0], value / scale, f" {label}", va="bottom", fontsize=8, color=color)


@checked
def matmul_sweep(points: list, peaks: dict[str, float | None], title: str = "") -> Figure:
    """Achieved TFLOP/s against matrix size, a line per precision, peaks dashed (chapter 1 lab)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    colors = dict(
        zip(
            ("fp32", "tf32", "bf16", "fp16"),
            ("#1b9e77", "#7570b3", "#d95f02", "#e7298a"),
            strict=True,
        )
    )
    for precision in dict.fromkeys(p.precision for p in points):
        mine = [p for p in points if p.precision == precision]
        sizes = [int(p.size.split("x")[0]) for p in mine]
        ax.plot(
            sizes, [p.rate / 1e12 for p in mine], "o-", color=colors.get(precision), label=precision
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("matrix size n (n x n x n product)")
    ax.set_ylabel("achieved TFLOP/s")
    for precision, peak in peaks.items():
        _peak_line(ax, peak, f"{precision} peak", 1e12, colors.get(precision, "gray"))
    ax.legend(frameon=False)
    ax.set_title(title or "Matrix product: achieved vs peak")
    fig.tight_layout()
    return fig


@checked
def bandwidth_sweep(
    points: list, peak: float | None, caches: dict[str, int] | None = None, title: str = ""
) -> Figure:
    """Achieved GB/s against buffer size for copy and triad, cache sizes marked (chapter 1 lab)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for kind, marker in (("copy", "o-"), ("triad", "s-")):
        mine = [p for p in points if p.op == kind]
        if mine:
            ax.plot([p.nbytes for p in mine], [p.rate / 1e9 for p in mine], marker, label=kind)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per buffer")
    ax.set_ylabel("achieved GB/s")
    for name, size in (caches or {}).items():
        ax.axvline(size, color="gray", linewidth=0.8, linestyle=":")
        ax.text(size, ax.get_ylim()[1], f" {name}", va="top", fontsize=8, color="gray")
    _peak_line(ax, peak, "memory peak", 1e9, "black")
    ax.legend(frameon=False)
    ax.set_title(title or "Memory bandwidth: copy and triad")
    fig.tight_layout()
    return fig


@checked
def roofline(
    peak_flops: float,
    bandwidth: float,
    points: list,
    title: str = "",
    bandwidth_label: str = "memory bandwidth",
) -> Figure:
    """The roofline min(P, I*W) on log-log axes, measured operations placed on it (chapter 1)."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ridge = peak_flops / bandwidth
    intensities = [p.intensity for p in points if p.intensity] + [ridge]
    lo, hi = min(intensities) / 4, max(intensities) * 4
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.loglog(x, np.minimum(peak_flops, x * bandwidth) / 1e9, color="black", label="roofline")
    ax.axvline(ridge, color="gray", linestyle=":", linewidth=0.8)
    ax.text(ridge, peak_flops / 1e9, f" ridge {ridge:.3g} FLOP/B", va="bottom", fontsize=8)
    for p in points:
        if p.intensity:
            ax.loglog(p.intensity, p.rate / 1e9, "o")
            ax.annotate(
                p.op,
                (p.intensity, p.rate / 1e9),
                textcoords="offset points",
                xytext=(5, -10),
                fontsize=8,
            )
    ax.set_xlabel("arithmetic intensity (FLOP per byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title or f"Roofline ({bandwidth_label})")
    fig.tight_layout()
    return fig


PART_COLORS = {
    "weights": "#1b9e77",
    "kv_cache": "#d95f02",
    "activations": "#7570b3",
    "gradients": "#e7298a",
    "optimizer": "#66a61e",
    "overhead": "#999999",
}


@checked
def memory_breakdown(breakdowns: dict, capacities: dict | None = None, title: str = "") -> Figure:
    """Stacked bars of memory estimates (GB), one per label, with capacity lines (chapter 2)."""
    import matplotlib.pyplot as plt

    labels = list(breakdowns)
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.55 * len(labels)))
    left = [0.0] * len(labels)
    for part, color in PART_COLORS.items():
        values = [getattr(b, part) / 1e9 for b in breakdowns.values()]
        if any(values):
            ax.barh(labels, values, left=left, color=color, label=part.replace("_", " "))
            left = [a + v for a, v in zip(left, values, strict=True)]
    # each capacity a line of its own style, named in the legend: a label written beside the
    # line would lie on top of the bars it crosses
    styles = ["--", ":", "-.", (0, (5, 1, 1, 1, 1, 1))]
    for (name, capacity), style in zip((capacities or {}).items(), itertools.cycle(styles)):
        ax.axvline(capacity / 1e9, color="black", linestyle=style, linewidth=1.0, label=name)
    ax.invert_yaxis()
    ax.set_xlabel("GB (10^9 bytes)")
    # beside the plot, so that no bar or line runs under it
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.set_title(title or "Memory estimate")
    fig.tight_layout()
    return fig


@checked
def throughput_vs_batch(curves: dict, title: str = "") -> Figure:
    """Samples/s against batch size, one line per device, log-log (chapter 5's batch sweep)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, points in curves.items():
        ax.plot(
            [p.batch for p in points], [p.samples_per_s for p in points], marker="o", label=label
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch size (samples per call)")
    ax.set_ylabel("samples per second")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(frameon=False)
    ax.set_title(title or "Throughput grows with the work per launch")
    fig.tight_layout()
    return fig


@checked
def cost_over_time(
    curves: dict, local_label: str, title: str = "", xlabel: str = "months"
) -> Figure:
    """Cumulative cost of buying (one line) against renting (a dashed line per rate), chapter 6."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    curve = None
    for label, curve in curves.items():
        ax.plot(curve.months, curve.cloud, "--", label=label)
    if curve is not None:
        ax.plot(curve.months, curve.local, color="black", label=local_label)
        ax.set_ylabel(f"{curve.currency} spent so far")
    ax.set(xlabel=xlabel, title=title or "Buying against renting")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


@checked
def break_even_by_hours(
    hours: list, years: dict, title: str = "", useful_life_years: float | None = None
) -> Figure:
    """Years until buying pays off against hours of use a day, one line per rental (chapter 6)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, values in years.items():
        ax.plot(hours, [float("nan") if v is None else v for v in values], "o-", label=label)
    if useful_life_years:
        ax.axhline(
            useful_life_years,
            color="grey",
            linestyle=":",
            label=f"{useful_life_years:g} years of use",
        )
    ax.set(
        xlabel="hours a day at full load",
        ylabel="years until buying pays off",
        yscale="log",
        title=title or "When buying pays off",
    )
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


@checked
def stacked_counts(
    counts: dict,
    categories: Sequence[str],
    title: str = "",
    ylabel: str = "count",
    colors: Sequence[str | None] | None = None,
) -> Figure:
    """Stacked bars: one bar per group, one segment per category (the fact check's verdicts)."""
    import matplotlib.pyplot as plt

    categories = list(categories)
    colors = colors or [None] * len(categories)
    fig, ax = plt.subplots(figsize=(7, 3))
    labels = list(counts)
    bottom = [0] * len(labels)
    for category, color in zip(categories, colors, strict=True):
        heights = [counts[g].get(category, 0) for g in labels]
        ax.bar(labels, heights, bottom=bottom, label=category, color=color)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(
        fontsize=8,
        ncols=max(1, len(categories)),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.15),
        frameon=False,
    )
    fig.tight_layout()
    return fig


@checked
def lines_with_reference(
    x: list,
    series: dict,
    reference: tuple[float, str] | None = None,
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
) -> Figure:
    """One line per series against x, and an optional horizontal reference line (value, label)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, values in series.items():
        ax.plot(x, values, "o-", label=label)
    if reference is not None:
        ax.axhline(reference[0], color="black", linestyle="--", label=reference[1])
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig
