"""The logic behind the memory calculators: their inputs to an estimate, and its verdicts.

Chapter 2's widget (``gpulab.widgets.memory_calculator``) and the static page's calculator
call these, so what a calculator shows is what the library computes; the widgets only draw.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, PositiveInt, checked
from gpulab.estimate import memory
from gpulab.estimate.memory import Breakdown, Mode, Optimizer
from gpulab.reference import models
from gpulab.reference.formats import KVFormat, TrainingPrecision, WeightFormatName
from gpulab.reference.modelspec import ModelSpec

__all__ = ["PASTE", "estimate_for", "fit_verdicts"]

PASTE = "paste a config.json"  # the model choice that reads a pasted config.json instead
ModelChoice = Annotated[str, OneOf(lambda: [*models.names(), PASTE], "model")]


@checked
def estimate_for(model: ModelChoice, config_text: str, mode: Mode, weights: WeightFormatName,
                 kv_cache: KVFormat, precision: TrainingPrecision, optimizer: Optimizer,
                 context: PositiveInt, batch: PositiveInt) -> tuple[ModelSpec, Breakdown]:
    """(spec, breakdown) for a calculator's inputs; GpulabConfigError naming a bad input."""
    if model == PASTE:
        try:
            cfg = json.loads(config_text or "{}")
        except json.JSONDecodeError as exc:
            raise GpulabConfigError(f"config_text is not valid JSON: {exc}", "config_text") from None
        spec = ModelSpec.from_hf_config(cfg)
    else:
        spec = models.get(model)
    if mode == "inference":
        return spec, memory.estimate_inference(spec, weights, kv_cache, batch, context)
    return spec, memory.estimate_training(spec, precision, optimizer, batch, context)


@checked
def fit_verdicts(breakdown: Breakdown, own_gpus: Sequence[tuple[str, int]] = ()) -> list[str]:
    """The calculator's verdicts: the reader's GPUs, then every table GPU the estimate fits on."""
    lines = [f"your {name} ({total / 1e9:.0f} GB): "
             f"{'fits' if breakdown.total <= total else 'does not fit'}" for name, total in own_gpus]
    fitting = [r["gpu"] for r in memory.gpus_that_fit(breakdown.total) if r["fits"]]
    lines.append("fits on one: " + (", ".join(fitting) if fitting else "no single GPU in the table"))
    return lines
