"""The four version numbers of a CUDA setup, and which of them matter (chapter 5).

- the driver (nvidia-smi's "Driver Version"): the kernel module and libcuda; one per machine;
- the CUDA version the driver supports (nvidia-smi's "CUDA Version"): the newest runtime it
  can run, not something installed;
- the CUDA runtime bundled in the PyTorch wheel (`torch.version.cuda`): pip and conda builds
  carry their own runtime, cuBLAS and cuDNN, so a local toolkit and PATH do not matter to them;
- a local CUDA toolkit (`nvcc --version`): needed only to compile CUDA code yourself.
PyTorch runs when the driver is new enough for the wheel's runtime (the doctor checks that).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from gpulab.core.validate import checked
from gpulab.machine.hardware import HardwareReport

__all__ = ["VersionRow", "local_toolkit", "version_rows"]


@dataclass(frozen=True)
class VersionRow:
    """One version number: what it is, its value on this machine, and whether PyTorch needs it."""

    what: str
    where_to_read_it: str
    value: str
    matters_for_pytorch: str


@checked
def local_toolkit(nvcc: str | None = None) -> str | None:
    """The release of the CUDA toolkit whose nvcc is first on PATH ("12.4"), or None."""
    nvcc = nvcc or shutil.which("nvcc")
    if not nvcc:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"release (\d+\.\d+)", out)
    return match.group(1) if match else None


@checked
def version_rows(report: HardwareReport, toolkit: str | None = None) -> list[VersionRow]:
    """The version numbers of this machine, each with what it means for pip/conda PyTorch."""
    gpu = report.gpus[0] if report.gpus else None
    t = report.torch
    none = "none found"
    build = {
        "cpu-only": "CPU-only build: it cannot use any GPU, whatever the driver",
        "cuda": "CUDA build",
        "rocm": "ROCm build (torch.version.hip)",
    }.get(t.build, t.build)
    return [
        VersionRow(
            "NVIDIA driver",
            "nvidia-smi, top right: Driver Version",
            (gpu.driver_version if gpu else None) or none,
            "yes: it must be new enough for the wheel's CUDA runtime",
        ),
        VersionRow(
            "newest CUDA the driver supports",
            "nvidia-smi, top right: CUDA Version",
            (gpu.cuda_driver_version if gpu else None) or none,
            "an upper limit, not an installation",
        ),
        VersionRow(
            "PyTorch build",
            "torch.__version__ (+cpu, +cu124, +rocm6.2 ...)",
            f"{t.version or 'not installed'}: {build}",
            "yes: it decides which devices exist",
        ),
        VersionRow(
            "CUDA runtime inside the wheel",
            "torch.version.cuda",
            t.cuda_version or "none",
            "yes: bundled with cuBLAS and cuDNN; PATH and LD_LIBRARY_PATH are not used",
        ),
        VersionRow(
            "GPU architectures compiled in",
            "torch.cuda.get_arch_list()",
            ", ".join(t.arch_list) or "none",
            "yes: your GPU's compute capability must be covered",
        ),
        VersionRow(
            "local CUDA toolkit (nvcc)",
            "nvcc --version",
            toolkit or none,
            "no: only for compiling your own CUDA code or extensions",
        ),
    ]
