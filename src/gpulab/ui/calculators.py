"""Calculators that work on the static site, without a kernel (chapter 6).

Each function returns one HTML snippet (inputs, outputs, a status line and a ``<script
type="module">``) that a notebook shows with ``IPython.display.HTML``. What the calculators
show is computed by the library itself, never by a JavaScript twin of it:

- on the built site, the script (``gpulab/ui/js/calculators.mjs``, put into the snippet as it
  is) loads Pyodide and an archive of gpulab's pure layers (``python_archive``: core,
  reference, estimate and their data) from the site's own ``_static/`` folder, where
  tools/staging/stage.py copies them; no CDN. Each edit sends the inputs' text to
  ``gpulab.estimate.calculator.page_outputs_json`` and writes back its outputs;
- the snippet is rendered with the outputs of its default inputs, computed here by the same
  function, so it shows them at once, and in Jupyter (no site, no Pyodide) it keeps them and
  says where the live calculators are (the site, or ``gpulab.widgets.memory_calculator``).

What each calculator must show is computed straight from ``gpulab.memory``, ``gpulab.perf``,
``gpulab.specs`` and ``gpulab.cost`` by the tests' oracle (tests/calculator_oracle.py), a path
independent of the page's; the unit tests, the node tests (tests/js) and the browser test
(tests/site) compare the page with it. Every output element carries ``data-out="<key>"`` and its
unrounded value in ``data-value``; the calculator's root carries ``data-state`` ("static",
"loading", "ready" or "failed").
"""

from __future__ import annotations

import base64
import fnmatch
import gzip
import html
import io
import zipfile
from importlib import resources
from importlib.resources.abc import Traversable

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import PositiveFloat, PositiveInt, checked
from gpulab.estimate import calculator, cost, published_bounds
from gpulab.estimate.cost import Currency
from gpulab.reference import formats, models, specs
from gpulab.reference.formats import KVFormat, WeightFormatName

__all__ = [
    "ARCHIVE",
    "ARCHIVE_FILES",
    "CARRIED_FILES",
    "CLASSIC_SCRIPTS",
    "COST_DEFAULTS",
    "COST_INPUTS",
    "PAYLOAD_SUFFIX",
    "PYODIDE_DIR",
    "cost_calculator_html",
    "memory_calculator_html",
    "payload_script",
    "python_archive",
    "script",
]

# Where the site carries what the script loads, relative to its _static/ folder
# (tools/staging/stage.py puts them there; the snippet tells the script through data attributes).
PYODIDE_DIR = "pyodide/"  # pyodide.mjs, pyodide.asm.js/.wasm, python_stdlib.zip, pyodide-lock.json
ARCHIVE = "gpulab/gpulab-py.zip"
# The archive: gpulab's top-level module, its pure layers and the data they read, as patterns
# relative to the package. The import-linter contracts keep these layers free of torch & co.
ARCHIVE_FILES = (
    "__init__.py",
    "core/*.py",
    "reference/*.py",
    "estimate/*.py",
    "data/*.json",
    "data/model_configs/*.json",
    "data/measured/*.json",
)
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # a fixed date: the same sources give the same bytes
SCRIPT = "calculators.mjs"  # in gpulab/ui/js/, package data
# A page opened from file:// (the path `make book` prints) may not import a module or fetch() a
# file: Chromium refuses both for the origin "null". It may still run classic scripts. So the
# site also carries Pyodide's classic loader, and each file that Pyodide or the script fetches
# as a classic script holding it (`payload_script`); on file:// the script loads those and
# answers Pyodide's fetch() calls from them. Both lists are relative to _static/.
CLASSIC_SCRIPTS = (f"{PYODIDE_DIR}pyodide.js", f"{PYODIDE_DIR}pyodide.asm.js")
CARRIED_FILES = (
    f"{PYODIDE_DIR}pyodide.asm.wasm",
    f"{PYODIDE_DIR}python_stdlib.zip",
    f"{PYODIDE_DIR}pyodide-lock.json",
    ARCHIVE,
)
PAYLOAD_SUFFIX = ".js"  # the carrier of `name` is `name.js`, beside it


def _matching(root: Traversable, pattern: str) -> list[tuple[str, Traversable]]:
    folder, _, glob = pattern.rpartition("/")
    node = root.joinpath(*folder.split("/")) if folder else root
    if not node.is_dir():
        return []
    return sorted(
        (
            (f"{folder}/{c.name}" if folder else c.name, c)
            for c in node.iterdir()
            if c.is_file() and fnmatch.fnmatch(c.name, glob)
        ),
        key=lambda item: item[0],
    )


def python_archive() -> bytes:
    """The zip the page unpacks into Pyodide: ``gpulab/...`` for every ARCHIVE_FILES match,
    from the gpulab being imported, byte for byte the same for the same sources."""
    root = resources.files("gpulab")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for pattern in ARCHIVE_FILES:
            for name, item in _matching(root, pattern):
                info = zipfile.ZipInfo(f"gpulab/{name}", date_time=_ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive.writestr(info, item.read_bytes())
    return buffer.getvalue()


@checked
def payload_script(name: str, data: bytes) -> str:
    """The classic script that carries one file for pages opened from file://: the file
    gzipped, then base64, stored under the URL of the file (the script's own URL less `.js`)."""
    packed = base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")
    return (
        f"// {name} for pages opened from file:// (gpulab.ui.calculators.payload_script): "
        "gzip, then base64\n"
        f"(globalThis.gpulabFiles ??= {{}})[document.currentScript.src.slice(0, "
        f'-{len(PAYLOAD_SUFFIX)})] = "{packed}";\n'
    )


def script() -> str:
    """The calculators' JavaScript (gpulab/ui/js/calculators.mjs), as the snippets carry it."""
    text = resources.files("gpulab.ui").joinpath("js", SCRIPT).read_text(encoding="utf-8")
    if "</script" in text.lower():
        raise RuntimeError(f"{SCRIPT} contains '</script', which would end its element early")
    return text


# (key, label, default) of each cost input; the defaults are the GPU tutorial's example (seed
# 000): a 15,000 CNY RTX 4090 build at 350 W, 10 h a day, 0.6 CNY/kWh, against renting a 4090
# on AutoDL at 2.8 CNY/h. tokens/s is the reader's own rate (none is assumed by the library).
_MEMORY_LABEL = calculator.LABELS["memory"]
_COST_LABEL = calculator.LABELS["cost"]  # one wording for the input and its error messages
COST_INPUTS = tuple(
    (key, _COST_LABEL[key], default)
    for key, default in (
        ("hardware_price", 15000.0),
        ("power_load_w", 350.0),
        ("power_idle_w", 0.0),
        ("electricity_per_kwh", 0.6),
        ("hours_per_day", 10.0),
        ("utilisation", 1.0),
        ("years", 3.0),
        ("price_per_hour", 2.8),
        ("monthly_fee", 0.0),
        ("tokens_per_s", 50.0),
    )
)
COST_DEFAULTS = {key: default for key, _, default in COST_INPUTS}


# --------------------------------------------------------------------------- shared pieces

_STYLE = """<style>
.gpulab-calc{border:1px solid #ccc;border-radius:6px;padding:0.8em 1em;margin:1em 0;
  font-size:0.95em;max-width:46em}
.gpulab-calc label{display:inline-block;margin:0.2em 1em 0.2em 0}
.gpulab-calc input{width:7em}
.gpulab-calc table{border-collapse:collapse;margin-top:0.5em}
.gpulab-calc[data-error] table{opacity:0.3}
.gpulab-calc td{padding:0.1em 0.8em 0.1em 0}
.gpulab-calc td:first-child{min-width:15em}
.gpulab-calc [data-out=error]{color:#b00020}
.gpulab-calc [data-status]{font-style:italic}
.gpulab-calc .note{color:#555;font-size:0.9em}
</style>"""


def _as_text(value: object) -> str:
    """A default as an input holds it: 15000.0 -> '15000', 0.6 -> '0.6', 8192 -> '8192'."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def _page(kind: str, texts: dict[str, str]) -> dict[str, dict]:
    """The outputs of the defaults, by the page's own function; raises naming a bad default."""
    result = calculator.page_outputs(kind, texts)
    if result["error"]:  # the notebook's bad default: named as its keyword argument
        raise GpulabConfigError(result["library_error"], result["field"])
    return result["outputs"]


def _open(tag: str, key: str, outputs: dict, attrs: str = "") -> str:
    """The opening tag of an output element, with its initial data-value and attributes."""
    out = outputs.get(key, {})
    parts = [f'data-out="{key}"']
    if "value" in out:
        value = "" if out["value"] is None else str(out["value"])
        parts.append(f'data-value="{html.escape(value)}"')
    parts += [f'{name}="{html.escape(str(v))}"' for name, v in out.get("attrs", {}).items()]
    if attrs:
        parts.append(attrs)
    return f"<{tag} {' '.join(parts)}>"


def _out(tag: str, key: str, outputs: dict, attrs: str = "") -> str:
    """An output element with its initial data-value, attributes and text."""
    text = html.escape(outputs.get(key, {}).get("text", ""))
    return f"{_open(tag, key, outputs, attrs)}{text}</{tag}>"


def _row(key: str, label: str, unit: str, outputs: dict) -> str:
    return f"<tr><td>{html.escape(label)}</td><td>{_out('b', key, outputs)} {unit}</td></tr>"


def _select(key: str, options: list[str], default: str, label: str) -> str:
    opts = "".join(
        f'<option value="{html.escape(o)}"{" selected" if o == default else ""}>'
        f"{html.escape(o)}</option>"
        for o in options
    )
    return f'<label>{html.escape(label)} <select data-in="{key}" disabled>{opts}</select></label>'


def _number(key: str, text: str, label: str, integer: bool = False, extra: str = "") -> str:
    step = 'min="1" step="1"' if integer else 'step="any"'
    return (
        f'<label>{html.escape(label)} <input type="number" {step} data-in="{key}" '
        f'value="{html.escape(text)}"{extra} disabled></label>'
    )


def _gpu_select(default: str, label: str) -> str:
    """The GPU choice: grouped by vendor, smallest memory first, each with its memory."""
    table = specs.load_gpus()
    groups: dict[str, list[str]] = {}
    for name in specs.sorted_gpu_names():
        groups.setdefault(table[name].vendor, []).append(name)
    body = "".join(
        f'<optgroup label="{html.escape(vendor)}">'
        + "".join(
            f'<option value="{html.escape(n)}"{" selected" if n == default else ""}>'
            f"{html.escape(n)} ({table[n].memory_gb:g} GB)</option>"
            for n in names
        )
        + "</optgroup>"
        for vendor, names in groups.items()
    )
    return f'<label>{html.escape(label)} <select data-in="gpu" disabled>{body}</select></label>'


_NOTE = 'class="note"'


def _calculator(kind: str, uid: str, body: str, status: str) -> str:
    """The root element, with what the script needs to find the site's files."""
    return (
        f'{_STYLE}<div class="gpulab-calc" id="{html.escape(uid)}" data-calculator="{kind}" '
        f'data-state="static" data-pyodide="{PYODIDE_DIR}" data-archive="{ARCHIVE}" '
        f'data-classic="{" ".join(CLASSIC_SCRIPTS)}" data-carried="{" ".join(CARRIED_FILES)}">'
        f'{body}<div class="note" data-status>{status}</div></div>'
        f'<script type="module">{script()}</script>'
    )


# --------------------------------------------------------------------------- memory calculator


@checked
def memory_calculator_html(
    uid: str = "gpulab-memory-calculator",
    model: str = "Llama-3-8B",
    weights: WeightFormatName = "int4",
    kv_cache: KVFormat = "bf16",
    context: PositiveInt = 8192,
    users: PositiveInt = 1,
    gpu: str = "RTX 4090",
    memory_gb: PositiveFloat | None = None,
) -> str:
    """The static memory calculator: model, formats, context, users, GPU or your own memory ->
    memory, fit, tokens/s with the typical range.

    The arguments are the inputs it starts with (`memory_gb`: None leaves that field empty);
    one gpulab refuses raises GpulabConfigError naming it.
    """
    values = {
        "model": model,
        "weights": weights.lower() if isinstance(weights, str) else weights,
        "kv_cache": kv_cache,
        "context": context,
        "users": users,
        "gpu": gpu,
        "memory_gb": "" if memory_gb is None else memory_gb,
    }
    texts = {key: _as_text(value) for key, value in values.items()}
    outputs = _page("memory", texts)
    controls = "".join(
        [
            _select("model", models.names(), texts["model"], _MEMORY_LABEL["model"]),
            _select(
                "weights", list(formats.WEIGHT_FORMATS), texts["weights"], _MEMORY_LABEL["weights"]
            ),
            _select(
                "kv_cache", list(formats.KV_FORMATS), texts["kv_cache"], _MEMORY_LABEL["kv_cache"]
            ),
            _number("context", texts["context"], _MEMORY_LABEL["context"], integer=True),
            _number("users", texts["users"], _MEMORY_LABEL["users"], integer=True),
            _gpu_select(texts["gpu"], _MEMORY_LABEL["gpu"]),
            _number(
                "memory_gb",
                texts["memory_gb"],
                _MEMORY_LABEL["memory_gb"],
                extra=' min="0" placeholder="e.g. 8"',
            ),
        ]
    )
    rows = "".join(
        [
            _row("total", "memory needed", "GB", outputs),
            _row("weights", "of which weights", "GB", outputs),
            _row("kv", "of which KV cache (all users)", "GB", outputs),
            _row("other", "of which activations and runtime", "GB", outputs),
            _row("fits", "fits on one of the chosen GPU", "", outputs),
            _row("fits_own", "fits in your own memory", "", outputs),
            # the unit in the label: where the model does not fit, the value is words, not a speed
            _row("tps_total", "decode bound on the chosen GPU, all users (tokens/s)", "", outputs),
            _row("tps_user", "decode bound per user (tokens/s)", "", outputs),
            _row("tps_typical", "typical per user, from published runs (tokens/s)", "", outputs),
            _row("fits_on", f"fits on one (the {calculator.LISTED} smallest)", "", outputs),
        ]
    )
    share = published_bounds.decode_share()
    body = (
        f"<div>{controls}</div>{_out('div', 'error', outputs)}<table>{rows}</table>"
        f"{_out('div', 'note', outputs, _NOTE)}"
        '<div class="note">Computed by gpulab.choose (gpulab.memory.estimate_inference and '
        "gpulab.perf.decode_tokens_per_s), which your browser runs (GB = 10<sup>9</sup> "
        "bytes, as cards are marketed; your own memory is its size as the driver reports "
        "it, and a Mac's GPU gets the share of unified memory gpulab.choose allows). The "
        "decode bound is the card's bandwidth over the bytes a step reads: an upper bound, "
        "reached by no runtime. The typical range applies to it the lowest, median and "
        f"highest share of their own bound that {share.runs} published {html.escape(share.tool)} "
        f"runs on {share.devices} devices reached ({share.low:.0%}, {share.median:.0%}, "
        f"{share.high:.0%}). A model that does not fit gets no speed.</div>"
    )
    status = (
        "The figures are those of the inputs shown. On the course's site the inputs are "
        "live: your browser runs gpulab itself (Pyodide). With a kernel, use the live "
        "widget <code>gpulab.widgets.memory_calculator()</code> or "
        "<code>gpulab.choose</code>."
    )
    return _calculator("memory", uid, body, status)


# --------------------------------------------------------------------------- cost calculator


@checked
def cost_calculator_html(
    values: dict[str, float] | None = None,
    currency: Currency = "CNY",
    uid: str = "gpulab-cost-calculator",
) -> str:
    """The static cost calculator: buying vs renting, break-even, cost per million tokens."""
    unknown = sorted(set(values or {}) - set(COST_DEFAULTS))
    if unknown:
        raise GpulabConfigError(
            f"{unknown[0]}: the cost calculator takes {', '.join(COST_DEFAULTS)}", unknown[0]
        )
    texts = {key: _as_text(v) for key, v in (COST_DEFAULTS | (values or {})).items()}
    outputs = _page("cost", texts | {"currency": str(currency)})
    inputs = "".join(_number(key, texts[key], label) for key, label, _ in COST_INPUTS)
    currencies = "".join(
        f"<option{' selected' if c == currency else ''}>{c}</option>" for c in cost.CURRENCIES
    )
    money = _out("span", "currency", outputs)
    rows = "".join(
        _row(key, label, money if unit == "money" else html.escape(unit), outputs)
        for key, label, unit in (
            ("electricity_per_day", "electricity per day", "money"),
            ("electricity_per_month", "electricity per month", "money"),
            ("electricity_per_year", "electricity per year", "money"),
            ("local_monthly", "buying, per month (purchase spread over the years)", "money"),
            ("cloud_monthly", "renting the busy hours, per month", "money"),
            ("break_even_months", "buying pays for itself after", ""),
            ("local_per_million", "per million tokens, bought", "money"),
            ("cloud_per_million", "per million tokens, rented", "money"),
        )
    )
    box = calculator.CHART
    w, h, left, bottom = box["width"], box["height"], box["left"], box["bottom"]
    svg = (
        _open(
            "svg",
            "chart",
            outputs,
            f'width="{w}" height="{h}" role="img" aria-label="cumulative cost"',
        )
        + f'<line x1="{left}" y1="{h - bottom}" x2="{w - 10}" y2="{h - bottom}" stroke="#888"/>'
        f'<line x1="{left}" y1="10" x2="{left}" y2="{h - bottom}" stroke="#888"/>'
        + _out(
            "text", "chart_top", outputs, f'x="{left - 4}" y="16" text-anchor="end" font-size="11"'
        )
        + f'<text x="{left + 6}" y="16" font-size="11" fill="#555">'
        "cumulative cost, in the currency above</text>"
        + f'<text x="{left - 4}" y="{h - bottom + 2}" text-anchor="end" font-size="11">0</text>'
        + _out(
            "text",
            "chart_end",
            outputs,
            f'x="{w - 10}" y="{h - 8}" text-anchor="end" font-size="11"',
        )
        + _out("polyline", "chart_local", outputs, 'fill="none" stroke="#1f77b4" stroke-width="2"')
        + _out(
            "polyline",
            "chart_cloud",
            outputs,
            'fill="none" stroke="#d62728" stroke-width="2" stroke-dasharray="5,3"',
        )
        + f'<text x="{left + 10}" y="{h - 8}" font-size="11" fill="#1f77b4">bought</text>'
        f'<text x="{left + 70}" y="{h - 8}" font-size="11" fill="#d62728">rented</text></svg>'
    )
    body = (
        f'<div>{inputs}<label>currency <select data-in="currency" disabled>{currencies}'
        "</select></label></div>"
        f"{_out('div', 'error', outputs)}<table>{rows}</table>{svg}"
        '<div class="note">gpulab.cost, run by your browser: electricity = (load W x busy '
        "hours + idle W x idle hours) / 1000 x price; renting is billed for the busy hours "
        "only; break-even = price / (rent per month - electricity per month). Every amount "
        "is in the one currency you enter; nothing is converted.</div>"
    )
    status = (
        "The figures are those of the inputs shown. On the course's site the inputs are "
        "live: your browser runs gpulab itself (Pyodide). With a kernel, call "
        "<code>gpulab.cost</code> as the cells above do."
    )
    return _calculator("cost", uid, body, status)
