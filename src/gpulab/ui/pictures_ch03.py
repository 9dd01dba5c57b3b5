"""Chapter 3's page pictures, drawn at build time from the spec table and the model catalogue.

``PICTURES`` maps a picture's name to a function that draws it; the site renders each to
``_pictures/<name>.svg`` and the page shows it with a ``{figure}`` directive. The numbers come
from ``gpulab.specs``, ``gpulab.models`` and ``gpulab.estimate`` (the bytes through
``basis``, as the page's figures); this module only places them.

    from gpulab.ui import pictures_ch03
    fig = pictures_ch03.PICTURES["ch03-roofline"]()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from gpulab.core.units import GB
from gpulab.estimate import basis, memory, perf
from gpulab.reference import models, specs

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    from matplotlib.figure import Figure

__all__ = ["PICTURES", "RooflinePoint", "roofline", "roofline_points"]

# The case the page works: one model, its format, one card, one prompt, two decode batches.
MODEL, FORMAT, CARD = "Llama-3-8B", "bf16", "RTX 4090"
PROMPT = 4096  # tokens of the prompt that is prefilled, and the context of every decode step
BATCHES = (1, 64)  # decode steps of one conversation, and of many at once


class RooflinePoint(NamedTuple):
    """One phase of a reply on the roofline: its FLOPs, the bytes it moves, its intensity."""

    label: str
    flops: float  # FLOPs of the pass (gpulab.perf.forward_flops)
    bytes: float  # bytes it reads or writes at the least
    intensity: float  # FLOP per byte


def roofline_points() -> list[RooflinePoint]:
    """The prefill of a PROMPT-token prompt and a decode step at each of BATCHES, for MODEL in
    FORMAT: a prefill reads the weights once and writes the prompt's KV cache; a decode step
    reads the weights a token uses and every sequence's cache (basis.read_gb)."""
    spec = models.get(MODEL)
    flops = perf.forward_flops(spec, PROMPT, PROMPT)
    moved = basis.weights_gb(MODEL, FORMAT) * GB + memory.kv_cache_bytes(spec, PROMPT, 1, FORMAT)
    points = [RooflinePoint(f"prefill of {PROMPT:,} tokens", flops, moved, flops / moved)]
    for batch in BATCHES:
        flops = perf.forward_flops(spec, batch, PROMPT)
        moved = basis.read_gb(MODEL, FORMAT, context=PROMPT, batch=batch) * GB
        who = "one conversation" if batch == 1 else f"{batch} conversations"
        points.append(RooflinePoint(f"decode step, {who}", flops, moved, flops / moved))
    return points


def roofline() -> Figure:
    """Where a prefill and a decode step of MODEL sit on CARD's roofline (ch03-roofline)."""
    import matplotlib.pyplot as plt
    import numpy as np

    card = specs.get_gpu(CARD)
    peak, bandwidth = card.peak_flops(FORMAT), card.bandwidth_bytes_per_s
    ridge = peak / bandwidth
    points = roofline_points()
    lo = min(p.intensity for p in points) / 3
    hi = max(max(p.intensity for p in points), ridge) * 3
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.loglog(x, np.minimum(peak, x * bandwidth) / 1e12, color="black", label="roofline")
    ax.axvline(ridge, color="gray", linestyle=":", label=f"ridge point, {ridge:.0f} FLOP/byte")
    for point, marker in zip(points, "o^s", strict=False):
        rate = min(peak, point.intensity * bandwidth) / 1e12
        ax.loglog(point.intensity, rate, marker, markersize=9, label=point.label)
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("attainable TFLOP/s")
    ax.set_title(f"{MODEL} in {FORMAT.upper()} on an {CARD}, {PROMPT:,}-token context")
    ax.legend(frameon=False, loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


PICTURES: dict[str, Callable[[], Figure]] = {"ch03-roofline": roofline}
