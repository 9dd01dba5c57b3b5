"""Alt text for every matplotlib figure a notebook shows, written from the figure itself.

A screen reader cannot read a plot, so the site gives each one alt text that says what it
shows: the kind of chart, its title, each axis with its label and range, and its series. The
words are read off the figure's axes when it is displayed, so they cannot drift from it.

The course's kernels load this module as an IPython extension (jupyter/kernels/*/kernel.json);
each figure's PNG output then carries ``{"alt": ...}`` in its metadata, which the site build
(tools/staging/site_copy.py) hands to myst-nb as the image's alt attribute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.core.validate import checked, lenient

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["WRAPPED", "describe", "describe_axes", "install", "load_ipython_extension"]

WRAPPED = "_gpulab_alt_text"  # marks the PNG formatter once it adds alt text


def _number(value: float) -> str:
    return f"{value:,.3g}" if abs(value) < 1e4 else f"{value:,.0f}"


def _axis(name: str, axis, limits: tuple[float, float]) -> str:
    """One axis: its label, its scale when logarithmic, and its categories or its range."""
    label = axis.get_label().get_text()
    categories = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
    if not label and not categories:
        return ""  # an axis a plot hides (a single horizontal bar's height) says nothing
    words = f"{name} axis: {label or 'unlabelled'}"
    if axis.get_scale() == "log":
        words += ", log scale"
    if categories and not all(_looks_numeric(c) for c in categories):
        return f"{words}, categories {', '.join(categories)}"
    lo, hi = sorted(limits)
    return f"{words}, {_number(lo)} to {_number(hi)}"


def _bar_values(ax) -> str:
    """Each labelled set of bars with its values, when there are few enough to read out."""
    from matplotlib.container import BarContainer

    sets = []
    for c in ax.containers:
        values = getattr(c, "datavalues", None)
        if isinstance(c, BarContainer) and values is not None and 0 < len(values) <= 12:
            name = c.get_label() if c.get_label() and not c.get_label().startswith("_") else "bars"
            sets.append(f"{name} " + ", ".join(_number(float(v)) for v in values))
    return "values: " + "; ".join(sets) if sets else ""


def _kind(ax) -> str:
    from matplotlib.container import BarContainer

    kinds = []
    if any(isinstance(c, BarContainer) for c in ax.containers):
        kinds.append("bar chart")
    if ax.lines:
        kinds.append("line chart")
    if ax.collections:
        kinds.append("scatter plot")
    if ax.images:
        kinds.append("image")
    return " with ".join(kinds) or "chart"


@checked
def describe_axes(ax: Axes) -> str:
    """One axes in words: kind, title, both axes with label and range, series and categories."""
    suptitle = getattr(ax.figure, "_suptitle", None)  # a figure-wide title, when set
    title = ax.get_title() or (suptitle.get_text() if suptitle is not None else "")
    parts = [_kind(ax) + (f": {title}" if title else "")]
    parts.append(_axis("horizontal", ax.xaxis, ax.get_xlim()))
    parts.append(_axis("vertical", ax.yaxis, ax.get_ylim()))
    series = [
        label for label in ax.get_legend_handles_labels()[1] if label and not label.startswith("_")
    ]
    if series:
        parts.append("series: " + "; ".join(series))
    parts.append(_bar_values(ax))
    return ". ".join(p for p in parts if p) + "."


def _looks_numeric(text: str) -> bool:
    if text.startswith("$"):  # mathtext tick labels: 10^3 on a log axis
        return True
    cleaned = text.replace(",", "").replace("\u2212", "-").replace("$", "").strip()
    try:
        float(cleaned.split(" ")[0].rstrip("%x"))
        return True
    except ValueError:
        return False


@checked
def describe(fig: Figure) -> str:
    """The figure in words, one sentence group per plotting axes (legends and colorbars skipped)."""
    axes = [
        ax
        for ax in fig.axes
        if ax.get_visible()
        and (ax.lines or ax.patches or ax.collections or ax.images or ax.containers)
    ]
    if not axes:
        return "An empty figure."
    if len(axes) == 1:
        return describe_axes(axes[0])
    return " ".join(
        f"Panel {i} of {len(axes)}, {describe_axes(ax)}" for i, ax in enumerate(axes, 1)
    )


@lenient("takes an IPython shell, which it only reads: any object with a display_formatter")
def install(shell: Any) -> bool:
    """Wrap the shell's PNG formatter for figures so each PNG has alt text; True if wrapped now."""
    from matplotlib.figure import Figure

    png = shell.display_formatter.formatters["image/png"]
    try:
        inner = png.lookup_by_type(Figure)
    except KeyError:  # no inline backend yet: the next cell tries again
        return False
    if getattr(inner, WRAPPED, False):
        return False

    def png_with_alt_text(fig):
        data = inner(fig)
        if data is None:
            return None
        data, metadata = data if isinstance(data, tuple) else (data, {})
        try:
            alt = describe(fig)
        except Exception:  # a figure this module cannot read must still be shown
            alt = "A figure; its description could not be read from it."
        return data, {**(metadata or {}), "alt": alt}

    setattr(png_with_alt_text, WRAPPED, True)
    png.for_type(Figure, png_with_alt_text)
    return True


@lenient("IPython calls it with its shell when the kernel loads the extension")
def load_ipython_extension(shell: Any) -> None:
    """Wrap the formatter now and keep it wrapped.

    matplotlib's inline backend registers its formatter when pyplot makes its first figure, so
    one is made and closed here, at kernel start (a figure shown in the cell that first imports
    pyplot gets alt text too); `%matplotlib inline` registers it again, so the wrapper is
    renewed after every cell, before the backend flushes the cell's figures.
    """
    import matplotlib.pyplot as plt

    plt.close(plt.figure())  # pyplot loads its backend at the first figure: the inline backend
    install(shell)
    shell.events.register("post_execute", lambda: install(shell))
