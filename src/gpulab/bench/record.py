"""Where a measurement comes from, and where a benchmark script stores it (``benchmarks/``).

``gpulab.measured`` (the reference layer) stores and reads figures; this module, which may
import torch, says which machine, device, driver, library versions and command produced
them, and decides where a script's figures go:

- with ``--out DIR``: into DIR, whatever the device (the tests use a CPU run as a fixture for
  the notebooks' measured-data branches, through ``GPULAB_MEASURED_DIR``);
- without it, on a GPU: into ``gpulab.measured.directory()``, the package's data/measured/
  unless ``GPULAB_MEASURED_DIR`` points elsewhere;
- without it, on a CPU: nowhere. The package ships only figures measured on a GPU.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab.core.validate import checked
from gpulab.machine.report import HardwareReport
from gpulab.reference import measured

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = ["add_arguments", "device_kind", "provenance", "start", "store", "stored_message"]


@checked
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every benchmark script takes: --device, --quick and --out."""
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N, mps")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the smallest sizes: seconds on a 2-core CPU (the CI smoke test)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the figures to this folder, whatever the device",
    )


@checked
def start(
    description: str,
    argv: list[str] | None = None,
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
):
    """What every benchmark script does first: its options parsed (the common ones, and any
    `extra` adds), the device picked and this machine read. Returns (args, device, report)."""
    from gpulab.machine import hardware

    parser = argparse.ArgumentParser(description=description)
    add_arguments(parser)
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    return args, hardware.pick_device(args.device), hardware.detect()


@checked
def device_kind(device: torch.device | str) -> str:
    """ "cuda", "rocm", "mps", "xpu" or "cpu": what a provenance calls the device."""
    import torch

    kind = torch.device(device).type
    if kind == "cuda" and getattr(torch.version, "hip", None):
        return "rocm"
    return kind


@checked
def provenance(
    gpu_name: str, driver: str | None, device: str, command: str | None = None
) -> dict[str, Any]:
    """GPU (or CPU) name, device kind, driver, torch and CUDA versions, date and command."""
    import torch

    return {
        "gpu": gpu_name,
        "device": device,
        "driver": driver,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": datetime.date.today().isoformat(),
        "command": command or " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }


def _name_and_driver(device: Any, report: HardwareReport) -> tuple[str, str | None]:
    """The measured device's name (the GPU's, or the CPU model) and its driver version."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        index = device.index or 0
        gpu = report.gpus[index] if index < len(report.gpus) else None
        name = gpu.name if gpu else torch.cuda.get_device_name(device)
        return name, gpu.driver_version if gpu else None
    if device.type == "cpu":
        return report.cpu.model or "CPU", None
    return (report.gpus[0].name if report.gpus else device.type), None


@checked
def store(
    section: str,
    figures: dict[str, Any],
    device: torch.device | str,
    report: HardwareReport,
    out: str | Path | None = None,
) -> Path | None:
    """Write a benchmark's figures with their provenance; the path, or None when not stored."""
    kind = device_kind(device)
    if out is None and kind not in ("cuda", "rocm"):
        return None
    name, driver = _name_and_driver(device, report)
    folder = measured.directory() if out is None else Path(out)
    return measured.save(name, section, figures, provenance(name, driver, kind), folder)


@checked
def stored_message(path: Path | None) -> str:
    """What a script prints after ``store``: where the figures went, or why they were not kept."""
    if path is not None:
        return f"figures written to {path}"
    return "figures not stored: only GPU figures go to data/measured/ (--out DIR keeps them)"
