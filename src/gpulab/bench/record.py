"""Where a measurement comes from: the provenance benchmark scripts store with their figures.

``gpulab.measured`` (the reference layer) stores and reads the figures; this module, which
may import torch, says which machine, driver, library versions and command produced them.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import Any

__all__ = ["provenance"]


def provenance(gpu_name: str, driver: str | None, device: str,
               command: str | None = None) -> dict[str, Any]:
    """GPU (or CPU), device type, driver, torch and CUDA versions, date and command."""
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
