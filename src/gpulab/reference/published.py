"""Published measurements from outside the course, each with its source (issue 14, section 6).

``data/published_measurements.json`` holds figures copied from public tables: llama.cpp's
tokens/s for Llama 2 7B at Q4_0 on many devices, and the maximum achievable matmul TFLOP/s of
data-centre GPUs. Each row names its source URL, the place in it, the date, the tool and its
version, the device and, where the spec table has it, the ``gpu_specs.json`` row the course's
bound is computed from (``gpulab.published_bounds``).

    from gpulab import published
    rows = published.load()            # validated, frozen rows
    published.get("xd-rtx-4090-24gb-tg")
    published.loads(text)              # the same checks on JSON text of rows

A row that breaks a rule raises ``GpulabConfigError`` naming the row and the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from functools import lru_cache
from importlib import resources
from typing import Any

from gpulab.core.constraints import did_you_mean_text, show
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked, lenient
from gpulab.reference.formats import WEIGHT_FORMATS
from gpulab.reference.models import CATALOGUE
from gpulab.reference.specs import DTYPES, load_gpus

__all__ = ["KERNELS", "TESTS", "Measurement", "get", "load", "loads"]

# What a row measured, and the unit its figure is in.
TESTS = {
    "tg": "tokens/s",  # llama.cpp main's "eval": tokens generated per second
    "pp": "tokens/s",  # llama.cpp main's "prompt eval": prompt tokens per second
    "tg128": "tokens/s",  # llama-bench: 128 tokens generated from an empty context
    "pp512": "tokens/s",  # llama-bench: a 512-token prompt in one batch
    "matmul": "TFLOP/s",  # one large matrix product
}
# The matrix-product path a prompt-processing row ran (the JSON's _fields says what each is).
KERNELS = ("cublas-fp16", "mmq-int8", "metal", "unknown")
_DECODE_TESTS = ("tg", "tg128")
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


@dataclass(frozen=True)
class Measurement:
    """One published figure with where it comes from (fields as in the JSON's ``_fields``)."""

    id: str  # unique, stable: the tests and the page refer to rows by it
    test: str  # one of TESTS
    figure: float  # in ``unit``
    unit: str  # TESTS[test]
    device: str  # as the source names it
    gpu: str | None  # the gpu_specs.json row; None when the table has none
    model: str | None  # as the source names it; None for matmul
    model_spec: str | None  # the gpulab.models entry the bound uses; None for matmul
    quantization: str | None  # a WEIGHT_FORMATS name ("q4_0"); None for matmul
    dtype: str | None  # matmul input precision, one of specs.DTYPES; None otherwise
    prompt_tokens: int | None  # prompt length (pp rows: the batch the rate is over)
    generated_tokens: int | None  # tokens a tg row generated
    min_context_tokens: int | None  # KV length every generated token reads at least (tg rows)
    kernel: str | None  # a pp row's matrix-product path, one of KERNELS
    tool: str
    tool_version: str
    date: str | None  # YYYY, YYYY-MM or YYYY-MM-DD
    date_note: str | None  # why the date is missing, when it is
    source_url: str
    where: str  # the place in the source the figure is copied from
    note: str | None = None

    @property
    def is_decode(self) -> bool:
        """True for a token-generation row (tg, tg128)."""
        return self.test in _DECODE_TESTS


_FIELDS = [f.name for f in fields(Measurement)]
_REQUIRED_TEXT = ("id", "test", "unit", "device", "tool", "tool_version", "source_url", "where")
_OPTIONAL_TEXT = (
    "gpu",
    "model",
    "model_spec",
    "quantization",
    "dtype",
    "kernel",
    "date",
    "date_note",
    "note",
)
_COUNTS = ("prompt_tokens", "generated_tokens", "min_context_tokens")


def _fail(row_id: str, field: str, message: str) -> GpulabConfigError:
    return GpulabConfigError(
        f"published_measurements.json row {row_id!r}: {field} {message}", field
    )


def _check_types(row_id: str, row: dict[str, Any]) -> None:
    """Every field present, of its type: text, optional text, counts, a positive figure."""
    unknown = sorted(set(row) - set(_FIELDS))
    if unknown:
        raise _fail(row_id, unknown[0], f"is not a field; the fields are {', '.join(_FIELDS)}")
    for key in _FIELDS:
        if key not in row and key != "note":
            raise _fail(row_id, key, "is missing")
    for key in _REQUIRED_TEXT:
        if not isinstance(row[key], str) or not row[key].strip():
            raise _fail(row_id, key, f"must be non-empty text, not {row[key]!r}")
    for key in _OPTIONAL_TEXT:
        value = row.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise _fail(row_id, key, f"must be non-empty text or null, not {value!r}")
    for key in _COUNTS:
        value = row[key]
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise _fail(row_id, key, f"must be a whole number >= 0 or null, not {value!r}")
    figure = row["figure"]
    if (
        isinstance(figure, bool)
        or not isinstance(figure, (int, float))
        or not math.isfinite(figure)
        or figure <= 0
    ):
        raise _fail(row_id, "figure", f"must be a positive finite number, not {figure!r}")


def _check_vocabulary(row_id: str, row: dict[str, Any]) -> None:
    """Test, unit, date, URL and the names that point into other tables."""
    test = row["test"]
    if test not in TESTS:
        raise _fail(row_id, "test", f"={test!r} is not one of {', '.join(TESTS)}")
    if row["unit"] != TESTS[test]:
        raise _fail(
            row_id, "unit", f"={row['unit']!r} does not fit test {test!r}: use {TESTS[test]!r}"
        )
    if not row["source_url"].startswith("https://"):
        raise _fail(row_id, "source_url", f"={row['source_url']!r} is not an https:// address")
    if row["date"] is None:
        if not row["date_note"]:
            raise _fail(row_id, "date", "is null without a date_note saying why")
    elif not _DATE.match(row["date"]):
        raise _fail(row_id, "date", f"={row['date']!r} is not YYYY, YYYY-MM or YYYY-MM-DD")
    if row["gpu"] is not None and row["gpu"] not in load_gpus():
        raise _fail(row_id, "gpu", f"={row['gpu']!r} is not a row of gpu_specs.json (use null)")
    if row["kernel"] is not None and row["kernel"] not in KERNELS:
        raise _fail(row_id, "kernel", f"={row['kernel']!r} is not one of {', '.join(KERNELS)}")


def _check_by_test(row_id: str, row: dict[str, Any]) -> None:
    """What each kind of row needs: a model and format for llama.cpp rows, a dtype for matmul."""
    if row["test"] == "matmul":
        if row["dtype"] not in DTYPES:
            raise _fail(
                row_id, "dtype", f"={row['dtype']!r}: a matmul row needs one of {', '.join(DTYPES)}"
            )
        return
    if row["model_spec"] not in CATALOGUE:
        raise _fail(row_id, "model_spec", f"={row['model_spec']!r} is not a gpulab.models name")
    if row["quantization"] not in WEIGHT_FORMATS:
        raise _fail(
            row_id,
            "quantization",
            f"={row['quantization']!r} is not a weight format ({', '.join(WEIGHT_FORMATS)})",
        )
    if row["test"] in _DECODE_TESTS:
        # The bound's bytes must never exceed what the run read: it needs a KV length floor.
        if not row["min_context_tokens"]:
            raise _fail(row_id, "min_context_tokens", "must be >= 1 on a token-generation row")
    elif row["kernel"] is None:
        raise _fail(row_id, "kernel", "is needed on a prompt-processing row (use 'unknown')")
    elif row["prompt_tokens"] == 0:
        raise _fail(row_id, "prompt_tokens", "must be >= 1 on a prompt-processing row, or null")


@lenient("reads the library's own data, row by row")
def row_items(
    rows: list[Any], fail: Callable[[str, str, str], GpulabConfigError]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each row with its id (or "#index"), checked to be an object whose id no earlier row has;
    `fail(row_id, field, message)` makes the error. Shared by the data file's sections."""
    seen: set[str] = set()
    for index, row in enumerate(rows):
        row_id = row.get("id") if isinstance(row, dict) else None
        row_id = row_id if isinstance(row_id, str) and row_id else f"#{index}"
        if not isinstance(row, dict):
            raise fail(row_id, "row", "must be an object")
        if row_id in seen:
            raise fail(row_id, "id", "is used by an earlier row")
        seen.add(row_id)
        yield row_id, row


@lenient("reads the library's own data; loads() is checked")
def section_rows(text: str, section: str) -> list[Any]:
    """The rows of JSON `text`: the list under `section` of the data file, or a bare list."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise GpulabConfigError(f"text is not JSON: {err}", "text") from None
    rows = data.get(section) if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise GpulabConfigError(
            f"text must hold a list of rows, or an object with a '{section}' list", "text"
        )
    return rows


def _parse(rows: list[Any]) -> tuple[Measurement, ...]:
    """Validated rows from dicts; GpulabConfigError names the first bad row and field."""
    out = []
    for row_id, row in row_items(rows, _fail):
        _check_types(row_id, row)
        _check_vocabulary(row_id, row)
        _check_by_test(row_id, row)
        out.append(Measurement(**{key: row.get(key) for key in _FIELDS}))
    return tuple(out)


@checked
def loads(text: str) -> tuple[Measurement, ...]:
    """Validated rows from JSON text: the data file's layout, or a bare list of rows."""
    return _parse(section_rows(text, "measurements"))


@lru_cache(maxsize=1)
def load() -> tuple[Measurement, ...]:
    """Every row of the packaged data/published_measurements.json, validated (cached)."""
    path = resources.files("gpulab") / "data" / "published_measurements.json"
    return loads(path.read_text(encoding="utf-8"))


@checked
def get(row_id: str) -> Measurement:
    """The packaged row with this id; GpulabConfigError with a 'did you mean' otherwise."""
    rows = {m.id: m for m in load()}
    if row_id in rows:
        return rows[row_id]
    hint = did_you_mean_text(row_id, rows)
    # The ids are many: the message points to where they are rather than listing them.
    raise GpulabConfigError(
        f"row_id={show(row_id)} is not a published measurement; "
        f"{hint + ' ' if hint else ''}published.load() lists the ids",
        "row_id",
    )
