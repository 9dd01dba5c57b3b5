"""Chapter 1's pictures: how a GPU runs many threads, and the roofline of the spec tables.

Each entry of ``PICTURES`` draws one figure of the chapter page from gpulab's data (the GPU and
CPU spec tables, ``gpulab.estimate``); the site build renders it to ``_pictures/<name>.svg``.
No picture measures anything: what this machine does is drawn in notebook 01.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpulab.estimate import basis, roofline
from gpulab.reference import specs

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    from matplotlib.figure import Figure

__all__ = [
    "GPU",
    "CPU",
    "PICTURES",
    "WARP_THREADS",
    "roofline_lines",
    "threads",
    "roofline_picture",
]

GPU = "RTX 4090"  # the card the chapter page works through
CPU = "Core i9-13900K"  # the article's CPU
# Threads per warp: the unit in which an NVIDIA SM issues one instruction to many threads
# (CUDA C++ Programming Guide, "SIMT Architecture"). A definition of CUDA, not a spec figure.
WARP_THREADS = 32
_SM, _SM_SHOWN, _LANE, _TENSOR, _WAITING = "#9ecae1", "#d95f02", "#1b9e77", "#7570b3", "#d9d9d9"


def _sm_layout() -> tuple[int, int, int]:
    """(SMs, blocks per SM, lanes per block) of GPU, from its spec-table row."""
    g = specs.get_gpu(GPU)
    blocks = g.tensor_cores // g.sms  # one Tensor Core per processing block of an SM
    return g.sms, blocks, g.cuda_cores // g.sms // blocks


def threads() -> Figure:
    """The chip as a grid of SMs, and one SM enlarged: blocks of FP32 lanes, each running one
    warp of threads in step, with its Tensor Core and the warps that wait their turn."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import ConnectionPatch, Patch, Rectangle

    sms, blocks, lanes = _sm_layout()
    per_row = 16
    fig, (chip, sm) = plt.subplots(1, 2, figsize=(11, 4.6), width_ratios=(1, 1.35))
    rows = -(-sms // per_row)
    for i in range(sms):
        x, y = i % per_row, rows - 1 - i // per_row
        color = _SM_SHOWN if i == per_row - 1 else _SM  # the SM enlarged
        chip.add_patch(Rectangle((x + 0.1, y + 0.1), 0.8, 0.8, color=color))
    chip.set(xlim=(0, per_row), ylim=(0, rows), aspect="equal")
    chip.set_title(f"the whole {GPU}: {sms} SMs", fontsize=10)
    chip.set_axis_off()
    for b in range(blocks):
        top = blocks - b
        for shadow in (0.45, 0.3, 0.15):  # warps resident on the SM, waiting for their turn
            sm.add_patch(Rectangle((shadow, top - 0.55 + shadow / 3), lanes, 0.4, color=_WAITING))
        for lane in range(lanes):
            sm.add_patch(Rectangle((lane + 0.1, top - 0.6), 0.8, 0.4, color=_LANE))
        sm.add_patch(Rectangle((lanes + 1, top - 0.65), 3, 0.5, color=_TENSOR))
        sm.text(
            0,
            top - 0.05,
            f"block {b + 1}: one warp of {WARP_THREADS} threads, "
            "one instruction, all lanes in step",
            fontsize=8,
            va="bottom",
        )
    sm.set(xlim=(-0.2, lanes + 4.5), ylim=(0, blocks + 0.4))
    sm.set_title(
        f"one SM: {blocks} blocks x {lanes} FP32 lanes = {blocks * lanes} lanes", fontsize=10
    )
    sm.set_axis_off()
    link = ConnectionPatch(
        (per_row - 0.1, rows - 0.5),
        (-0.2, blocks - 0.3),
        "data",
        "data",
        axesA=chip,
        axesB=sm,
        color=_SM_SHOWN,
        linestyle="--",
    )
    fig.add_artist(link)
    legend = [
        Patch(color=_SM, label="SM (streaming multiprocessor)"),
        Patch(color=_LANE, label="FP32 lane (a CUDA core): one thread of the running warp"),
        Patch(color=_WAITING, label="other warps on the SM, waiting (for memory, mostly)"),
        Patch(color=_TENSOR, label="Tensor Core: a small matrix product per instruction"),
    ]
    fig.legend(handles=legend, loc="lower center", ncol=2, frameon=False, fontsize=8)
    g = specs.get_gpu(GPU)
    fig.suptitle(
        f"How an {GPU} runs threads: {sms} SMs x {blocks * lanes} lanes = "
        f"{g.cuda_cores:,} FP32 lanes, each clock"
    )
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def roofline_lines() -> dict[str, tuple[float, float]]:
    """Each roof of the picture: label -> (peak FLOP/s, bandwidth in bytes/s), from the tables."""
    g, c = specs.get_gpu(GPU), specs.get_cpu(CPU)
    cpu_peak = basis.cpu_peak_tflops(CPU, "all-core") * 1e12
    return {
        f"{GPU}, BF16 on Tensor Cores": (g.peak_flops("bf16"), g.bandwidth_bytes_per_s),
        f"{GPU}, FP32": (g.peak_flops("fp32"), g.bandwidth_bytes_per_s),
        f"i9-13900K, FP32 at all-core turbo, DDR5-{c.memory_max_mts}": (
            cpu_peak,
            c.memory_bandwidth_gbs * 1e9,
        ),
    }


def _operations() -> dict[str, float]:
    """The intensities (FLOP/byte) the page works through, marked on the roofline."""
    return {
        "FP32 add": roofline.add_cost(1, "fp32").intensity,
        # decoding at batch 1: each BF16 weight (2 bytes) is used in one multiply-add (2 FLOPs)
        "LLM decode, batch 1": 2 / roofline.itemsize("bf16"),
        "FP16 matmul, n = 4096": roofline.matmul_cost(4096, 4096, 4096, "fp16").intensity,
    }


def roofline_picture() -> Figure:
    """Attainable TFLOP/s against arithmetic intensity, log-log, for the spec-table peaks and
    bandwidths of the RTX 4090 and the i9-13900K, with three operations marked."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(8, 4.8))
    x = np.logspace(-2, 4, 400)
    for (label, (peak, bandwidth)), color in zip(
        roofline_lines().items(), ("#d95f02", "#1b9e77", "#7570b3"), strict=True
    ):
        ax.loglog(x, np.minimum(peak, x * bandwidth) / 1e12, color=color, label=label)
        ridge = roofline.ridge_point(peak, bandwidth)
        ax.plot(ridge, peak / 1e12, "o", color=color)
        ax.annotate(
            f"ridge {ridge:.3g}",
            (ridge, peak / 1e12),
            textcoords="offset points",
            xytext=(4, 5),
            fontsize=8,
            color=color,
        )
    for name, intensity in _operations().items():
        ax.axvline(intensity, color="gray", linestyle=":", linewidth=0.9)
        ax.text(intensity, 3e-4, f" {name}", rotation=90, fontsize=8, color="gray", va="bottom")
    ax.set(xlim=(1e-2, 1e4), ylim=(2e-4, 500))
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("attainable TFLOP/s")
    ax.set_title("The roofline: min(peak, intensity x bandwidth), spec-table figures")
    ax.legend(loc="upper left", frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


PICTURES: dict[str, Callable[[], Figure]] = {
    "ch01-threads": threads,
    "ch01-roofline": roofline_picture,
}
