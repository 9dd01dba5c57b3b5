"""What a reader should do next, given what their machine has (notebook 00)."""

from __future__ import annotations

from gpulab.core.validate import checked
from gpulab.machine.hardware import HardwareReport

__all__ = ["next_steps"]

GIB = 1024**3


@checked
def next_steps(report: HardwareReport) -> list[str]:
    """Advice for this machine, most important first, as plain sentences."""
    steps = []
    if report.backend == "cpu":
        if report.gpus_present or report.nvidia_device_files:
            steps.append(
                "A GPU is present but this Python cannot use it: fix the doctor's "
                "findings first (setup chapter), then run this notebook again."
            )
        else:
            steps.append(
                "No GPU was found: every notebook runs on the CPU in this course, and "
                "GPU-only cells say what a GPU shows. For a free GPU, open the notebooks "
                "in Colab (Runtime > Change runtime type > T4 GPU)."
            )
    elif report.backend in ("cuda", "rocm"):
        gpu = report.gpus[0] if report.gpus else None
        if gpu and gpu.memory_total_bytes:
            steps.append(
                f"Your {gpu.name} has {gpu.memory_total_bytes / GIB:.0f} GiB: chapter 2 "
                "tells which models fit in it, and at which precision."
            )
        steps.append("Chapter 1 measures how close your GPU gets to its peak FLOP/s and bandwidth.")
    elif report.backend == "mps":
        steps.append(
            "Apple silicon: the GPU shares the RAM (unified memory). Chapter 2's estimates "
            "apply to the part of RAM that macOS lets the GPU use."
        )
    elif report.backend == "xpu":
        steps.append(
            "Intel GPU (XPU): the notebooks run on it where PyTorch's XPU build has the "
            "operators; chapter 4 covers the backends."
        )
    if report.ram_total_bytes and report.ram_total_bytes < 8 * GIB:
        steps.append(
            f"This machine has {report.ram_total_bytes / GIB:.1f} GiB of RAM: run the "
            "notebooks with quick = True in their parameters cell."
        )
    steps.append("Then open the first lab, labs/00_first_kernel_lab, and write your first kernel.")
    return steps
