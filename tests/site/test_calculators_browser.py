"""Chapter 6's static calculators in headless Chromium, on the built site, without a kernel.

The page loads Pyodide and the archive of gpulab from the site's own _static folder and runs
the library there (gpulab.calculators). Once both calculators say they are ready, the test
types the seeded random inputs of tests/js/samples.py, reads what the page shows and compares
it with what gpulab computes here in CPython (tests/calculator_oracle.py's memory_expected and
cost_expected). `data-value` holds the page's unrounded number, compared tightly; the
visible text is compared within its display rounding. No request may leave the machine.
"""

from __future__ import annotations

import contextlib
import re

import pytest

from gpulab import calculator, calculators
from gpulab.core.errors import GpulabConfigError
from gpulab.estimate import answers
from tests import calculator_oracle as oracle
from tests.js import samples
from tests.site.conftest import open_offline

PAGE = "notebooks/06_choosing_hardware.html"
MEMORY = "#gpulab-memory-calculator"
COST = "#gpulab-cost-calculator"
READY_TIMEOUT_MS = 60_000  # Pyodide starts in about 3-6 s on the 2-core CI machine
MEMORY_KEYS = ("total", "weights", "kv", "other", "tps_total", "tps_user")
COST_KEYS = (
    "electricity_per_day",
    "electricity_per_month",
    "electricity_per_year",
    "local_monthly",
    "cloud_monthly",
    "local_per_million",
    "cloud_per_million",
)
MEMORY_DEFAULTS = {
    "model": "Llama-3-8B",
    "weights": "int4",
    "kv_cache": "bf16",
    "context": 8192,
    "users": 1,
    "gpu": "RTX 4090",
}


@contextlib.contextmanager
def _guarded(tab, outside: list[str]):
    """Record the page's JavaScript errors; at the end, fail on them or on outside requests."""
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield errors
    assert not outside, f"requests left the machine: {outside}"
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture(scope="module")
def page(browser, site, site_url):
    """The chapter-6 page, every request outside 127.0.0.1 refused, both calculators ready."""
    if not (site / PAGE).exists():
        pytest.fail(f"{PAGE} is not in the built site")
    tab, outside = open_offline(browser)
    with _guarded(tab, outside):
        tab.goto(f"{site_url}/{PAGE}", wait_until="networkidle")
        for root in (MEMORY, COST):
            try:
                tab.wait_for_selector(f'{root}[data-state="ready"]', timeout=READY_TIMEOUT_MS)
            except Exception:
                state = tab.get_attribute(root, "data-state")
                status = tab.inner_text(f"{root} [data-status]")
                pytest.fail(f"{root} is not ready (data-state={state!r}: {status!r})")
        yield tab
    tab.close()


def _out(page, root: str, key: str) -> tuple[str, str]:
    """(data-value, visible text) of one output element."""
    el = page.locator(f'{root} [data-out="{key}"]').first
    return el.get_attribute("data-value"), el.inner_text()


def _shown_number(text: str) -> float:
    """The first number of a displayed value: '1,234 months' -> 1234.0."""
    return float(re.search(r"-?[\d,]*\.?\d+(?:e[-+]?\d+)?", text).group().replace(",", ""))


def _set(page, root: str, values: dict) -> None:
    """Set inputs one by one as a reader would (each edit recomputes); skip those that hold
    that text already."""
    held = page.eval_on_selector_all(
        f"{root} [data-in]",
        "els => Object.fromEntries(els.map(e => [e.getAttribute('data-in'), e.value]))",
    )
    for key, value in values.items():
        if held[key] == samples.text(value):
            continue
        selector = f'{root} [data-in="{key}"]'
        if page.locator(selector).evaluate("e => e.tagName") == "SELECT":
            page.select_option(selector, value=str(value))
        else:
            page.fill(selector, samples.text(value))


def test_the_calculators_start_from_the_sites_own_files(page, site_url):
    """Pyodide and the gpulab archive came from the site's _static folder; the inputs are live."""
    loaded = page.evaluate("performance.getEntriesByType('resource').map(r => r.name)")
    for path in (
        f"_static/{calculators.PYODIDE_DIR}pyodide.asm.wasm",
        f"_static/{calculators.PYODIDE_DIR}python_stdlib.zip",
        f"_static/{calculators.ARCHIVE}",
    ):
        assert f"{site_url}/{path}" in loaded, f"{path} was not loaded: {loaded}"
    for root in (MEMORY, COST):
        assert page.locator(f"{root} [data-in]:disabled").count() == 0
        assert page.inner_text(f"{root} [data-status]") == ""
        ready_ms = int(page.get_attribute(root, "data-ready-ms"))
        assert 0 < ready_ms < READY_TIMEOUT_MS


def test_memory_calculator_matches_gpulab(page):
    """For seeded random model/formats/context/users/GPU, the page shows the library's values."""
    options = page.locator(f'{MEMORY} [data-in="model"] option').all_inner_texts()
    gpus = page.locator(f'{MEMORY} [data-in="gpu"] option').all_inner_texts()
    assert len(options) >= 10 and "RTX 4090 (24 GB)" in gpus and "RTX 4060 (8 GB)" in gpus
    for values in samples.memory_samples():
        _set(page, MEMORY, values)
        want = oracle.memory_expected(
            values["model"],
            values["weights"],
            values["context"],
            values["users"],
            values["gpu"],
            values["kv_cache"],
        )
        where = str(values)
        assert _out(page, MEMORY, "error")[0] == "", where
        for key in MEMORY_KEYS:
            value, text = _out(page, MEMORY, key)
            if want[key] is None:  # no speed for a model that does not fit: words, no number
                assert (value, text) == ("", answers.NO_SPEED), f"{key}: {where}"
                continue
            assert float(value) == pytest.approx(want[key], rel=1e-9), f"{key}: {where}"
            scale = 1e9 if key in ("total", "weights", "kv", "other") else 1
            assert _shown_number(text) == pytest.approx(want[key] / scale, rel=0.006, abs=0.006), (
                f"{key} shown as {text!r}: {where}"
            )
        value, text = _out(page, MEMORY, "fits")
        assert value == ("yes" if want["fits"] else "no"), where
        value, _ = _out(page, MEMORY, "fits_on")
        assert (value.split("; ") if value else []) == want["fits_on"], where
        value, _ = _out(page, MEMORY, "tps_typical")
        if want["tps_typical"] is None:
            assert value == "", where
        else:
            assert float(value) == pytest.approx(want["tps_typical"][1], rel=1e-9), where


def test_changing_a_memory_input_changes_the_result(page):
    """More users: the KV cache and the total grow to the library's new values."""
    _set(page, MEMORY, MEMORY_DEFAULTS)
    before = float(_out(page, MEMORY, "total")[0])
    page.fill(f'{MEMORY} [data-in="users"]', "20")
    after = float(_out(page, MEMORY, "total")[0])
    assert after > before
    assert after == oracle.memory_expected("Llama-3-8B", "int4", 8192, 20, "RTX 4090")["total"]


@pytest.mark.parametrize("field, text", samples.BAD_MEMORY)
def test_memory_calculator_refuses_what_gpulab_refuses(page, field, text):
    """A context or user count gpulab refuses shows an error naming the field."""
    _set(page, MEMORY, MEMORY_DEFAULTS)
    page.fill(f'{MEMORY} [data-in="{field}"]', text)
    message = _out(page, MEMORY, "error")[1]
    assert calculator.LABELS["memory"][field] in message, message
    assert page.get_attribute(MEMORY, "data-error") == field
    _set(page, MEMORY, MEMORY_DEFAULTS)
    assert _out(page, MEMORY, "error")[1] == ""


def test_cost_calculator_matches_gpulab(page):
    """For seeded random inputs, the page's figures are gpulab.cost's."""
    never = 0
    for values in samples.cost_samples():
        _set(page, COST, values)
        want = oracle.cost_expected(values)
        assert _out(page, COST, "error")[0] == "", values
        for key in COST_KEYS:
            value, text = _out(page, COST, key)
            assert float(value) == pytest.approx(want[key], rel=1e-9, abs=1e-9), f"{key}: {values}"
            assert _shown_number(text) == pytest.approx(want[key], rel=0.006, abs=0.006), (
                f"{key} shown as {text!r}: {values}"
            )
        value, text = _out(page, COST, "break_even_months")
        if want["break_even_months"] is None:
            never += 1
            assert value == "" and "never" in text, values
        else:
            assert float(value) == pytest.approx(want["break_even_months"], rel=1e-9), values
    assert 0 < never < samples.SAMPLES, "the samples should cover both outcomes"


def test_changing_a_cost_input_changes_the_result(page):
    """The seed's example, then a dearer rental: the break-even moves to gpulab's new value."""
    _set(page, COST, calculators.COST_DEFAULTS)
    before = float(_out(page, COST, "break_even_months")[0])
    assert before == pytest.approx(
        oracle.cost_expected(calculators.COST_DEFAULTS)["break_even_months"]
    )
    months = page.get_attribute(f'{COST} [data-out="chart"]', "data-months")
    dearer = calculators.COST_DEFAULTS | {"price_per_hour": 12}
    page.fill(f'{COST} [data-in="price_per_hour"]', "12")
    after = float(_out(page, COST, "break_even_months")[0])
    assert after == pytest.approx(oracle.cost_expected(dearer)["break_even_months"], rel=1e-9)
    assert after < before
    assert page.get_attribute(f'{COST} [data-out="chart"]', "data-months") != months
    page.select_option(f'{COST} [data-in="currency"]', "USD")
    assert set(page.locator(f'{COST} [data-out="currency"]').all_inner_texts()) == {"USD"}
    page.select_option(f'{COST} [data-in="currency"]', "CNY")


@pytest.mark.parametrize("field, text", samples.BAD_COST)
def test_cost_calculator_refuses_what_gpulab_refuses(page, field, text):
    """Bad input shows an error naming the field, where gpulab raises one naming it too."""
    if text:
        with pytest.raises(GpulabConfigError, match=field):
            oracle.cost_expected(calculators.COST_DEFAULTS | {field: float(text)})
    _set(page, COST, calculators.COST_DEFAULTS)
    page.fill(f'{COST} [data-in="{field}"]', text)
    message = _out(page, COST, "error")[1]
    assert calculator.LABELS["cost"][field] in message, message
    assert page.get_attribute(COST, "data-error") == field
    _set(page, COST, calculators.COST_DEFAULTS)
    assert _out(page, COST, "error")[1] == ""


def test_outside_the_site_the_snippet_shows_its_defaults_and_loads_nothing(browser):
    """As in Jupyter: no site around the snippet, so no Pyodide; the defaults' outputs stay,
    the inputs stay disabled, the status line points to the live calculators, nothing fails."""
    tab, outside = open_offline(browser)
    with _guarded(tab, outside):
        tab.set_content(
            calculators.memory_calculator_html() + calculators.cost_calculator_html(),
            wait_until="load",
        )
        tab.wait_for_timeout(300)  # the module scripts have run by now
        for root in (MEMORY, COST):
            assert tab.get_attribute(root, "data-state") == "static"
            assert (
                tab.locator(f"{root} [data-in]:disabled").count()
                == tab.locator(f"{root} [data-in]").count()
            )
        assert "gpulab.widgets.memory_calculator()" in tab.inner_text(f"{MEMORY} [data-status]")
        want = oracle.memory_expected("Llama-3-8B", "int4", 8192, 1, "RTX 4090")
        assert float(_out(tab, MEMORY, "total")[0]) == want["total"]
    tab.close()


# `make book` names the site by its path, and Jupyter Book's banner says to paste file:///…;
# there Chromium refuses module imports and fetch(), and the page falls back on the classic
# scripts that carry Pyodide's files (gpulab.ui.calculators.CARRIED_FILES).
@pytest.mark.parametrize("edition", ["", "zh_CN/"])
def test_both_calculators_start_from_the_path_make_book_prints(browser, site, edition):
    """Opened as file://, both calculators load gpulab, show what it computes and recompute."""
    tab, outside = open_offline(browser, viewport={"width": 1280, "height": 900})
    with _guarded(tab, outside):
        tab.goto((site / edition / PAGE).as_uri(), wait_until="load")
        for root in (MEMORY, COST):
            try:
                tab.wait_for_selector(f'{root}[data-state="ready"]', timeout=READY_TIMEOUT_MS)
            except Exception:
                pytest.fail(
                    f"{root} from file:// is not ready: {tab.inner_text(f'{root} [data-status]')!r}"
                )
        want = oracle.memory_expected("Llama-3-8B", "int4", 8192, 1, "RTX 4090")
        assert float(_out(tab, MEMORY, "total")[0]) == pytest.approx(want["total"], rel=1e-9)
        values = MEMORY_DEFAULTS | {"model": "Llama-3-70B", "users": 4}
        _set(tab, MEMORY, values)
        want = oracle.memory_expected("Llama-3-70B", "int4", 8192, 4, "RTX 4090")
        assert float(_out(tab, MEMORY, "total")[0]) == pytest.approx(want["total"], rel=1e-9)
        assert _out(tab, MEMORY, "tps_total") == ("", answers.NO_SPEED)  # 70B: not on a 4090
        dearer = calculators.COST_DEFAULTS | {"price_per_hour": 12}
        tab.fill(f'{COST} [data-in="price_per_hour"]', "12")
        assert float(_out(tab, COST, "break_even_months")[0]) == pytest.approx(
            oracle.cost_expected(dearer)["break_even_months"], rel=1e-9
        )
        if not edition:
            tab.locator(MEMORY).screenshot(path=str(site.parent / "calculators_from_file.png"))
    tab.close()


def test_from_a_file_a_calculator_that_cannot_start_says_to_serve_the_site(browser, tmp_path):
    """A page opened from file:// whose _static/ lacks the carried files: the status line says
    why and names `make serve`; the rendered outputs stay."""
    page = tmp_path / "notebooks" / "page.html"
    page.parent.mkdir()
    (tmp_path / "_static").mkdir()
    page.write_text(
        f'<!DOCTYPE html><html data-content_root="../"><head></head><body>'
        f"{calculators.memory_calculator_html()}</body></html>",
        encoding="utf-8",
    )
    tab, outside = open_offline(browser)
    tab.goto(page.as_uri(), wait_until="load")
    tab.wait_for_selector(f'{MEMORY}[data-state="failed"]', timeout=READY_TIMEOUT_MS)
    status = tab.inner_text(f"{MEMORY} [data-status]")
    assert "could not start" in status and "pyodide.js did not load" in status, status
    assert "make serve" in status, status
    want = oracle.memory_expected("Llama-3-8B", "int4", 8192, 1, "RTX 4090")
    assert float(_out(tab, MEMORY, "total")[0]) == want["total"]
    assert not outside
    tab.close()
