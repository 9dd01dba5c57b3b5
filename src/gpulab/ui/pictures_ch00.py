"""The set-up page's picture: what runs when PyTorch uses a GPU, and who installs each part.

One column per backend the page covers (NVIDIA, AMD, Apple), one row per layer: your code, the
PyTorch build, the driver, the GPU. The CUDA toolkit stands apart, because running PyTorch never
uses it. The one figure the picture states, the lowest driver on which a CUDA 12 build runs, is
read from NVIDIA's table (``gpulab.drivers``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpulab.core.validate import checked
from gpulab.reference import drivers

__all__ = ["PICTURES", "software_stack"]

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    from matplotlib.figure import Figure

# The layers, top to bottom: the row's label, and its colour.
_ROWS = (
    ("your code\n(a notebook, a script)", "#e8e8e8"),
    ("the PyTorch build\n(pip, in your\nvirtual environment)", "#cfe3f3"),
    ("the driver\n(the system's,\ninstalled once)", "#f6dcc4"),
    ("the GPU", "#d9ead3"),
)
# One column per backend: its name, then what the PyTorch build, the driver and the GPU are.
_STACKS = (
    (
        "NVIDIA (CUDA)",
        "torch, with its own\nCUDA runtime, cuBLAS,\ncuDNN and NCCL",
        "NVIDIA driver\n(libcuda, kernel module);",
        "GeForce, RTX or\ndata-centre GPU",
    ),
    (
        "AMD (ROCm, Linux)",
        "torch, with its own\nHIP runtime, rocBLAS,\nMIOpen and RCCL",
        "amdgpu driver\n(AMD's installer)",
        "Radeon or Instinct GPU\non ROCm's list",
    ),
    (
        "Apple silicon (MPS)",
        "torch for macOS,\nwith the MPS backend",
        "macOS itself\n(no separate driver)",
        "M-series GPU\n(shares the CPU's memory)",
    ),
)
# The code row and the toolkit's box.
_CODE = 'the same code on every backend, its tensors on the device "cuda" (NVIDIA, AMD) or "mps"'
_TOOLKIT = (
    "CUDA toolkit\n(nvcc, headers): only to\ncompile your own CUDA C++;\nPyTorch never loads it"
)
_LABEL_W, _COL_W, _GAP, _ROW_H = 2.3, 2.9, 0.25, 1.25


def _box(ax, x: float, y: float, w: float, text: str, fill: str, **kw) -> None:
    """A rounded box with centred text."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x, y),
            w,
            _ROW_H,
            boxstyle="round,pad=0.02,rounding_size=0.12",
            facecolor=fill,
            edgecolor=kw.pop("edgecolor", "#555555"),
            linestyle=kw.pop("linestyle", "-"),
            linewidth=1,
        )
    )
    ax.text(x + w / 2, y + _ROW_H / 2, text, ha="center", va="center", fontsize=8, **kw)


@checked
def software_stack() -> Figure:
    """What runs when PyTorch uses an NVIDIA, AMD or Apple GPU, and the toolkit it never uses."""
    import matplotlib.pyplot as plt

    compat = drivers.required_drivers("12.0", "linux")[0]
    stacks = [list(s) for s in _STACKS]
    stacks[0][2] += f"\na CUDA 12 build needs\n{compat} or newer"
    fig, ax = plt.subplots(figsize=(9.5, 4.8))
    left = _LABEL_W + _GAP
    right = left + len(stacks) * (_COL_W + _GAP)
    top = len(_ROWS) * (_ROW_H + _GAP)
    for row, (label, color) in enumerate(_ROWS):
        y = top - (row + 1) * (_ROW_H + _GAP)
        ax.text(_LABEL_W, y + _ROW_H / 2, label, ha="right", va="center", fontsize=8)
        if row == 0:  # one program, whatever the backend
            _box(ax, left, y, right - left - _GAP, _CODE, color)
            continue
        for col, stack in enumerate(stacks):
            _box(ax, left + col * (_COL_W + _GAP), y, _COL_W, stack[row], color)
    for col, stack in enumerate(stacks):
        x = left + col * (_COL_W + _GAP) + _COL_W / 2
        ax.text(x, top + 0.1, stack[0], ha="center", va="bottom", fontsize=9, weight="bold")
    # the toolkit, apart: nothing above reaches it
    y_build = top - 2 * (_ROW_H + _GAP)
    x_kit = right + 0.3
    _box(ax, x_kit, y_build, _COL_W, _TOOLKIT, "#ffffff", edgecolor="#999999", linestyle="--")
    ax.text(
        x_kit + _COL_W / 2,
        y_build + _ROW_H + 0.1,
        "not needed to run PyTorch",
        ha="center",
        va="bottom",
        fontsize=9,
        weight="bold",
        color="#777777",
    )
    ax.set_xlim(0, x_kit + _COL_W + 0.1)
    ax.set_ylim(-0.1, top + 0.6)
    ax.set_axis_off()
    ax.set_title("What runs when PyTorch uses a GPU, and where each part comes from")
    fig.tight_layout()
    return fig


# The pictures of the set-up page, by name: each drawn when the site is built.
PICTURES: dict[str, Callable[[], Figure]] = {"ch00-stack": software_stack}
