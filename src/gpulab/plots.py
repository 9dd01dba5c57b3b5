"""Matplotlib figures over the library's results; no logic of their own (DESIGN.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    from matplotlib.figure import Figure

    from gpulab.hardware import HardwareReport

GIB = 1024**3


def memory_overview(report: HardwareReport) -> Figure:
    """Bar chart of RAM and each GPU's memory: in use vs free (introduced in notebook 00)."""
    import matplotlib.pyplot as plt

    rows = []  # (label, total GiB, free GiB)
    if report.ram_total_bytes:
        free = report.ram_available_bytes or 0
        rows.append(("RAM", report.ram_total_bytes / GIB, free / GIB))
    for gpu in report.gpus:
        if gpu.memory_total_bytes:
            rows.append((f"GPU {gpu.index}: {gpu.name}", gpu.memory_total_bytes / GIB,
                         (gpu.memory_free_bytes or 0) / GIB))
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
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=2, frameon=False)
    ax.set_title("Memory on this machine")
    fig.tight_layout()
    return fig
