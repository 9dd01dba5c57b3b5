"""The static calculators: the page's Python (gpulab.estimate.calculator) agrees with the library
reached another way, the snippets carry their JavaScript and defaults, and the archive the
site carries holds a gpulab that runs on its own.

The JavaScript runs in tests/js (node, Pyodide) and tests/site (Chromium, the built page).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from gpulab import calculators, cost, memory, models, specs
from gpulab.core.errors import GpulabConfigError
from gpulab.estimate import calculator
from tests import calculator_oracle as oracle
from tests.js import samples

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
MEMORY_DEFAULTS = samples.MEMORY_DEFAULTS
COST_TEXTS = samples.texts(calculators.COST_DEFAULTS) | {"currency": "CNY"}


# --------------------------------------------------------------------------- the page's Python


def test_memory_outputs_agree_with_memory_perf_and_specs():
    """The browser test's seeded inputs: the page's function (through gpulab.choose) gives
    what gpulab.memory, perf and specs give directly, to the byte and to 1e-12."""
    for values in samples.memory_samples():
        got = calculator.page_outputs("memory", samples.texts(values))
        assert got["error"] == "", values
        out = got["outputs"]
        want = oracle.memory_expected(
            values["model"],
            values["weights"],
            values["context"],
            values["users"],
            values["gpu"],
            values["kv_cache"],
        )
        for key in ("total", "weights", "kv", "other"):
            assert out[key]["value"] == want[key], (values, key)
        assert out["fits"]["value"] == ("yes" if want["fits"] else "no"), values
        assert out["fits_on"]["value"].split("; ") == want["fits_on"] or (
            out["fits_on"]["value"] == "" and want["fits_on"] == []
        ), values
        for key in ("tps_total", "tps_user"):
            if want[key] is None:  # no speed for a model that does not fit
                assert out[key] == {"value": None, "text": "does not fit: no speed"}, values
            else:
                assert out[key]["value"] == pytest.approx(want[key], rel=1e-12), (values, key)
        typical = out["tps_typical"]
        if want["tps_typical"] is None:
            assert typical["value"] is None, values
        else:
            low, median, high = want["tps_typical"]
            assert typical["value"] == pytest.approx(median, rel=1e-12), values
            assert float(typical["attrs"]["data-low"]) == pytest.approx(low, rel=1e-12)
            assert float(typical["attrs"]["data-high"]) == pytest.approx(high, rel=1e-12)
    # the samples cover both outcomes
    assert {
        oracle.memory_expected(
            v["model"], v["weights"], v["context"], v["users"], v["gpu"], v["kv_cache"]
        )["fits"]
        for v in samples.memory_samples()
    } == {True, False}


def test_memory_outputs_of_the_defaults():
    """Llama-3-8B int4, 8192 tokens, 1 user: estimate_inference's total; fits a 24 GB card."""
    out = calculator.memory_outputs("Llama-3-8B", "int4", "bf16", 8192, 1, "RTX 4090")
    b = memory.estimate_inference(models.get("Llama-3-8B"), "int4", "bf16", 1, 8192)
    assert out["total"]["value"] == b.total
    assert out["total"]["text"] == calculator.display_number(b.total / 1e9)
    # 24,564 MiB reported, less a 0.5 GiB context and 5% slack: 24.0e9 bytes for tensors
    assert out["fits"]["text"] == "yes (24\u00a0GB for tensors)"  # the unit held to its number
    assert "RTX 4090" in out["fits_on"]["value"].split("; ")
    assert out["note"]["text"] == ""
    big = calculator.memory_outputs("Llama-3-70B", "bf16", "bf16", 8192, 1, "RTX 4090")
    assert big["fits"]["value"] == "no" and "RTX 4090" not in big["fits_on"]["value"]
    # the five smallest cards that fit by name, smallest first, then a count of the rest; the
    # value holds them all, sorted by name
    every = out["fits_on"]["value"].split("; ")
    shown, rest = out["fits_on"]["text"].split(" and ")
    shown = shown.split(", ")
    assert len(shown) == 5 and rest == f"{len(every) - 5} more" and set(shown) <= set(every)
    capacity = {n: specs.get_gpu(n).model_memory_bytes for n in every}
    assert max(capacity[n] for n in shown) <= min(capacity[n] for n in set(every) - set(shown))


def test_memory_outputs_note_a_context_beyond_the_model():
    longest = models.get("Llama-2-7B").max_position_embeddings
    out = calculator.memory_outputs("Llama-2-7B", "int4", "bf16", longest * 2, 1, "RTX 4090")
    assert f"{longest:,} tokens" in out["note"]["text"]


def test_cost_outputs_are_gpulab_cost():
    """The defaults are the seed's example: 2.1 CNY a day, 19 months against a rented 4090."""
    out = calculator.page_outputs("cost", COST_TEXTS)["outputs"]
    assert out["electricity_per_day"]["value"] == pytest.approx(2.1)
    assert out["electricity_per_year"]["value"] == pytest.approx(766.5)
    assert out["break_even_months"]["value"] == pytest.approx(19.04, abs=0.01)
    assert out["break_even_months"]["text"] == "19 months (1.59 years)"
    setup = cost.LocalSetup(15000, 350, 0.6, 10)
    assert out["local_per_million"]["value"] == pytest.approx(
        cost.cost_per_million_tokens(cost.local_cost_per_busy_hour(setup), 50)
    )
    assert out["cloud_per_million"]["value"] == pytest.approx(cost.cost_per_million_tokens(2.8, 50))
    assert out["currency"]["text"] == "CNY"


def test_cost_outputs_agree_with_cost_expected_on_seeded_inputs():
    for values in samples.cost_samples():
        out = calculator.page_outputs("cost", samples.texts(values) | {"currency": "USD"})[
            "outputs"
        ]
        want = oracle.cost_expected(values, "USD")
        for key, value in want.items():
            assert out[key]["value"] == (
                None if value is None else pytest.approx(value, rel=1e-12)
            ), (values, key)


def test_cost_outputs_never_break_even():
    out = calculator.page_outputs("cost", COST_TEXTS | {"price_per_hour": "0.1"})["outputs"]
    assert out["break_even_months"] == {"value": None, "text": "never: renting stays cheaper"}
    assert out["chart"]["attrs"]["data-months"] == "36"


def test_cost_chart_spans_one_and_a_half_break_evens():
    """19.04 months to break even: a 29-month chart, 30 points a line, inside the SVG box."""
    out = calculator.page_outputs("cost", COST_TEXTS)["outputs"]
    assert out["chart"]["attrs"]["data-months"] == "29"
    assert out["chart_end"]["text"] == "29 months"
    box = calculator.CHART
    for line in ("chart_local", "chart_cloud"):
        points = [tuple(map(float, p.split(","))) for p in out[line]["attrs"]["points"].split()]
        assert len(points) == 30
        assert points[0][0] == box["left"] and points[-1][0] == box["width"] - 10
        assert all(10 - 0.05 <= y <= box["height"] - box["bottom"] + 0.05 for _, y in points)
    curve = cost.cost_over_time(cost.LocalSetup(15000, 350, 0.6, 10), cost.CloudRate(2.8), 29)
    assert out["chart_top"]["text"] == calculator.display_number(max(curve.local + curve.cloud))


@pytest.mark.parametrize(
    "kind, field, text",
    [("memory", f, t) for f, t in samples.BAD_MEMORY]
    + [("cost", f, t) for f, t in samples.BAD_COST]
    + samples.BAD_TEXT_ONLY,
)
def test_bad_input_gives_an_error_naming_the_field(kind, field, text):
    inputs = (MEMORY_DEFAULTS if kind == "memory" else COST_TEXTS) | {field: text}
    got = calculator.page_outputs(kind, inputs)
    assert got["field"] == field, got
    # the reader sees the input's label, not the library's field name
    label = calculator.LABELS[kind][field]
    assert label in got["error"] and got["outputs"] == {
        "error": {"value": got["error"], "text": got["error"]}
    }
    assert label == field or not got["error"].startswith(f"{field}=")


@pytest.mark.parametrize(
    "field, text",
    [("model", "GPT-5"), ("gpu", "Voodoo 2"), ("weights", "int3"), ("kv_cache", "int2")],
)
def test_unknown_choices_name_the_field(field, text):
    got = calculator.page_outputs("memory", MEMORY_DEFAULTS | {field: text})
    assert got["field"] == field and text in got["error"]


def test_a_page_that_sends_the_wrong_inputs_is_a_bug_not_an_error_to_show():
    with pytest.raises(GpulabConfigError, match="inputs"):
        calculator.page_outputs("memory", {"model": "Llama-3-8B"})
    with pytest.raises(GpulabConfigError, match="inputs"):
        calculator.page_outputs("cost", COST_TEXTS | {"rent": "3"})
    with pytest.raises(GpulabConfigError, match="inputs"):
        calculator.page_outputs("memory", MEMORY_DEFAULTS | {"users": 1})
    with pytest.raises(GpulabConfigError, match="kind"):
        calculator.page_outputs("power", {})
    with pytest.raises(GpulabConfigError, match="inputs_json"):
        calculator.page_outputs_json("cost", "[1, 2]")


def test_page_outputs_json_is_the_json_of_page_outputs():
    text = calculator.page_outputs_json("memory", json.dumps(MEMORY_DEFAULTS))
    assert json.loads(text) == calculator.page_outputs("memory", MEMORY_DEFAULTS)
    never = calculator.page_outputs_json("cost", json.dumps(COST_TEXTS | {"price_per_hour": "0"}))
    assert json.loads(never)["outputs"]["break_even_months"]["value"] is None


@pytest.mark.parametrize(
    "x, shown",
    [
        (0, "0"),
        (2.1, "2.1"),
        (19.04, "19"),
        (0.041666, "0.0417"),
        (99.96, "100"),
        (766.5, "766"),
        (1234.4, "1,234"),
        (1.2e-7, "1.2e-07"),
        (-3.14159, "-3.14"),
        (float("inf"), "-"),
        (float("nan"), "-"),
    ],
)
def test_display_number(x, shown):
    assert calculator.display_number(x) == shown


def test_reading_a_number_names_the_field():
    for text, message in (
        ("", "enter a number"),
        ("abc", "is not a number"),
        ("inf", "finite"),
        ("nan", "finite"),
        ("2.5", "whole number"),
    ):
        got = calculator.page_outputs("memory", MEMORY_DEFAULTS | {"users": text})
        assert got["field"] == "users" and message in got["error"], (text, got["error"])
        assert got["error"].startswith("concurrent users")
    ok = calculator.page_outputs("memory", MEMORY_DEFAULTS | {"context": " 4e3 "})
    assert ok["error"] == "" and ok["outputs"]["kv"]["value"] == memory.kv_cache_bytes(
        models.get("Llama-3-8B"), 4000, 1, "bf16"
    )


# --------------------------------------------------------------------------- the snippets


@pytest.mark.parametrize(
    "build, uid",
    [
        (calculators.memory_calculator_html, "gpulab-memory-calculator"),
        (calculators.cost_calculator_html, "gpulab-cost-calculator"),
    ],
)
def test_snippet_carries_the_script_file_and_no_outside_reference(build, uid):
    page = build()
    assert len(page.encode()) < 40_000  # no precomputed table: the page runs gpulab
    assert not re.search(r"<script[^>]*\bsrc=", page)
    assert "http://" not in page and "https://" not in page
    script = page.split('<script type="module">', 1)[1]
    assert script == calculators.script() + "</script>"  # the file, as it is, once
    assert f'id="{uid}"' in page and 'data-state="static"' in page
    assert f'data-pyodide="{calculators.PYODIDE_DIR}"' in page
    assert f'data-archive="{calculators.ARCHIVE}"' in page


def test_snippets_are_rendered_with_the_outputs_of_their_defaults():
    page = calculators.memory_calculator_html()
    want = calculator.page_outputs("memory", MEMORY_DEFAULTS)["outputs"]
    for key in ("total", "kv", "tps_total", "fits_on"):
        assert f'data-out="{key}" data-value="{want[key]["value"]}">{want[key]["text"]}<' in page
    # the inputs hold the defaults and are disabled until gpulab runs in the page
    assert '<option value="Llama-3-8B" selected>' in page
    assert 'data-in="context" value="8192" disabled' in page
    assert "gpulab.widgets.memory_calculator()" in page
    page = calculators.cost_calculator_html()
    for key, _, default in calculators.COST_INPUTS:
        assert f'data-in="{key}" value="{calculators._as_text(default)}" disabled' in page
    assert 'data-out="chart_local" points="60.0,' in page


def test_snippet_defaults_must_be_valid():
    with pytest.raises(GpulabConfigError, match="model"):
        calculators.memory_calculator_html(model="GPT-5")
    with pytest.raises(GpulabConfigError, match="context"):
        calculators.memory_calculator_html(context=0)
    with pytest.raises(GpulabConfigError, match="gpu"):
        calculators.memory_calculator_html(gpu="Voodoo 2")
    with pytest.raises(GpulabConfigError, match="years"):
        calculators.cost_calculator_html({"years": 0})
    with pytest.raises(GpulabConfigError, match="currency"):
        calculators.cost_calculator_html(currency="EUR")
    with pytest.raises(GpulabConfigError, match="rent"):
        calculators.cost_calculator_html({"rent": 3})
    assert 'value="int4" selected' in calculators.memory_calculator_html(weights="INT4")


def test_the_script_is_package_data():
    """pyproject ships gpulab/ui/js/*.mjs, and the file is where calculators.script reads it."""
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["gpulab"]
    shipped = [
        p for p in resources.files("gpulab.ui").joinpath("js").iterdir() if p.name.endswith(".mjs")
    ]
    assert shipped and all(any(Path("ui/js", p.name).match(g) for g in patterns) for p in shipped)


# --------------------------------------------------------------------------- the archive


def test_archive_holds_the_pure_layers_and_their_data():
    names = zipfile.ZipFile(io.BytesIO(calculators.python_archive())).namelist()
    src = Path(resources.files("gpulab"))
    for layer in ("core", "reference", "estimate"):
        for module in (src / layer).rglob("*.py"):
            assert f"gpulab/{module.relative_to(src).as_posix()}" in names
    assert "gpulab/__init__.py" in names and "gpulab/data/gpu_specs.json" in names
    assert len([n for n in names if n.startswith("gpulab/data/model_configs/")]) == len(
        models.names()
    )
    assert not [n for n in names if re.match(r"gpulab/(ui|bench|machine|course)/", n)]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert calculators.python_archive() == calculators.python_archive()  # reproducible


def test_archive_runs_alone(tmp_path):
    """Unpacked, in an isolated interpreter with nothing else on sys.path (as in Pyodide):
    the page's call gives what gpulab gives here, and no layer above estimate was imported."""
    zipfile.ZipFile(io.BytesIO(calculators.python_archive())).extractall(tmp_path)
    code = (
        "import json, sys; sys.path[:0] = [sys.argv[1]]\n"
        "from gpulab.estimate import calculator\n"
        "out = calculator.page_outputs_json('memory', sys.argv[2])\n"
        "assert not [m for m in sys.modules if m.split('.')[:2] in (['gpulab', 'ui'], "
        "['gpulab', 'machine'], ['gpulab', 'bench']) or m in ('torch', 'numpy')], sys.modules\n"
        "print(out)"
    )
    run = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(tmp_path), json.dumps(MEMORY_DEFAULTS)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(run.stdout) == calculator.page_outputs("memory", MEMORY_DEFAULTS)


def test_a_carrier_script_holds_its_file_gzipped_in_base64_under_its_own_url():
    """What a file:// page decodes is the file, byte for byte; the same bytes give the same
    script (the site's build is reproducible); the script stores it under its own URL less .js."""
    import base64
    import gzip

    data = calculators.python_archive()
    script = calculators.payload_script("gpulab-py.zip", data)
    assert script == calculators.payload_script("gpulab-py.zip", data)
    key, packed = re.search(
        r'\[document\.currentScript\.src\.slice\(0, -(\d+)\)\] = "([^"]+)";', script
    ).groups()
    assert int(key) == len(".js") == len(calculators.PAYLOAD_SUFFIX)
    assert gzip.decompress(base64.b64decode(packed, validate=True)) == data


def test_the_snippet_names_the_classic_scripts_and_the_carried_files():
    html = calculators.memory_calculator_html()
    classic = re.search(r'data-classic="([^"]+)"', html).group(1).split()
    carried = re.search(r'data-carried="([^"]+)"', html).group(1).split()
    assert classic == ["pyodide/pyodide.js", "pyodide/pyodide.asm.js"]
    assert calculators.ARCHIVE in carried and "pyodide/pyodide.asm.wasm" in carried
