"""What the static calculators must show, computed by a path independent of the page's.

The page goes through ``gpulab.estimate.calculator`` (``gpulab.choose`` and
``gpulab.published_bounds``); these go straight to ``gpulab.memory``, ``gpulab.perf``,
``gpulab.specs`` and ``gpulab.cost``. The unit tests, the node tests (tests/js/expected.py) and
the browser test (tests/site) compare the page with them.
"""

from __future__ import annotations

from gpulab.core.validate import PositiveFloat, PositiveInt, checked
from gpulab.estimate import cost, memory, perf, published_bounds
from gpulab.reference import formats, models, specs

# the cost calculator's inputs that describe the local machine (gpulab.cost.LocalSetup)
_SETUP_FIELDS = (
    "hardware_price",
    "power_load_w",
    "electricity_per_kwh",
    "hours_per_day",
    "power_idle_w",
    "utilisation",
    "years",
)


@checked  # checked here, so that an error names `users`, not gpulab.memory's `batch`
def memory_expected(
    model: str,
    weights: formats.WeightFormatName,
    context: PositiveInt,
    users: PositiveInt,
    gpu: str,
    kv_cache: formats.KVFormat = "bf16",
    memory_gb: PositiveFloat | None = None,
) -> dict:
    """What the memory calculator must show, from gpulab.memory, gpulab.perf, gpulab.specs and
    the published runs (the page goes through gpulab.choose and gpulab.published_bounds):
    bytes, the fits, tokens/s and the typical range (None where it does not fit), the GPUs."""
    spec = models.get(model)
    b = memory.estimate_inference(spec, weights, kv_cache, users, context)
    gpus = specs.load_gpus()
    card = specs.get_gpu(gpu)
    fits = b.total <= card.model_memory_bytes
    tps = perf.decode_tokens_per_s(
        spec, weights, kv_cache, batch=users, seq_len=context, bandwidth_gbs=card.bandwidth_gbs
    )
    # the published decode runs' measured / bound, sorted: lowest, median, highest
    shares = sorted(
        c.measurement.figure / c.bound
        for c in published_bounds.compare_all()
        if c.kind == "decode" and c.bound is not None
    )
    middle = len(shares) // 2
    median = shares[middle] if len(shares) % 2 else (shares[middle - 1] + shares[middle]) / 2
    typical = (tps * shares[0], tps * median, tps * shares[-1]) if fits and users == 1 else None
    own = None if memory_gb is None else b.total <= (memory_gb * 1e9 - 2**29) / 1.05
    return {
        "total": b.total,
        "weights": b.weights,
        "kv": b.kv_cache,
        "other": b.total - b.weights - b.kv_cache,
        "fits": fits,
        "fits_own": own,
        "fits_on": sorted(g.name for g in gpus.values() if b.total <= g.model_memory_bytes),
        "tps_total": tps if fits else None,
        "tps_user": tps / users if fits else None,
        "tps_typical": typical,
    }


def cost_expected(values: dict, currency: str = "CNY") -> dict:
    """What the cost calculator must show for these inputs, computed by gpulab.cost.

    Raises GpulabConfigError naming the field for input the calculator must refuse.
    """
    setup = cost.LocalSetup(**{k: values[k] for k in _SETUP_FIELDS}, currency=currency)
    rate = cost.CloudRate(values["price_per_hour"], currency, values["monthly_fee"])
    tokens_per_s = values["tokens_per_s"]
    hours = cost.busy_hours_per_day(setup)
    return {
        "electricity_per_day": cost.electricity_per_day(setup),
        "electricity_per_month": cost.electricity_per_month(setup),
        "electricity_per_year": cost.electricity_per_year(setup),
        "local_monthly": cost.local_monthly_cost(setup),
        "cloud_monthly": cost.cloud_monthly_cost(rate, hours),
        "break_even_months": cost.break_even_months(setup, rate),
        "local_per_million": cost.cost_per_million_tokens(
            cost.local_cost_per_busy_hour(setup), tokens_per_s
        ),
        "cloud_per_million": cost.cost_per_million_tokens(
            cost.cloud_cost_per_hour(rate, hours), tokens_per_s
        ),
    }
