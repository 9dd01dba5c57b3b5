"""Calculators that work on the static site, without a kernel (chapter 6).

Each function returns one self-contained HTML snippet: inputs, outputs and an inline
``<script>`` with no external file and no CDN, so a notebook shows it with
``IPython.display.HTML`` and the built page keeps it working. Two kinds:

- the memory calculator embeds a table precomputed with ``gpulab.memory`` and ``gpulab.perf``
  over a finite grid (model x weight format x context x users); the page only looks values up
  and divides by the chosen GPU's bandwidth, as ``perf.decode_tokens_per_s`` does;
- the cost calculator takes free numeric inputs, so the few lines of ``gpulab.cost`` arithmetic
  are ported to JavaScript below, with the constants taken from that module.

``memory_expected`` and ``cost_expected`` compute what each calculator should show, straight
from the library; the unit tests and the browser test (tests/site) compare the page with them.
Every output element carries ``data-out="<key>"`` and its unrounded value in ``data-value``.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field

from gpulab.core.errors import GpulabConfigError
from gpulab.estimate import choose, cost, memory, perf
from gpulab.reference import models, specs

__all__ = [
    "COST_DEFAULTS",
    "COST_INPUTS",
    "MemoryGrid",
    "cost_calculator_html",
    "cost_expected",
    "memory_calculator_html",
    "memory_expected",
    "memory_table",
]


@dataclass(frozen=True)
class MemoryGrid:
    """The choices the static memory calculator offers; every combination is precomputed."""

    models: tuple[str, ...] = field(default_factory=lambda: tuple(models.names()))  # catalogue
    formats: tuple[str, ...] = ("bf16", "fp8", "int8", "int4", "q8_0", "q4_k_m")  # weight formats
    contexts: tuple[int, ...] = (1024, 4096, 8192, 16384, 32768, 131072)  # tokens per user
    users: tuple[int, ...] = (1, 2, 5, 10, 20, 30)  # concurrent sequences (the articles' 5-30)
    kv_cache: str = "bf16"  # KV cache format, fixed: one more axis would multiply the table

    def __post_init__(self) -> None:
        for name in self.models:
            models.get(name)  # raises GpulabConfigError naming an unknown model
        for fmt in self.formats:
            memory.bits_per_weight(fmt)
        memory.kv_cache_bytes(models.get(self.models[0]), 1, 1, self.kv_cache)
        for label, values in (("contexts", self.contexts), ("users", self.users)):
            if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1
                                 for v in values):
                raise GpulabConfigError(f"{label}={values!r} must be positive integers")


def _gpu_rows(model: str) -> list[dict]:
    """Every GPU of the spec table: name, the memory gpulab.choose lets a model use, bandwidth."""
    probe = choose.Workload(model)
    # choose.evaluate's capacity: the marketed memory, or the GPU's share of a Mac's unified memory
    return [{"name": g.name, "memory_gb": g.memory_gb, "bandwidth_gbs": g.bandwidth_gbs,
             "capacity": choose.evaluate(probe, g.name).memory_available_bytes}
            for g in specs.load_gpus().values()]


def memory_table(grid: MemoryGrid | None = None) -> dict:
    """The memory calculator's data: estimates for every grid point, flat, row-major.

    total[((m*F + f)*C + c)*U + u] is estimate_inference(...).total; weights and active
    (the bytes one decode step reads for weights) are indexed by m*F + f; kv by (m*C + c)*U + u.
    """
    grid = grid or MemoryGrid()
    total, weights, active, kv, max_context = [], [], [], [], []
    for name in grid.models:
        spec = models.get(name)
        max_context.append(spec.max_position_embeddings)
        for fmt in grid.formats:
            resident = memory.weight_bytes(spec, fmt)
            weights.append(resident)
            # decode_bytes_per_step minus the KV cache: what perf divides the bandwidth by
            active.append(perf.decode_bytes_per_step(spec, fmt, grid.kv_cache, 1, 1)
                          - memory.kv_cache_bytes(spec, 1, 1, grid.kv_cache))
            for context in grid.contexts:
                for users in grid.users:
                    b = memory.estimate_inference(spec, fmt, grid.kv_cache, users, context)
                    total.append(b.total)
        for context in grid.contexts:
            for users in grid.users:
                kv.append(memory.kv_cache_bytes(spec, context, users, grid.kv_cache))
    return {"models": list(grid.models), "formats": list(grid.formats),
            "contexts": list(grid.contexts), "users": list(grid.users), "kv_cache": grid.kv_cache,
            "total": total, "weights": weights, "active": active, "kv": kv,
            "max_context": max_context, "gpus": _gpu_rows(grid.models[0])}


def memory_expected(model: str, weights: str, context: int, users: int, gpu: str,
                    kv_cache: str = "bf16") -> dict:
    """What the memory calculator must show for these inputs, from gpulab.choose and gpulab.memory."""
    workload = choose.Workload(model, weights, context, users, kv_cache=kv_cache)
    one = choose.evaluate(workload, gpu, 1)
    b = one.breakdown
    return {
        "total": one.memory_needed_bytes, "weights": b.weights, "kv": b.kv_cache,
        "other": one.memory_needed_bytes - b.weights - b.kv_cache,
        "fits": one.fits,
        "fits_on": sorted(c.gpu for c in choose.recommend(workload, max_count=1)),
        "tps_total": one.decode_tokens_per_s_total, "tps_user": one.decode_tokens_per_s_per_user,
    }


# --------------------------------------------------------------------------- shared pieces

_STYLE = """<style>
.gpulab-calc{border:1px solid #ccc;border-radius:6px;padding:0.8em 1em;margin:1em 0;
  font-size:0.95em;max-width:46em}
.gpulab-calc label{display:inline-block;margin:0.2em 1em 0.2em 0}
.gpulab-calc input{width:7em}
.gpulab-calc table{border-collapse:collapse;margin-top:0.5em}
.gpulab-calc td{padding:0.1em 0.8em 0.1em 0}
.gpulab-calc td:first-child{min-width:15em}
.gpulab-calc [data-out=fits_on]{font-weight:normal}
.gpulab-calc [data-out=error]{color:#b00020}
.gpulab-calc .note{color:#555;font-size:0.9em}
</style>"""

# Number display shared by both calculators: 3 significant digits below 100, whole
# numbers with thousands separators above (the tests parse this back).
_FORMAT_JS = """
function fmt(x) {
  if (!isFinite(x)) return "-";
  var a = Math.abs(x);
  if (a >= 100) return Math.round(x).toLocaleString("en-US");
  if (a === 0) return "0";
  return Number(x.toPrecision(3)).toString();
}
function show(root, key, value, text) {
  var el = root.querySelector('[data-out="' + key + '"]');
  el.setAttribute("data-value", value === null ? "" : String(value));
  el.textContent = text === undefined ? fmt(value) : text;
}
"""


def _json_for_script(data: object) -> str:
    """JSON that cannot close the surrounding <script> element."""
    return json.dumps(data, separators=(",", ":")).replace("</", "<\\/")


def _select(key: str, options: list, default: object, label: str) -> str:
    opts = "".join(f'<option value="{i}"{" selected" if o == default else ""}>'
                   f"{html.escape(str(o))}</option>" for i, o in enumerate(options))
    return f'<label>{html.escape(label)} <select data-in="{key}">{opts}</select></label>'


def _output_row(key: str, label: str, unit: str = "") -> str:
    return (f'<tr><td>{html.escape(label)}</td><td><b data-out="{key}" data-value=""></b> '
            f"{html.escape(unit)}</td></tr>")


# --------------------------------------------------------------------------- memory calculator

_MEMORY_JS = """
(function () {
  var D = %(data)s;
  var root = document.getElementById(%(uid)s);
  %(format)s
  function pick(key) { return Number(root.querySelector('[data-in="' + key + '"]').value); }
  function update() {
    var m = pick("model"), f = pick("format"), c = pick("context"), u = pick("users");
    var g = D.gpus[pick("gpu")];
    var F = D.formats.length, C = D.contexts.length, U = D.users.length;
    var total = D.total[((m * F + f) * C + c) * U + u];
    var weights = D.weights[m * F + f], kv = D.kv[(m * C + c) * U + u];
    var users = D.users[u], context = D.contexts[c];
    show(root, "total", total, fmt(total / 1e9));
    show(root, "weights", weights, fmt(weights / 1e9));
    show(root, "kv", kv, fmt(kv / 1e9));
    show(root, "other", total - weights - kv, fmt((total - weights - kv) / 1e9));
    var fitting = D.gpus.filter(function (x) { return total <= x.capacity; });
    var names = fitting.map(function (x) { return x.name; }).sort();
    var shown = fitting.slice().sort(function (a, b) { return a.capacity - b.capacity; })
      .map(function (x) { return x.name; });
    show(root, "fits_on", names.join("; "),
         shown.length ? shown.join(", ") : "no single GPU in the table");
    var fits = total <= g.capacity;
    show(root, "fits", fits ? "yes" : "no",
         (fits ? "yes" : "no") + " (" + fmt(g.memory_gb) + " GB)");
    var bytes = D.active[m * F + f] + kv;
    var tps = users * g.bandwidth_gbs * 1e9 / bytes;
    show(root, "tps_total", tps);
    show(root, "tps_user", tps / users);
    var maxc = D.max_context[m];
    root.querySelector('[data-out="note"]').textContent = (maxc && context > maxc)
      ? D.models[m] + " is configured for at most " + maxc.toLocaleString("en-US") +
        " tokens: this context is beyond it." : "";
  }
  root.querySelectorAll("select").forEach(function (s) { s.addEventListener("change", update); });
  update();
})();
"""


def memory_calculator_html(grid: MemoryGrid | None = None, uid: str = "gpulab-memory-calculator",
                           model: str = "Llama-3-8B", weights: str = "int4", context: int = 8192,
                           users: int = 1, gpu: str = "RTX 4090") -> str:
    """The static memory calculator: model, format, context, users, GPU -> memory, fit, tokens/s."""
    grid = grid or MemoryGrid()
    data = memory_table(grid)
    gpus = [g["name"] for g in data["gpus"]]
    for label, value, options in (("model", model, grid.models), ("weights", weights, grid.formats),
                                  ("context", context, grid.contexts), ("users", users, grid.users),
                                  ("gpu", gpu, gpus)):
        if value not in options:
            raise GpulabConfigError(f"{label}={value!r} is not offered; use one of "
                                    f"{', '.join(map(str, options))}")
    controls = "".join([
        _select("model", list(grid.models), model, "model"),
        _select("format", list(grid.formats), weights, "weights"),
        _select("context", list(grid.contexts), context, "context (tokens per user)"),
        _select("users", list(grid.users), users, "concurrent users"),
        _select("gpu", gpus, gpu, "GPU"),
    ])
    rows = "".join([
        _output_row("total", "memory needed", "GB"),
        _output_row("weights", "of which weights", "GB"),
        _output_row("kv", f"of which KV cache ({grid.kv_cache}, all users)", "GB"),
        _output_row("other", "of which activations and runtime", "GB"),
        _output_row("fits", "fits on one of the chosen GPU"),
        _output_row("tps_total", "decode bound on that GPU, all users (if it fits)", "tokens/s"),
        _output_row("tps_user", "decode bound per user (if it fits)", "tokens/s"),
        _output_row("fits_on", "fits on one"),
    ])
    script = _MEMORY_JS % {"data": _json_for_script(data), "uid": json.dumps(uid),
                           "format": _FORMAT_JS}
    return (f'{_STYLE}<div class="gpulab-calc" id="{html.escape(uid)}">'
            f"<div>{controls}</div><table>{rows}</table>"
            '<div class="note" data-out="note"></div>'
            '<div class="note">Computed with gpulab.memory.estimate_inference and '
            "gpulab.perf.decode_tokens_per_s for every choice when the page was built (GB = "
            "10<sup>9</sup> bytes, as cards are marketed; a Mac's GPU gets the share of unified "
            "memory gpulab.choose allows). The decode bound is the card's bandwidth over the "
            "bytes a step reads: an upper bound, reached by no runtime."
            f"</div></div><script>{script}</script>")


# --------------------------------------------------------------------------- cost calculator

# (key, label, default) of each input; the defaults are the GPU tutorial's example (seed 000):
# a 15,000 CNY RTX 4090 build at 350 W, 10 h a day, 0.6 CNY/kWh, against renting a 4090 on
# AutoDL at 2.8 CNY/h. tokens/s is the reader's own rate (none is assumed by the library).
COST_INPUTS = (
    ("hardware_price", "hardware price", 15000.0),
    ("power_load_w", "power at load (W)", 350.0),
    ("power_idle_w", "power when idle (W)", 0.0),
    ("electricity_per_kwh", "electricity per kWh", 0.6),
    ("hours_per_day", "hours on per day", 10.0),
    ("utilisation", "share of those hours computing", 1.0),
    ("years", "years of use", 3.0),
    ("price_per_hour", "cloud price per hour", 2.8),
    ("monthly_fee", "cloud monthly fee", 0.0),
    ("tokens_per_s", "tokens/s (yours, same on both)", 50.0),
)
COST_DEFAULTS = {key: default for key, _, default in COST_INPUTS}
_SETUP_FIELDS = ("hardware_price", "power_load_w", "electricity_per_kwh", "hours_per_day",
                 "power_idle_w", "utilisation", "years")


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
        "local_per_million": cost.cost_per_million_tokens(cost.local_cost_per_busy_hour(setup),
                                                          tokens_per_s),
        "cloud_per_million": cost.cost_per_million_tokens(cost.cloud_cost_per_hour(rate, hours),
                                                          tokens_per_s),
    }


# The JavaScript twin of cost_expected and of gpulab.cost's checks, in the same order.
_COST_JS = """
(function () {
  var DAYS_PER_YEAR = %(days_per_year)r, DAYS_PER_MONTH = DAYS_PER_YEAR / 12;
  var root = document.getElementById(%(uid)s);
  %(format)s
  function read() {
    var v = {};
    root.querySelectorAll("input[data-in]").forEach(function (el) {
      v[el.getAttribute("data-in")] = el.value.trim() === "" ? NaN : Number(el.value);
    });
    return v;
  }
  function check(v) {
    var k;
    for (k in v) { if (!isFinite(v[k])) return k + " must be a finite number"; }
    var nonNeg = ["hardware_price", "electricity_per_kwh", "power_idle_w",
                  "price_per_hour", "monthly_fee"];
    for (var i = 0; i < nonNeg.length; i++) {
      if (v[nonNeg[i]] < 0) return nonNeg[i] + " must be zero or more";
    }
    if (v.power_load_w <= 0) return "power_load_w must be greater than zero";
    if (!(v.hours_per_day > 0 && v.hours_per_day <= 24))
      return "hours_per_day must be more than 0 and at most 24 hours a day";
    if (v.power_idle_w > v.power_load_w) return "power_idle_w must not exceed power_load_w";
    if (!(v.utilisation > 0 && v.utilisation <= 1)) return "utilisation must be in (0, 1]";
    if (v.years <= 0) return "years must be greater than zero";
    if (v.tokens_per_s <= 0) return "tokens_per_s must be greater than zero";
    return "";
  }
  function compute(v) {
    var busy = v.hours_per_day * v.utilisation;
    var kwh = (v.power_load_w * busy + v.power_idle_w * (v.hours_per_day - busy)) / 1000;
    var day = kwh * v.electricity_per_kwh;
    var month = day * DAYS_PER_MONTH;
    var localMonthly = month + v.hardware_price / (v.years * 12);
    var cloudMonthly = v.price_per_hour * busy * DAYS_PER_MONTH + v.monthly_fee;
    var saving = cloudMonthly - month;
    var localHour = localMonthly * 12 * v.years / (busy * DAYS_PER_YEAR * v.years);
    var cloudHour = cloudMonthly / (busy * DAYS_PER_MONTH);
    return {electricity_per_day: day, electricity_per_month: month,
            electricity_per_year: day * DAYS_PER_YEAR, local_monthly: localMonthly,
            cloud_monthly: cloudMonthly,
            break_even_months: saving > 0 ? v.hardware_price / saving : null,
            local_per_million: localHour / (v.tokens_per_s * 3600) * 1e6,
            cloud_per_million: cloudHour / (v.tokens_per_s * 3600) * 1e6,
            _month: month, _cloud: cloudMonthly};
  }
  function chart(v, r) {
    var n = r.break_even_months === null ? 36
      : Math.min(120, Math.max(12, Math.ceil(1.5 * r.break_even_months)));
    var local = [], cloud = [], top = 0, i;
    for (i = 0; i <= n; i++) {
      local.push(v.hardware_price + r._month * i);
      cloud.push(r._cloud * i);
      top = Math.max(top, local[i], cloud[i]);
    }
    top = top || 1;
    var W = 420, H = 180, L = 60, B = 24;
    function pts(ys) {
      return ys.map(function (y, j) {
        return (L + j * (W - L - 10) / n).toFixed(1) + "," + (H - B - y / top * (H - B - 10)).toFixed(1);
      }).join(" ");
    }
    var svg = root.querySelector("svg");
    svg.setAttribute("data-months", n);
    svg.querySelector(".local").setAttribute("points", pts(local));
    svg.querySelector(".cloud").setAttribute("points", pts(cloud));
    svg.querySelector(".top").textContent = fmt(top);
    svg.querySelector(".end").textContent = n + " months";
  }
  function update() {
    var v = read(), err = check(v);
    var cur = root.querySelector('[data-in-currency]').value;
    root.querySelectorAll(".cur").forEach(function (el) { el.textContent = cur; });
    show(root, "error", err, err);
    root.querySelector("table").style.opacity = err ? 0.3 : 1;
    if (err) return;
    var r = compute(v);
    ["electricity_per_day", "electricity_per_month", "electricity_per_year", "local_monthly",
     "cloud_monthly", "local_per_million", "cloud_per_million"].forEach(function (k) {
      show(root, k, r[k]);
    });
    var be = r.break_even_months;
    show(root, "break_even_months", be, be === null ? "never: renting stays cheaper"
      : fmt(be) + " months (" + fmt(be / 12) + " years)");
    chart(v, r);
  }
  root.querySelectorAll("input, select").forEach(function (el) {
    el.addEventListener("input", update);
    el.addEventListener("change", update);
  });
  update();
})();
"""


def cost_calculator_html(values: dict | None = None, currency: str = "CNY",
                         uid: str = "gpulab-cost-calculator") -> str:
    """The static cost calculator: buying vs renting, break-even, cost per million tokens."""
    values = COST_DEFAULTS | (values or {})
    cost_expected(values, currency)  # the defaults must be valid input (raises naming the field)
    inputs = "".join(
        f'<label>{html.escape(label)} <input type="number" step="any" data-in="{key}" '
        f'value="{values[key]:g}"></label>' for key, label, _ in COST_INPUTS)
    currencies = "".join(f'<option{" selected" if c == currency else ""}>{c}</option>'
                         for c in cost.CURRENCIES)
    money = '<span class="cur"></span>'
    rows = "".join(
        f'<tr><td>{html.escape(label)}</td><td><b data-out="{key}" data-value=""></b> '
        f"{money if unit == 'money' else html.escape(unit)}</td></tr>"
        for key, label, unit in (
            ("electricity_per_day", "electricity per day", "money"),
            ("electricity_per_month", "electricity per month", "money"),
            ("electricity_per_year", "electricity per year", "money"),
            ("local_monthly", "buying, per month (purchase spread over the years)", "money"),
            ("cloud_monthly", "renting the busy hours, per month", "money"),
            ("break_even_months", "buying pays for itself after", ""),
            ("local_per_million", "per million tokens, bought", "money"),
            ("cloud_per_million", "per million tokens, rented", "money"),
        ))
    svg = ('<svg width="420" height="180" role="img" aria-label="cumulative cost" data-months="">'
           '<line x1="60" y1="156" x2="410" y2="156" stroke="#888"/>'
           '<line x1="60" y1="10" x2="60" y2="156" stroke="#888"/>'
           '<text class="top" x="56" y="16" text-anchor="end" font-size="11"></text>'
           '<text x="56" y="158" text-anchor="end" font-size="11">0</text>'
           '<text class="end" x="410" y="172" text-anchor="end" font-size="11"></text>'
           '<polyline class="local" fill="none" stroke="#1f77b4" stroke-width="2"/>'
           '<polyline class="cloud" fill="none" stroke="#d62728" stroke-width="2" '
           'stroke-dasharray="5,3"/>'
           '<text x="70" y="172" font-size="11" fill="#1f77b4">bought</text>'
           '<text x="130" y="172" font-size="11" fill="#d62728">rented</text></svg>')
    script = _COST_JS % {"days_per_year": cost.DAYS_PER_YEAR, "uid": json.dumps(uid),
                         "format": _FORMAT_JS}
    return (f'{_STYLE}<div class="gpulab-calc" id="{html.escape(uid)}">'
            f"<div>{inputs}<label>currency <select data-in-currency>{currencies}</select>"
            "</label></div>"
            '<div data-out="error" data-value=""></div>'
            f"<table>{rows}</table>{svg}"
            '<div class="note">The arithmetic of gpulab.cost, run by your browser: electricity = '
            "(load W x busy hours + idle W x idle hours) / 1000 x price; renting is billed for "
            "the busy hours only; break-even = price / (rent per month - electricity per "
            "month). Every amount is in the one currency you enter; nothing is converted."
            f"</div></div><script>{script}</script>")
