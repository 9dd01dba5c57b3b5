"""Published memory figures from outside the course, each with its source and settings (issue 27).

The ``memory`` section of ``data/published_measurements.json`` holds what tools report about
memory: torchtune's peak memory for fine-tuning Llama 3.1 8B on one RTX 4090 (full, LoRA,
QLoRA), and a vLLM start-up log's weights, activation peak and KV cache for Llama 3 8B on an
A100. Each row carries the settings that decide the figure (a training recipe's
``gpulab.finetune.FinetuneRecipe`` fields; a serving engine's dtype, block size and memory
share) and the file and line each was read from, so that the published-measurements page can
set the course's estimate for the same settings beside it.

    from gpulab import published_memory
    rows = published_memory.load()          # validated, frozen rows
    published_memory.get("torchtune-llama3.1-8b-lora-rtx4090").settings["lora_rank"]  # 8
    published_memory.loads(text)            # the same checks on JSON text

A row that breaks a rule raises ``GpulabConfigError`` naming the row and the field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from gpulab.core.constraints import did_you_mean_text, show
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked
from gpulab.reference.models import CATALOGUE
from gpulab.reference.published import row_items, section_rows
from gpulab.reference.specs import load_gpus

__all__ = ["QUANTITIES", "SETTINGS", "MemoryFigure", "get", "load", "loads"]

# What each kind of row may report, and the unit of each quantity.
QUANTITIES = {
    "training": {"peak": "GiB"},  # a training step's peak memory
    "serving": {
        "weights": "GiB",  # the weights as loaded
        "activation-peak": "GiB",  # the engine's profiled forward pass, beyond the weights
        "kv-cache": "GiB",  # what the engine gives its KV cache
        "kv-blocks": "blocks",  # that memory in the engine's blocks of tokens
    },
}
# The settings each kind of row states (training: gpulab.finetune.FinetuneRecipe's fields).
SETTINGS = {
    "training": (
        "method",
        "dtype",
        "optimizer",
        "optimizer_impl",
        "optimizer_paged",
        "optimizer_in_backward",
        "activation_checkpointing",
        "activation_offloading",
        "lora_rank",
        "lora_alpha",
        "lora_targets",
        "lora_output",
        "compile",
        "batch",
        "seq_len",
        "packed",
        "loss_chunks",
        "gradient_accumulation_steps",
    ),
    "serving": ("dtype", "kv_cache_dtype", "block_size", "gpu_memory_utilization"),
}
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


@dataclass(frozen=True)
class MemoryFigure:
    """One published memory figure with its settings and sources (the JSON's _memory_fields)."""

    id: str  # unique, stable: the tests and the page refer to rows by it
    kind: str  # "training" or "serving"
    quantity: str  # one of QUANTITIES[kind]
    figure: float  # in ``unit``
    unit: str  # QUANTITIES[kind][quantity]
    device: str  # as the source names it
    gpu: str  # the gpu_specs.json row
    model: str  # as the source names it
    model_spec: str  # the gpulab.models entry with the same shapes
    tool: str
    tool_version: str
    date: str | None  # YYYY, YYYY-MM or YYYY-MM-DD
    date_note: str | None  # why the date is missing, when it is
    source_url: str
    where: str  # the place in the source the figure is copied from
    metric: str  # what the figure counts, in the tool's terms
    settings: MappingProxyType  # SETTINGS[kind] -> value (lists become tuples)
    settings_source: str  # the file and line each setting is read from
    note: str | None = None


_FIELDS = [f.name for f in fields(MemoryFigure)]
_TEXT = ("id", "kind", "quantity", "unit", "device", "gpu", "model", "model_spec", "tool")
_TEXT += ("tool_version", "source_url", "where", "metric", "settings_source")


def _fail(row_id: str, field: str, message: str) -> GpulabConfigError:
    return GpulabConfigError(
        f"published_measurements.json memory row {row_id!r}: {field} {message}", field
    )


def _check_fields(row_id: str, row: dict[str, Any]) -> None:
    """Every field present and of its type."""
    unknown = sorted(set(row) - set(_FIELDS))
    if unknown:
        raise _fail(row_id, unknown[0], f"is not a field; the fields are {', '.join(_FIELDS)}")
    for key in _FIELDS:
        if key not in row and key != "note":
            raise _fail(row_id, key, "is missing")
    for key in _TEXT:
        if not isinstance(row[key], str) or not row[key].strip():
            raise _fail(row_id, key, f"must be non-empty text, not {show(row[key])}")
    for key in ("date", "date_note", "note"):
        value = row.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise _fail(row_id, key, f"must be non-empty text or null, not {show(value)}")
    figure = row["figure"]
    if (
        isinstance(figure, bool)
        or not isinstance(figure, (int, float))
        or not math.isfinite(figure)
        or figure <= 0
    ):
        raise _fail(row_id, "figure", f"must be a positive finite number, not {show(figure)}")


def _check_vocabulary(row_id: str, row: dict[str, Any]) -> None:
    """Kind, quantity and unit; the URL, the date; the names that point into other tables."""
    kind = row["kind"]
    if kind not in QUANTITIES:
        raise _fail(row_id, "kind", f"={kind!r} is not one of {', '.join(QUANTITIES)}")
    units, quantity = QUANTITIES[kind], row["quantity"]
    if quantity not in units:
        raise _fail(row_id, "quantity", f"={quantity!r}: a {kind} row reports {', '.join(units)}")
    if row["unit"] != units[quantity]:
        raise _fail(row_id, "unit", f"={row['unit']!r}: {quantity} is in {units[quantity]}")
    if row["unit"] == "blocks" and not isinstance(row["figure"], int):
        raise _fail(row_id, "figure", f"={row['figure']!r}: a count of blocks is a whole number")
    if not row["source_url"].startswith("https://"):
        raise _fail(row_id, "source_url", f"={row['source_url']!r} is not an https:// address")
    if row["date"] is None:
        if not row["date_note"]:
            raise _fail(row_id, "date", "is null without a date_note saying why")
    elif not _DATE.match(row["date"]):
        raise _fail(row_id, "date", f"={row['date']!r} is not YYYY, YYYY-MM or YYYY-MM-DD")
    if row["gpu"] not in load_gpus():
        raise _fail(row_id, "gpu", f"={row['gpu']!r} is not a row of gpu_specs.json")
    if row["model_spec"] not in CATALOGUE:
        raise _fail(row_id, "model_spec", f"={row['model_spec']!r} is not a gpulab.models name")


def _setting(row_id: str, name: str, value: Any) -> Any:
    """A setting as stored: text, a number, a flag, null, or a list of text made a tuple."""
    if isinstance(value, list):
        if not all(isinstance(x, str) and x for x in value):
            raise _fail(row_id, f"settings.{name}", f"must list non-empty text, not {show(value)}")
        return tuple(value)
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    allowed = "text, a number, true/false or null"
    raise _fail(row_id, f"settings.{name}", f"must be {allowed}, not {show(value)}")


def _check_settings(row_id: str, row: dict[str, Any]) -> MappingProxyType:
    """Exactly the settings of the row's kind, each of a plain type; frozen."""
    settings = row["settings"]
    if not isinstance(settings, dict):
        raise _fail(row_id, "settings", f"must be an object, not {show(settings)}")
    wanted = SETTINGS[row["kind"]]
    extra = sorted(set(settings) - set(wanted))
    missing = [name for name in wanted if name not in settings]
    if extra or missing:
        what = f"has no setting {extra[0]!r}" if extra else f"lacks {missing[0]!r}"
        raise _fail(row_id, "settings", f"{what}; a {row['kind']} row states {', '.join(wanted)}")
    return MappingProxyType({name: _setting(row_id, name, settings[name]) for name in wanted})


def _parse(rows: list[Any]) -> tuple[MemoryFigure, ...]:
    """Validated rows from dicts; GpulabConfigError names the first bad row and field."""
    out = []
    for row_id, row in row_items(rows, _fail):
        _check_fields(row_id, row)
        _check_vocabulary(row_id, row)
        settings = _check_settings(row_id, row)
        out.append(MemoryFigure(**{key: row.get(key) for key in _FIELDS} | {"settings": settings}))
    return tuple(out)


@checked
def loads(text: str) -> tuple[MemoryFigure, ...]:
    """Validated rows from JSON text: the data file's layout (its 'memory' list), or a bare list."""
    return _parse(section_rows(text, "memory"))


@lru_cache(maxsize=1)
def load() -> tuple[MemoryFigure, ...]:
    """Every row of the packaged published_measurements.json's memory section (cached)."""
    path = resources.files("gpulab") / "data" / "published_measurements.json"
    return loads(path.read_text(encoding="utf-8"))


@checked
def get(row_id: str) -> MemoryFigure:
    """The packaged row with this id; GpulabConfigError with a 'did you mean' otherwise."""
    rows = {m.id: m for m in load()}
    if row_id in rows:
        return rows[row_id]
    hint = did_you_mean_text(row_id, rows)
    raise GpulabConfigError(
        f"row_id={show(row_id)} is not a published memory figure; "
        f"{hint + ' ' if hint else ''}choose one of: {', '.join(rows)}",
        "row_id",
    )
