"""The logic behind the calculators: their inputs to an estimate, and what they show.

Chapter 2's widget (``gpulab.widgets.memory_calculator``) calls ``estimate_for`` and
``fit_verdicts``; chapter 6's static calculators (``gpulab.calculators``) call
``page_outputs``, here in CPython when the page is built and in the reader's browser through
Pyodide afterwards: the page sends the raw text of its inputs and writes back what this module
returns, so what a calculator shows is what the library computes; the front ends only draw.

``page_outputs(kind, inputs)`` maps each input's text (as an HTML form holds it) to a dict of
outputs, one per ``data-out`` element of the page, each with any of ``value`` (the unrounded
figure, for ``data-value``), ``text`` (what the element shows) and ``attrs`` (attributes to
set). Bad input gives ``error`` (the message, naming the field) and ``field`` instead.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from gpulab.core.constraints import show
from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import keep_with_unit
from gpulab.core.validate import (
    NonNegativeFloat,
    OneOf,
    PositiveFloat,
    PositiveInt,
    boundary,
    check_value,
    checked,
    lenient,
)
from gpulab.estimate import choose, cost, memory, published_bounds
from gpulab.estimate.answers import NO_SPEED
from gpulab.estimate.memory import Breakdown, Mode, Optimizer
from gpulab.reference import hf_config, models, specs
from gpulab.reference.formats import KVFormat, TrainingPrecision, WeightFormatName
from gpulab.reference.modelspec import ModelSpec

__all__ = [
    "CHART",
    "COST_FIELDS",
    "KINDS",
    "LABELS",
    "LISTED",
    "MEMORY_FIELDS",
    "OPTIONAL",
    "PASTE",
    "cost_outputs",
    "display_number",
    "estimate_for",
    "fit_verdicts",
    "listed",
    "memory_outputs",
    "page_outputs",
    "page_outputs_json",
    "typical_text",
]

PASTE = "paste a config.json"  # the model choice that reads a pasted config.json instead
LISTED = 5  # the cards a "fits on one" line names, smallest first; the rest are counted
ModelChoice = Annotated[str, OneOf(lambda: [*models.names(), PASTE], "model")]


@checked
def estimate_for(
    model: ModelChoice,
    config_text: str,
    mode: Mode,
    weights: WeightFormatName,
    kv_cache: KVFormat,
    precision: TrainingPrecision,
    optimizer: Optimizer,
    context: PositiveInt,
    batch: PositiveInt,
) -> tuple[ModelSpec, Breakdown]:
    """(spec, breakdown) for a calculator's inputs; GpulabConfigError naming a bad input."""
    if model == PASTE:
        cfg = hf_config.parse_config_text(config_text, "config_text")
        try:
            spec = ModelSpec.from_hf_config(cfg)
        except GpulabConfigError as err:  # the pasted text is the input at fault
            raise GpulabConfigError(f"config_text: {err}", "config_text") from None
    else:
        spec = models.get(model)
    if mode == "inference":
        return spec, memory.estimate_inference(spec, weights, kv_cache, batch, context)
    return spec, memory.estimate_training(spec, precision, optimizer, batch, context)


@checked
def fit_verdicts(breakdown: Breakdown, own_gpus: Sequence[tuple[str, int]] = ()) -> list[str]:
    """The calculator's verdicts: the reader's GPUs, then every table GPU the estimate fits on.

    `own_gpus` are (name, total bytes as the driver reports it); the estimate is tensors, so
    each is compared with what is left for tensors (gpulab.specs.tensor_capacity).
    """
    lines = []
    for i, entry in enumerate(own_gpus):
        name, total = _own_gpu(i, entry)
        usable = specs.tensor_capacity(total, apple=name.lower().startswith("apple"))
        verdict = "fits" if breakdown.total <= usable else "does not fit"
        lines.append(
            f"your {name} ({total / 1e9:.1f} GB, {usable / 1e9:.1f} GB for tensors): {verdict}"
        )
    fitting = [r["gpu"] for r in memory.gpus_that_fit(breakdown.total) if r["fits"]]
    lines.append("fits on one: " + (listed(fitting) if fitting else "no single GPU in the table"))
    return lines


@checked
def listed(names: list[str], shown: PositiveInt = LISTED) -> str:
    """The first `shown` names, then how many more: 'A, B, C, D, E and 23 more'."""
    head = ", ".join(names[:shown])
    rest = len(names) - shown
    return f"{head} and {rest} more" if rest > 0 else head


def _own_gpu(i: int, entry: Any) -> tuple[str, float]:
    """One (name, total bytes) pair of fit_verdicts' own_gpus, or an error naming own_gpus[i]."""
    # The validation layer checks the sequence, not the two kinds inside each pair.
    field = f"own_gpus[{i}]"
    if isinstance(entry, (str, bytes)) or not isinstance(entry, Sequence) or len(entry) != 2:
        raise GpulabConfigError(f"{field}={show(entry)} must be a (name, total bytes) pair", field)
    name, total = entry
    if not isinstance(name, str):
        raise GpulabConfigError(
            f"{field}={show(entry)}: the name must be a string, not {type(name).__name__}", field
        )
    try:
        with boundary():  # the caller's number: the size limits apply
            check_value("total", total, NonNegativeFloat)
    except GpulabConfigError as err:
        raise GpulabConfigError(f"{field}={show(entry)}: {err}", field) from None
    return name, total


# -------------------------------------------------------------------------- chapter 6's static page

KINDS = ("memory", "cost")  # the static calculators
# The inputs of each, in the order they are read, and how each one's text is read.
MEMORY_FIELDS = {
    "model": str,
    "weights": str,
    "kv_cache": str,
    "context": int,
    "users": int,
    "gpu": str,
    "memory_gb": float | None,
}
# Inputs a page may leave empty or leave out: they are None then.
OPTIONAL = frozenset({"memory_gb"})
COST_FIELDS = {
    "hardware_price": float,
    "power_load_w": float,
    "power_idle_w": float,
    "electricity_per_kwh": float,
    "hours_per_day": float,
    "utilisation": float,
    "years": float,
    "price_per_hour": float,
    "monthly_fee": float,
    "tokens_per_s": float,
    "currency": str,
}
_FIELDS = {"memory": MEMORY_FIELDS, "cost": COST_FIELDS}
# What the page calls each input: an error names the label the reader sees, not the field.
LABELS = {
    "memory": {
        "model": "model",
        "weights": "weights",
        "kv_cache": "KV cache",
        "context": "context (tokens per user)",
        "users": "concurrent users",
        "gpu": "GPU",
        "memory_gb": "or your own memory (GB)",
    },
    "cost": {
        "hardware_price": "hardware price",
        "power_load_w": "power at load (W)",
        "power_idle_w": "power when idle (W)",
        "electricity_per_kwh": "electricity per kWh",
        "hours_per_day": "hours on per day",
        "utilisation": "share of those hours computing",
        "years": "years of use",
        "price_per_hour": "cloud price per hour",
        "monthly_fee": "cloud monthly fee",
        "tokens_per_s": "tokens/s (yours, same on both)",
        "currency": "currency",
    },
}
# The cost chart's SVG box: width, height, left and bottom margins, in pixels.
CHART = {"width": 420, "height": 180, "left": 60, "bottom": 24}

Kind = Annotated[str, OneOf(KINDS, "calculator")]
ModelName = Annotated[str, OneOf(models.names, "catalogue model")]
GPUName = Annotated[str, OneOf(lambda: list(specs.load_gpus()), "GPU of the spec table")]
Currency = Annotated[str, OneOf(cost.CURRENCIES, "currency")]


@lenient("shows any number, '-' for one that is not finite")
def display_number(x: float) -> str:
    """How the calculators show a figure: 3 significant digits below 100, whole numbers with
    thousands separators from 100 on ('0.0417', '2.1', '19', '1,234'); '-' for no number."""
    if not math.isfinite(x):
        return "-"
    if abs(x) >= 100:
        return f"{round(x):,}"
    if x == 0:
        return "0"
    text = repr(float(f"{x:.3g}"))  # 99.96 -> '100.0', 1.2e-07 stays in exponent form
    return text[:-2] if text.endswith(".0") else text


def _figure(value: float, scale: float = 1.0) -> dict:
    return {"value": value, "text": display_number(value / scale)}


@checked
def memory_outputs(
    model: ModelName,
    weights: WeightFormatName,
    kv_cache: KVFormat,
    context: PositiveInt,
    users: PositiveInt,
    gpu: GPUName,
    memory_gb: PositiveFloat | None = None,
) -> dict[str, dict]:
    """The memory calculator: memory needed (GB = 1e9 bytes), its parts, the fit on `gpu` and
    in `memory_gb` of the reader's own, the decode bound there with the typical range below it
    (none where it does not fit), and the table GPUs it fits on, from gpulab.choose."""
    workload = choose.Workload(model, weights, context, users, kv_cache=kv_cache)
    one = choose.evaluate(workload, gpu)
    b = one.breakdown
    total = one.memory_needed_bytes
    fitting = choose.recommend(workload, max_count=1)
    smallest_first = sorted(fitting, key=lambda c: (c.memory_available_bytes, c.gpu))
    card = specs.get_gpu(gpu)
    longest = workload.spec.max_position_embeddings
    note = (
        f"{model} is configured for at most {longest:,} tokens: this context is beyond it."
        if longest and context > longest
        else ""
    )
    verdict = "yes" if one.fits else "no"
    return {
        "error": {"value": "", "text": ""},
        "total": _figure(total, 1e9),
        "weights": _figure(b.weights, 1e9),
        "kv": _figure(b.kv_cache, 1e9),
        "other": _figure(total - b.weights - b.kv_cache, 1e9),
        # the capacity the decision used: what the card leaves for tensors
        # (GPUSpec.model_memory_bytes)
        "fits": {"value": verdict, "text": _for_tensors(verdict, card.model_memory_bytes)},
        "fits_own": _own_fit(total, memory_gb),
        **_speeds(one, users),
        "fits_on": {
            "value": "; ".join(sorted(c.gpu for c in fitting)),
            "text": listed([c.gpu for c in smallest_first]) or "no single GPU in the table",
        },
        "note": {"text": note},
    }


def _own_fit(total: int, memory_gb: float | None) -> dict:
    """The verdict for the reader's own memory size (GB as its driver reports it), or none."""
    if memory_gb is None:
        return {"value": "", "text": "enter a size to check it"}
    usable = specs.tensor_capacity(memory_gb * 1e9)
    verdict = "yes" if total <= usable else "no"
    return {"value": verdict, "text": _for_tensors(verdict, usable)}


def _for_tensors(verdict: str, usable: float) -> str:
    """'yes (24 GB for tensors)', its unit held to its number on the page (a no-break space)."""
    return keep_with_unit(f"{verdict} ({display_number(usable / 1e9)} GB for tensors)")


_NO_RANGE = {"attrs": {"data-low": "", "data-high": ""}}  # clears a range shown before


def _speeds(one: choose.Candidate, users: int) -> dict[str, dict]:
    """The decode bounds and the typical range, or what stands instead of a speed."""
    if not one.fits:  # a bound for memory that is not there means nothing
        gone = {"value": None, "text": NO_SPEED}
        return {"tps_total": gone, "tps_user": dict(gone), "tps_typical": gone | _NO_RANGE}
    per_user = one.decode_tokens_per_s_per_user
    return {
        "tps_total": _figure(one.decode_tokens_per_s_total),
        "tps_user": _figure(per_user),
        "tps_typical": typical_text(per_user, users),
    }


@checked
def typical_text(bound_tokens_per_s: PositiveFloat, users: PositiveInt = 1) -> dict:
    """The typical range below a one-user decode bound, as the calculator shows it.

    {"value": the median, "text": "55 to 170 (median 105)", "attrs": the low and high ends},
    from gpulab.published_bounds.typical_decode; for more users, no value and why not.
    """
    if users > 1:
        return {"value": None, "text": "none: the published runs decode one sequence"} | _NO_RANGE
    low, median, high = published_bounds.typical_decode(bound_tokens_per_s)
    return {
        "value": median,
        "attrs": {"data-low": repr(low), "data-high": repr(high)},
        "text": f"{display_number(low)} to {display_number(high)} "
        f"(median {display_number(median)})",
    }


def _points(ys: list[float], top: float) -> str:
    """An SVG polyline's points for months 0..n of cumulative cost, scaled to the chart box."""
    w, h, left, bottom = (CHART[k] for k in ("width", "height", "left", "bottom"))
    n = len(ys) - 1
    return " ".join(
        f"{left + j * (w - left - 10) / n:.1f},{h - bottom - y / top * (h - bottom - 10):.1f}"
        for j, y in enumerate(ys)
    )


@checked
def cost_outputs(
    hardware_price: float,
    power_load_w: float,
    power_idle_w: float,
    electricity_per_kwh: float,
    hours_per_day: float,
    utilisation: float,
    years: float,
    price_per_hour: float,
    monthly_fee: float,
    tokens_per_s: float,
    currency: Currency = "CNY",
) -> dict[str, dict]:
    """The cost calculator: electricity, buying vs renting per month, break-even, cost per
    million tokens and the cumulative-cost chart, from gpulab.cost (which checks the bounds)."""
    setup = cost.LocalSetup(
        hardware_price,
        power_load_w,
        electricity_per_kwh,
        hours_per_day,
        power_idle_w,
        utilisation,
        years,
        currency,
    )
    rate = cost.CloudRate(price_per_hour, currency, monthly_fee)
    busy = cost.busy_hours_per_day(setup)
    local_hour = cost.local_cost_per_busy_hour(setup)
    cloud_hour = cost.cloud_cost_per_hour(rate, busy)
    local_million = cost.cost_per_million_tokens(local_hour, tokens_per_s)
    cloud_million = cost.cost_per_million_tokens(cloud_hour, tokens_per_s)
    months = cost.break_even_months(setup, rate)
    # The chart spans one and a half break-evens (one to ten years), or three years if never.
    n = 36 if months is None else min(120, max(12, math.ceil(1.5 * months)))
    curve = cost.cost_over_time(setup, rate, n)
    top = max(*curve.local, *curve.cloud) or 1.0
    return {
        "error": {"value": "", "text": ""},
        "currency": {"text": currency},
        "electricity_per_day": _figure(cost.electricity_per_day(setup)),
        "electricity_per_month": _figure(cost.electricity_per_month(setup)),
        "electricity_per_year": _figure(cost.electricity_per_year(setup)),
        "local_monthly": _figure(cost.local_monthly_cost(setup)),
        "cloud_monthly": _figure(cost.cloud_monthly_cost(rate, busy)),
        "break_even_months": {
            "value": months,
            "text": "never: renting stays cheaper"
            if months is None
            else f"{display_number(months)} months ({display_number(months / 12)} years)",
        },
        "local_per_million": _figure(local_million),
        "cloud_per_million": _figure(cloud_million),
        "chart": {"attrs": {"data-months": str(n)}},
        "chart_local": {"attrs": {"points": _points(curve.local, top)}},
        "chart_cloud": {"attrs": {"points": _points(curve.cloud, top)}},
        "chart_top": {"text": display_number(top)},
        "chart_end": {"text": f"{n} months"},
    }


def _read(field: str, text: str, kind: type) -> Any:
    """One input's text as the type its field takes; GpulabConfigError naming the field."""
    if kind is str:
        return text
    stripped = text.strip()
    if not stripped and field in OPTIONAL:
        return None
    if not stripped:
        raise GpulabConfigError(f"{field}: enter a number", field)
    try:
        number = float(stripped)
    except ValueError:
        raise GpulabConfigError(f"{field}={text!r} is not a number", field) from None
    if not math.isfinite(number):
        raise GpulabConfigError(f"{field}={text!r} must be a finite number", field)
    if kind is int:
        if not number.is_integer():
            raise GpulabConfigError(f"{field}={text!r} must be a whole number", field)
        return int(number)
    return number


_OUTPUTS = {"memory": memory_outputs, "cost": cost_outputs}


@checked
def page_outputs(kind: Kind, inputs: Mapping[str, str]) -> dict:
    """What a static calculator shows for its inputs' text: {"error", "field", "outputs"}.

    "error" is worded as the page labels its inputs; "library_error" is the same error naming the
    field, for a caller in Python (a notebook building the calculator with bad defaults).

    `inputs` must hold every field of the calculator (MEMORY_FIELDS or COST_FIELDS) as text,
    except the OPTIONAL ones (left empty or out: None); a missing or unknown one is the
    page's mistake and raises. A value the reader typed wrong
    is not: it gives the error message (naming the field) as the "error" output.
    """
    fields = _FIELDS[kind]
    missing = [f for f in fields if f not in inputs and f not in OPTIONAL]
    unknown = [f for f in inputs if f not in fields]
    if missing or unknown:
        raise GpulabConfigError(
            f"inputs: the {kind} calculator takes {', '.join(fields)}"
            f" (missing: {missing}, unknown: {unknown})",
            "inputs",
        )
    for field, text in inputs.items():
        if not isinstance(text, str):
            raise GpulabConfigError(
                f"inputs[{field!r}] must be the input's text, not {type(text).__name__}", "inputs"
            )
    try:
        args = {f: _read(f, inputs[f], kind_) for f, kind_ in fields.items() if f in inputs}
        with boundary():  # the reader's typed values: checked as the reader's
            outputs = _OUTPUTS[kind](**args)
    except GpulabConfigError as err:
        message = _in_the_pages_words(str(err), err.field, LABELS[kind])
        return {
            "error": message,
            "field": err.field,
            "library_error": str(err),
            "outputs": {"error": {"value": message, "text": message}},
        }
    return {"error": "", "field": None, "library_error": "", "outputs": outputs}


def _in_the_pages_words(message: str, field: str | None, labels: Mapping[str, str]) -> str:
    """The message with the field's name replaced by the label the reader sees on the page."""
    if field not in labels:
        return message
    label = labels[field]
    for name in (
        f"{field}=",
        f"{field}:",
    ):  # "users='2.5' must be..." -> "concurrent users: '2.5' must be..."
        if message.startswith(name):
            return f"{label}: {message[len(name) :].lstrip()}"
    return message.replace(field, label)


@checked
def page_outputs_json(kind: Kind, inputs_json: str) -> str:
    """``page_outputs`` with JSON in and out: the one call the page's JavaScript makes."""
    try:
        inputs = json.loads(inputs_json)
    except json.JSONDecodeError as exc:
        raise GpulabConfigError(f"inputs_json is not valid JSON: {exc}", "inputs_json") from None
    except (RecursionError, ValueError):  # nested too deep, or a number too long to read
        raise GpulabConfigError(
            "inputs_json is not a JSON object of the inputs' text", "inputs_json"
        ) from None
    if not isinstance(inputs, dict):
        raise GpulabConfigError(
            "inputs_json must be a JSON object of the inputs' text", "inputs_json"
        )
    try:
        shown = page_outputs(kind, inputs)
    except GpulabConfigError as err:  # the page sent the wrong fields: say so in its own terms
        raise GpulabConfigError(
            str(err).replace("inputs", "inputs_json", 1), "inputs_json"
        ) from None
    return json.dumps(shown, allow_nan=False, separators=(",", ":"))
