"""The static calculators' test inputs, shared by the node tests (through expected.py), the
browser test (tests/site) and the unit tests: seeded random inputs as a reader would enter
them, and inputs the calculators must refuse, with the field the error must name.
"""

from __future__ import annotations

import random

from gpulab.reference import formats, models, specs

SAMPLES = 24  # random inputs per calculator
MEMORY_SEED = 2026
COST_SEED = 6
# the memory calculator's inputs as the page opens, as text
MEMORY_DEFAULTS = {
    "model": "Llama-3-8B",
    "weights": "int4",
    "kv_cache": "bf16",
    "context": "8192",
    "users": "1",
    "gpu": "RTX 4090",
}


def memory_samples(n: int = SAMPLES, seed: int = MEMORY_SEED) -> list[dict]:
    """Model, formats, context, users and GPU: every choice offered, contexts up to 256K."""
    rng = random.Random(seed)
    gpus = list(specs.load_gpus())
    return [
        {
            "model": rng.choice(models.names()),
            "weights": rng.choice(list(formats.WEIGHT_FORMATS)),
            "kv_cache": rng.choice(list(formats.KV_FORMATS)),
            "context": rng.choice([rng.randint(1, 262_144), 1024, 4096, 8192, 32768, 131072]),
            "users": rng.choice([1, rng.randint(1, 64)]),
            "gpu": rng.choice(gpus),
        }
        for _ in range(n)
    ]


def cost_samples(n: int = SAMPLES, seed: int = COST_SEED) -> list[dict]:
    """Valid cost inputs over wide ranges, some rounded as a reader would type them."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        load = rng.choice([rng.uniform(50, 3000), 350, 450])
        out.append(
            {
                "hardware_price": rng.choice([0, round(rng.uniform(500, 300_000), 2)]),
                "power_load_w": round(load, 1),
                "power_idle_w": round(rng.uniform(0, load * 0.3), 1),
                "electricity_per_kwh": round(rng.uniform(0.0, 1.5), 3),
                "hours_per_day": rng.choice([24, round(rng.uniform(0.5, 24), 2)]),
                "utilisation": rng.choice([1, round(rng.uniform(0.05, 1), 3)]),
                "years": rng.choice([1, 3, round(rng.uniform(0.5, 8), 1)]),
                "price_per_hour": round(rng.uniform(0, 40), 2),
                "monthly_fee": rng.choice([0, 9.99, 49.99]),
                "tokens_per_s": round(rng.uniform(1, 5000), 1),
            }
        )
    return out


def text(value: object) -> str:
    """A value as an input's text, the way the tests type it."""
    return repr(value) if isinstance(value, float) else str(value)


def texts(values: dict) -> dict:
    """Each value of a calculator's inputs as its text."""
    return {key: text(value) for key, value in values.items()}


# (field, text) the calculators must refuse, naming the field; the ones a number input cannot
# hold ("abc") are for the node tests only, as a browser keeps them out of such an input.
BAD_MEMORY = [
    ("context", "0"),
    ("context", ""),
    ("users", "2.5"),
    ("users", "-3"),
    ("context", "1e30"),
]
BAD_COST = [
    ("hardware_price", "-1"),
    ("hours_per_day", "0"),
    ("hours_per_day", "30"),
    ("utilisation", "1.5"),
    ("price_per_hour", "-2.8"),
    ("tokens_per_s", "0"),
    ("years", "0"),
    ("power_idle_w", "400"),
    ("monthly_fee", ""),
]
BAD_TEXT_ONLY = [("memory", "users", "abc"), ("cost", "years", "three")]
