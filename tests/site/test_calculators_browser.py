"""Chapter 6's static calculators in headless Chromium, on the built site, without a kernel.

For seeded random inputs the test sets the page's inputs, reads what the page shows and
compares it with what gpulab computes here (gpulab.calculators.memory_expected and
cost_expected). `data-value` holds the page's unrounded number, compared tightly; the visible
text is compared within its display rounding. No request may leave the machine.
"""

from __future__ import annotations

import random
import re

import pytest

from gpulab import calculators
from gpulab.core.errors import GpulabConfigError
from tests.site.conftest import open_offline

PAGE = "notebooks/06_choosing_hardware.html"
MEMORY = "#gpulab-memory-calculator"
COST = "#gpulab-cost-calculator"
SAMPLES = 24
MEMORY_KEYS = ("total", "weights", "kv", "other", "tps_total", "tps_user")
COST_KEYS = ("electricity_per_day", "electricity_per_month", "electricity_per_year",
             "local_monthly", "cloud_monthly", "local_per_million", "cloud_per_million")


@pytest.fixture(scope="module")
def page(browser, site, site_url):
    """The chapter-6 page, loaded with every request outside 127.0.0.1 refused and recorded."""
    if not (site / PAGE).exists():
        pytest.fail(f"{PAGE} is not in the built site")
    tab, outside = open_offline(browser)
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.goto(f"{site_url}/{PAGE}", wait_until="networkidle")
    yield tab
    assert not outside, f"requests left the machine: {outside}"
    # The book theme declares its Thebe launcher's constant twice on every page; that error is
    # the theme's, not the calculators' (whose outputs the tests above read back).
    errors = [e for e in errors if "THEBE_JS_URL" not in e]
    assert not errors, f"JavaScript errors on the page: {errors}"
    tab.close()


def _out(page, root: str, key: str) -> tuple[str, str]:
    """(data-value, visible text) of one output element."""
    el = page.locator(f'{root} [data-out="{key}"]')
    return el.get_attribute("data-value"), el.inner_text()


def _shown_number(text: str) -> float:
    """The first number of a displayed value: '1,234 months' -> 1234.0."""
    return float(re.search(r"-?[\d,]*\.?\d+(?:e[-+]?\d+)?", text).group().replace(",", ""))


def _options(page, root: str, key: str) -> list[str]:
    return page.locator(f'{root} [data-in="{key}"] option').all_inner_texts()


def _set_memory(page, model, fmt, context, users, gpu) -> None:
    for key, value in (("model", model), ("format", fmt), ("context", context),
                       ("users", users), ("gpu", gpu)):
        page.select_option(f'{MEMORY} [data-in="{key}"]', label=str(value))


def test_memory_calculator_matches_gpulab(page):
    """For seeded random model/format/context/users/GPU, the page shows the library's values."""
    choices = {key: _options(page, MEMORY, key) for key in ("model", "format", "context", "users", "gpu")}
    assert len(choices["model"]) >= 10 and "RTX 4090" in choices["gpu"]
    rng = random.Random(2026)
    for _ in range(SAMPLES):
        model, fmt, context, users, gpu = (rng.choice(choices[k]) for k in choices)
        _set_memory(page, model, fmt, context, users, gpu)
        want = calculators.memory_expected(model, fmt, int(context), int(users), gpu)
        where = f"{model} {fmt} {context} tokens x {users} users on {gpu}"
        for key in MEMORY_KEYS:
            value, text = _out(page, MEMORY, key)
            assert float(value) == pytest.approx(want[key], rel=1e-9), f"{key}: {where}"
            scale = 1e9 if key in ("total", "weights", "kv", "other") else 1
            assert _shown_number(text) == pytest.approx(want[key] / scale, rel=0.006, abs=0.006), \
                f"{key} shown as {text!r}: {where}"
        value, text = _out(page, MEMORY, "fits")
        assert value == ("yes" if want["fits"] else "no"), where
        value, _ = _out(page, MEMORY, "fits_on")
        assert (value.split("; ") if value else []) == want["fits_on"], where


def test_changing_a_memory_input_changes_the_result(page):
    """More users: the KV cache and the total grow to the library's new values."""
    _set_memory(page, "Llama-3-8B", "int4", 8192, 1, "RTX 4090")
    before = float(_out(page, MEMORY, "total")[0])
    page.select_option(f'{MEMORY} [data-in="users"]', label="20")
    after = float(_out(page, MEMORY, "total")[0])
    assert after > before
    assert after == calculators.memory_expected("Llama-3-8B", "int4", 8192, 20, "RTX 4090")["total"]


def _random_cost_inputs(rng: random.Random) -> dict:
    """Valid inputs over wide ranges, some rounded as a reader would type them."""
    load = rng.choice([rng.uniform(50, 3000), 350, 450])
    return {
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


def _set_cost(page, values: dict) -> None:
    for key, value in values.items():
        page.fill(f'{COST} [data-in="{key}"]', repr(value))


def test_cost_calculator_matches_gpulab(page):
    """For seeded random inputs, the page's arithmetic equals gpulab.cost's."""
    rng = random.Random(6)
    never = 0
    for _ in range(SAMPLES):
        values = _random_cost_inputs(rng)
        _set_cost(page, values)
        want = calculators.cost_expected(values)
        assert _out(page, COST, "error")[0] == "", values
        for key in COST_KEYS:
            value, text = _out(page, COST, key)
            assert float(value) == pytest.approx(want[key], rel=1e-9, abs=1e-9), f"{key}: {values}"
            assert _shown_number(text) == pytest.approx(want[key], rel=0.006, abs=0.006), \
                f"{key} shown as {text!r}: {values}"
        value, text = _out(page, COST, "break_even_months")
        if want["break_even_months"] is None:
            never += 1
            assert value == "" and "never" in text, values
        else:
            assert float(value) == pytest.approx(want["break_even_months"], rel=1e-9), values
    assert 0 < never < SAMPLES, "the samples should cover both outcomes"


def test_changing_a_cost_input_changes_the_result(page):
    """The seed's example, then a dearer rental: the break-even moves to gpulab's new value."""
    _set_cost(page, calculators.COST_DEFAULTS)
    before = float(_out(page, COST, "break_even_months")[0])
    assert before == pytest.approx(calculators.cost_expected(calculators.COST_DEFAULTS)["break_even_months"])
    dearer = calculators.COST_DEFAULTS | {"price_per_hour": 12}
    page.fill(f'{COST} [data-in="price_per_hour"]', "12")
    after = float(_out(page, COST, "break_even_months")[0])
    assert after == pytest.approx(calculators.cost_expected(dearer)["break_even_months"], rel=1e-9)
    assert after < before


@pytest.mark.parametrize("field, value", [("hardware_price", -1), ("hours_per_day", 0),
                                          ("hours_per_day", 30), ("utilisation", 1.5),
                                          ("price_per_hour", -2.8), ("tokens_per_s", 0)])
def test_cost_calculator_refuses_what_gpulab_refuses(page, field, value):
    """Bad input shows an error naming the field, where gpulab raises one naming it too."""
    values = calculators.COST_DEFAULTS | {field: value}
    with pytest.raises(GpulabConfigError, match=field):
        calculators.cost_expected(values)
    _set_cost(page, values)
    message = _out(page, COST, "error")[1]
    assert field in message, message
    _set_cost(page, calculators.COST_DEFAULTS)
    assert _out(page, COST, "error")[1] == ""
