"""gpulab.calculators: the precomputed table agrees with the library; the HTML is self-contained.

The JavaScript itself runs in tests/site/test_calculators_browser.py, against the built page.
"""

from __future__ import annotations

import random
import re

import pytest

from gpulab import calculators, cost, memory
from gpulab.core.errors import GpulabConfigError


@pytest.fixture(scope="module")
def table():
    return calculators.memory_table()


def _lookup(table: dict, model: str, fmt: str, context: int, users: int, gpu: str) -> dict:
    """The page's arithmetic, in Python: index the flat arrays as the script does."""
    m, f = table["models"].index(model), table["formats"].index(fmt)
    c, u = table["contexts"].index(context), table["users"].index(users)
    F, C, U = len(table["formats"]), len(table["contexts"]), len(table["users"])
    g = next(x for x in table["gpus"] if x["name"] == gpu)
    total = table["total"][((m * F + f) * C + c) * U + u]
    kv = table["kv"][(m * C + c) * U + u]
    weights = table["weights"][m * F + f]
    tps = users * g["bandwidth_gbs"] * 1e9 / (table["active"][m * F + f] + kv)
    return {"total": total, "weights": weights, "kv": kv, "other": total - weights - kv,
            "fits": total <= g["capacity"], "tps_total": tps, "tps_user": tps / users,
            "fits_on": sorted(x["name"] for x in table["gpus"] if total <= x["capacity"])}


def test_table_covers_the_grid(table):
    grid = calculators.MemoryGrid()
    n = len(grid.models) * len(grid.formats) * len(grid.contexts) * len(grid.users)
    assert len(table["total"]) == n
    assert len(table["weights"]) == len(table["active"]) == len(grid.models) * len(grid.formats)
    assert len(table["kv"]) == len(grid.models) * len(grid.contexts) * len(grid.users)
    assert {g["name"] for g in table["gpus"]} >= {"RTX 4090", "RTX 3090", "H100 SXM"}


def test_lookup_agrees_with_the_library_on_sampled_inputs(table):
    """40 seeded random grid points: the table's values are the library's, to the byte."""
    rng = random.Random(6)
    for _ in range(40):
        args = (rng.choice(table["models"]), rng.choice(table["formats"]),
                rng.choice(table["contexts"]), rng.choice(table["users"]),
                rng.choice(table["gpus"])["name"])
        got, want = _lookup(table, *args), calculators.memory_expected(*args)
        for key in ("total", "weights", "kv", "other", "fits", "fits_on"):
            assert got[key] == want[key], (args, key)
        assert got["tps_total"] == pytest.approx(want["tps_total"], rel=1e-12), args
        assert got["tps_user"] == pytest.approx(want["tps_user"], rel=1e-12), args


def test_expected_memory_matches_estimate_and_fit_list():
    """Llama-3-8B int4, 8192 tokens, 1 user: estimate_inference's total; fits a 24 GB card.
    choose.evaluate on one card and chapter 2's estimate are the same arithmetic."""
    from gpulab import models

    want = calculators.memory_expected("Llama-3-8B", "int4", 8192, 1, "RTX 4090")
    b = memory.estimate_inference(models.get("Llama-3-8B"), "int4", "bf16", 1, 8192)
    assert want["total"] == b.total
    assert want["fits"] and "RTX 4090" in want["fits_on"]
    big = calculators.memory_expected("Llama-3-70B", "bf16", 8192, 1, "RTX 4090")
    assert not big["fits"] and "RTX 4090" not in big["fits_on"]


def test_memory_html_is_self_contained_and_small():
    page = calculators.memory_calculator_html()
    assert len(page.encode()) < 300_000
    assert not re.search(r"<script[^>]*\bsrc=", page)
    assert "http://" not in page and "https://" not in page
    script = page.split("<script>", 1)[1]
    assert script.count("</script>") == 1  # the data cannot close the element early
    for key in ("total", "weights", "kv", "other", "fits", "tps_total", "tps_user", "fits_on"):
        assert f'data-out="{key}"' in page
    assert 'id="gpulab-memory-calculator"' in page


def test_memory_html_defaults_must_be_offered():
    with pytest.raises(GpulabConfigError, match="model"):
        calculators.memory_calculator_html(model="GPT-5")
    with pytest.raises(GpulabConfigError, match="context"):
        calculators.memory_calculator_html(context=5000)
    with pytest.raises(GpulabConfigError, match="gpu"):
        calculators.memory_calculator_html(gpu="Voodoo 2")


def test_grid_rejects_unknown_choices():
    with pytest.raises(GpulabConfigError, match="GPT-5"):
        calculators.MemoryGrid(models=("GPT-5",))
    with pytest.raises(GpulabConfigError, match="weights"):
        calculators.MemoryGrid(formats=("int3",))
    with pytest.raises(GpulabConfigError, match="users"):
        calculators.MemoryGrid(users=(0, 1))
    with pytest.raises(GpulabConfigError, match="kv_cache"):
        calculators.MemoryGrid(kv_cache="int2")


def test_cost_expected_is_gpulab_cost():
    """The defaults are the seed's example: 2.1 CNY a day, 19 months against a rented 4090."""
    got = calculators.cost_expected(calculators.COST_DEFAULTS)
    assert got["electricity_per_day"] == pytest.approx(2.1)
    assert got["electricity_per_year"] == pytest.approx(766.5)
    assert got["break_even_months"] == pytest.approx(19.04, abs=0.01)
    setup = cost.LocalSetup(15000, 350, 0.6, 10)
    assert got["local_per_million"] == pytest.approx(
        cost.cost_per_million_tokens(cost.local_cost_per_busy_hour(setup), 50))
    assert got["cloud_per_million"] == pytest.approx(cost.cost_per_million_tokens(2.8, 50))


def test_cost_expected_never_breaks_even():
    values = calculators.COST_DEFAULTS | {"price_per_hour": 0.1}
    assert calculators.cost_expected(values)["break_even_months"] is None


@pytest.mark.parametrize("field, value", [("hardware_price", -1), ("hours_per_day", 0),
                                          ("utilisation", 1.5), ("tokens_per_s", 0),
                                          ("price_per_hour", -2.8)])
def test_cost_expected_refuses_bad_input(field, value):
    with pytest.raises(GpulabConfigError, match=field):
        calculators.cost_expected(calculators.COST_DEFAULTS | {field: value})


def test_cost_html_is_self_contained_and_shares_the_constants():
    page = calculators.cost_calculator_html()
    assert not re.search(r"<script[^>]*\bsrc=", page)
    assert "http://" not in page and "https://" not in page
    assert f"DAYS_PER_YEAR = {cost.DAYS_PER_YEAR!r}" in page
    for key, _, default in calculators.COST_INPUTS:
        assert f'data-in="{key}" value="{default:g}"' in page
    with pytest.raises(GpulabConfigError, match="years"):
        calculators.cost_calculator_html({"years": 0})
    with pytest.raises(GpulabConfigError, match="currency"):
        calculators.cost_calculator_html(currency="EUR")
