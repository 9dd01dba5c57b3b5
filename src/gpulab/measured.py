"""Figures measured on GPUs, stored with their provenance in data/measured/ (DESIGN.md).

A figure measured on a GPU the build machine does not have is data, not prose: a benchmark
script writes it here with the GPU, driver, torch version, date and command, and pages render
it from here. A page never types such a number by hand.
"""

from __future__ import annotations

import datetime
import json
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

MEASURED_DIR = Path(str(resources.files("gpulab") / "data" / "measured"))


def slug(gpu_name: str) -> str:
    """The file name of a GPU's figures: 'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def provenance(gpu_name: str, driver: str | None, command: str | None = None) -> dict[str, Any]:
    """Where a set of figures comes from: GPU, driver, torch and CUDA versions, date, command."""
    import torch

    return {
        "gpu": gpu_name,
        "driver": driver,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": datetime.date.today().isoformat(),
        "command": command or " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }


def save(gpu_name: str, section: str, figures: dict[str, Any], prov: dict[str, Any],
         directory: Path = MEASURED_DIR) -> Path:
    """Write (or replace) one section of a GPU's measured figures, with its provenance."""
    path = directory / f"{slug(gpu_name)}.json"
    data = json.loads(path.read_text()) if path.exists() else {"gpu": gpu_name, "sections": {}}
    data["sections"][section] = {"provenance": prov, "figures": figures}
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def load_all(directory: Path = MEASURED_DIR) -> dict[str, dict]:
    """Every GPU's measured figures, keyed by GPU name."""
    out = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text())
        out[data["gpu"]] = data
    return out


def section(name: str, directory: Path = MEASURED_DIR) -> dict[str, dict]:
    """One section across GPUs: {gpu name: {"provenance": ..., "figures": ...}}."""
    return {gpu: data["sections"][name] for gpu, data in load_all(directory).items()
            if name in data["sections"]}
