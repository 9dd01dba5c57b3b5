// Node tests of the static calculators' JavaScript (src/gpulab/ui/js/calculators.mjs), on the
// page's own code path: the HTML snippets gpulab renders, loaded into a DOM (jsdom) that looks
// like a page of the built site; start() loads Pyodide (from node_modules) and the archive of
// gpulab that the site carries, then the test types inputs and reads the outputs back.
// What they must show comes from tests/js/expected.py: gpulab in CPython, through
// tests/calculator_oracle.py, on the seeded inputs the browser test uses too.
//
//   node --test tests/js/          (make test runs it; PYTHON= names the interpreter)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { JSDOM } from "jsdom";
import { loadPyodide } from "pyodide";
import {
  OVER_HTTP, carriedResponse, decodeBase64, installCarriedFetch, start, staticBase,
} from "../../src/gpulab/ui/js/calculators.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const VENV_PYTHON = join(ROOT, ".venv", "bin", "python");
const PYTHON = process.env.PYTHON ?? (existsSync(VENV_PYTHON) ? VENV_PYTHON : "python3");
const SITE_PAGE = "http://127.0.0.1:8000/notebooks/06_choosing_hardware.html";
const MEMORY = "#gpulab-memory-calculator";
const COST = "#gpulab-cost-calculator";
const MEMORY_KEYS = ["total", "weights", "kv", "other", "tps_total", "tps_user"];
const GB_KEYS = new Set(["total", "weights", "kv", "other"]);
const NO_SPEED = "does not fit: no speed"; // gpulab.estimate.answers.NO_SPEED
const COST_KEYS = ["electricity_per_day", "electricity_per_month", "electricity_per_year",
  "local_monthly", "cloud_monthly", "local_per_million", "cloud_per_million"];

let fixtures;
let expected;
let archive;
let page; // the site-like document, started once
let loadMs;
const requested = [];

function fixture(name) {
  return readFileSync(join(fixtures, name));
}

function documentOf(html, { onSite }) {
  const root = onSite ? ' data-content_root="../"' : "";
  return new JSDOM(`<!DOCTYPE html><html${root}><head></head><body>${html}</body></html>`,
    { url: SITE_PAGE }).window.document;
}

// Pyodide from node_modules wherever the page asks for it; records what the page asked for.
async function importModule(url) {
  requested.push(url);
  return {
    loadPyodide: (options) => {
      requested.push(`indexURL ${options.indexURL}`);
      return loadPyodide();
    },
  };
}

before(async () => {
  fixtures = mkdtempSync(join(tmpdir(), "gpulab-js-"));
  const pythonPath = [join(ROOT, "src"), process.env.PYTHONPATH].filter(Boolean).join(delimiter);
  execFileSync(PYTHON, [join(ROOT, "tests", "js", "expected.py"), fixtures],
    { env: { ...process.env, PYTHONPATH: pythonPath }, stdio: ["ignore", "inherit", "inherit"] });
  expected = JSON.parse(fixture("expected.json"));
  archive = new Uint8Array(fixture("gpulab-py.zip"));
  globalThis.fetch = async (url) => {
    requested.push(url);
    return new Response(archive);
  };
  page = documentOf(fixture("memory.html") + fixture("cost.html"), { onSite: true });
  const t0 = performance.now();
  await start(page, importModule);
  loadMs = performance.now() - t0;
});

after(() => {
  rmSync(fixtures, { recursive: true, force: true });
});

function setInputs(doc, root, inputs, asText = []) {
  const el = (key) => doc.querySelector(`${root} [data-in="${key}"]`);
  for (const [key, value] of Object.entries(inputs)) {
    assert.ok(el(key), `${root} has no input ${key}`);
    if (asText.includes(key)) {
      el(key).type = "text"; // a number input keeps "abc" out; an old browser's text box does not
    }
    el(key).value = value;
    assert.equal(el(key).value, value, `${root} input ${key} cannot hold ${value}`);
  }
  // one event: the handler reads every input, as after a reader's last edit
  const last = Object.keys(inputs).at(-1);
  el(last).dispatchEvent(new doc.defaultView.Event("input"));
}

function out(doc, root, key) {
  const el = doc.querySelector(`${root} [data-out="${key}"]`);
  assert.ok(el, `${root} has no output ${key}`);
  return { value: el.getAttribute("data-value"), text: el.textContent };
}

function shownNumber(text) {
  const match = text.match(/-?[\d,]*\.?\d+(?:e[-+]?\d+)?/);
  assert.ok(match, `no number in ${JSON.stringify(text)}`);
  return Number(match[0].replaceAll(",", ""));
}

function close(got, want, rel, abs, what) {
  assert.ok(Math.abs(got - want) <= Math.max(rel * Math.abs(want), abs),
    `${what}: ${got} is not ${want}`);
}

test("the calculators load gpulab in Pyodide from the site's _static folder", (t) => {
  t.diagnostic(`Pyodide + gpulab archive + first outputs: ${Math.round(loadMs)} ms`);
  for (const root of [MEMORY, COST]) {
    const el = page.querySelector(root);
    assert.equal(el.getAttribute("data-state"), "ready", el.querySelector("[data-status]").textContent);
    for (const input of el.querySelectorAll("[data-in]")) {
      assert.equal(input.disabled, false, `${root} input still disabled`);
    }
  }
  const base = "http://127.0.0.1:8000/_static/";
  assert.equal(staticBase(page), base);
  assert.deepEqual(requested.slice(0, 2).sort(),
    [`${base}${expected.archive}`, `${base}${expected.pyodide_dir}pyodide.mjs`].sort());
  assert.ok(requested.includes(`indexURL ${base}${expected.pyodide_dir}`), requested.join(" "));
  assert.equal(requested.filter((r) => r.startsWith("indexURL")).length, 1, "Pyodide loaded twice");
});

test("the first outputs in Pyodide are the ones the snippet was rendered with", () => {
  for (const [root, html] of [[MEMORY, "memory.html"], [COST, "cost.html"]]) {
    const rendered = documentOf(fixture(html), { onSite: false });
    const keys = [...rendered.querySelectorAll(`${root} [data-out]`)].map((e) => e.getAttribute("data-out"));
    assert.ok(keys.length >= 8);
    for (const key of keys) {
      assert.deepEqual(out(page, root, key), out(rendered, root, key), `${root} ${key}`);
    }
  }
});

test("memory calculator: seeded inputs give what gpulab computes in CPython", () => {
  assert.equal(expected.memory.samples.length, 24);
  for (const { inputs, expected: want } of expected.memory.samples) {
    setInputs(page, MEMORY, inputs);
    const where = JSON.stringify(inputs);
    assert.equal(out(page, MEMORY, "error").text, "", where);
    for (const key of MEMORY_KEYS) {
      const { value, text } = out(page, MEMORY, key);
      if (want[key] === null) { // no speed for a model that does not fit: words, no number
        assert.equal(value, "", `${key} ${where}`);
        assert.equal(text, NO_SPEED, `${key} ${where}`);
        continue;
      }
      close(Number(value), want[key], 1e-9, 0, `${key} ${where}`);
      const scale = GB_KEYS.has(key) ? 1e9 : 1;
      close(shownNumber(text), want[key] / scale, 0.006, 0.006, `${key} shown as ${text} ${where}`);
    }
    const typical = page.querySelector(`${MEMORY} [data-out="tps_typical"]`);
    if (want.tps_typical === null) {
      assert.equal(typical.getAttribute("data-value"), "", where);
    } else {
      const [low, median, high] = want.tps_typical;
      close(Number(typical.getAttribute("data-value")), median, 1e-9, 0, `typical ${where}`);
      close(Number(typical.getAttribute("data-low")), low, 1e-9, 0, `typical low ${where}`);
      close(Number(typical.getAttribute("data-high")), high, 1e-9, 0, `typical high ${where}`);
    }
    assert.equal(out(page, MEMORY, "fits").value, want.fits ? "yes" : "no", where);
    const fitsOn = out(page, MEMORY, "fits_on").value;
    assert.deepEqual(fitsOn ? fitsOn.split("; ") : [], want.fits_on, where);
  }
});

test("cost calculator: seeded inputs give what gpulab.cost computes in CPython", () => {
  let never = 0;
  for (const { inputs, expected: want } of expected.cost.samples) {
    setInputs(page, COST, inputs);
    const where = JSON.stringify(inputs);
    assert.equal(out(page, COST, "error").value, "", where);
    for (const key of COST_KEYS) {
      const { value, text } = out(page, COST, key);
      close(Number(value), want[key], 1e-9, 1e-9, `${key} ${where}`);
      close(shownNumber(text), want[key], 0.006, 0.006, `${key} shown as ${text} ${where}`);
    }
    const { value, text } = out(page, COST, "break_even_months");
    if (want.break_even_months === null) {
      never += 1;
      assert.equal(value, "", where);
      assert.match(text, /never/, where);
    } else {
      close(Number(value), want.break_even_months, 1e-9, 0, `break-even ${where}`);
    }
    const chart = (key, name) => page.querySelector(`${COST} [data-out="${key}"]`).getAttribute(name);
    const months = Number(chart("chart", "data-months"));
    assert.ok(months >= 12 && months <= 120, where);
    for (const line of ["chart_local", "chart_cloud"]) {
      assert.equal(chart(line, "points").split(" ").length, months + 1, `${line} ${where}`);
    }
  }
  assert.ok(never > 0 && never < expected.cost.samples.length, "both outcomes covered");
});

test("bad input shows an error naming the field, and clears when corrected", () => {
  assert.ok(expected.bad.length >= 10);
  for (const { kind, inputs, field, label, text_box: textBox } of expected.bad) {
    const root = kind === "memory" ? MEMORY : COST;
    setInputs(page, root, inputs, textBox ? [field] : []);
    const message = out(page, root, "error").text;
    assert.ok(message.includes(label), `${field} (${label}): ${message}`);
    assert.equal(page.querySelector(root).getAttribute("data-error"), field, message);
    setInputs(page, root, expected[kind].defaults);
    if (textBox) {
      page.querySelector(`${root} [data-in="${field}"]`).type = "number";
    }
    assert.equal(out(page, root, "error").text, "");
    assert.equal(page.querySelector(root).hasAttribute("data-error"), false);
  }
});

test("changing one input changes the result", () => {
  setInputs(page, MEMORY, expected.memory.defaults);
  const before = Number(out(page, MEMORY, "total").value);
  setInputs(page, MEMORY, { users: "20" });
  assert.ok(Number(out(page, MEMORY, "total").value) > before);
  setInputs(page, COST, expected.cost.defaults);
  const slow = Number(out(page, COST, "break_even_months").value);
  setInputs(page, COST, { price_per_hour: "12" });
  assert.ok(Number(out(page, COST, "break_even_months").value) < slow);
  setInputs(page, COST, { currency: "USD" });
  const units = [...page.querySelectorAll(`${COST} [data-out="currency"]`)].map((e) => e.textContent);
  assert.ok(units.length >= 6, units.join());
  assert.deepEqual(units, Array(units.length).fill("USD"));
});

test("outside the site (Jupyter) the snippet keeps its outputs and loads nothing", async () => {
  const doc = documentOf(fixture("memory.html") + fixture("cost.html"), { onSite: false });
  const status = doc.querySelector(`${MEMORY} [data-status]`).textContent;
  const loads = [];
  assert.equal(staticBase(doc), null);
  await start(doc, async (url) => { loads.push(url); throw new Error("no site"); });
  assert.deepEqual(loads, []);
  for (const root of [MEMORY, COST]) {
    assert.equal(doc.querySelector(root).getAttribute("data-state"), "static");
    assert.ok([...doc.querySelectorAll(`${root} [data-in]`)].every((e) => e.disabled));
  }
  assert.match(status, /gpulab\.widgets\.memory_calculator\(\)/);
  assert.notEqual(out(doc, MEMORY, "total").value, "");
});

test("when gpulab cannot be loaded, the calculators say so and keep their outputs", async () => {
  const engine = globalThis.gpulabCalculatorEngine;
  delete globalThis.gpulabCalculatorEngine;
  try {
    const doc = documentOf(fixture("cost.html"), { onSite: true });
    await start(doc, async () => { throw new Error("pyodide.mjs: HTTP 404"); });
    const root = doc.querySelector(COST);
    assert.equal(root.getAttribute("data-state"), "failed");
    assert.match(root.querySelector("[data-status]").textContent, /could not start.*HTTP 404/);
    assert.notEqual(out(doc, COST, "local_monthly").value, "");
  } finally {
    globalThis.gpulabCalculatorEngine = engine;
  }
});

// A page opened from file:// gets its files from classic scripts that carry them
// (gpulab.ui.calculators.payload_script); here the archive's carrier, written by Python, runs
// in a scope of its own, and fetch() must then give back the archive's bytes as Python wrote them.
test("from file://, fetch() answers a carried file with its bytes, once, and passes the rest on", async () => {
  const carrierURL = "file:///site/_static/gpulab/gpulab-py.zip.js";
  const passed = [];
  const scope = {
    Request,
    fetch: async (url) => {
      passed.push(String(url));
      throw new TypeError("Failed to fetch");
    },
  };
  const run = new Function("globalThis", "document", fixture("gpulab-py.zip.js").toString("ascii"));
  run(scope, { currentScript: { src: carrierURL } });
  const url = carrierURL.slice(0, -".js".length);
  assert.deepEqual(Object.keys(scope.gpulabFiles), [url]);
  installCarriedFetch(scope, "file:///site/notebooks/06_choosing_hardware.html");
  const response = await scope.fetch("../_static/gpulab/gpulab-py.zip");
  assert.deepEqual(new Uint8Array(await response.arrayBuffer()), archive);
  await assert.rejects(scope.fetch(new URL(url)), /Failed to fetch/); // given once, then dropped
  await assert.rejects(scope.fetch("file:///site/_static/other.zip"), /Failed to fetch/);
  assert.deepEqual(passed, [url, "file:///site/_static/other.zip"]);
});

test("a carried wasm file is typed application/wasm, which instantiateStreaming requires", async () => {
  // "AGFzbQEAAAA=" is the 8-byte header of an empty wasm module; gzip it as Python does
  const gz = execFileSync(PYTHON, ["-c", "import base64,gzip,sys;" +
    "sys.stdout.write(base64.b64encode(gzip.compress(base64.b64decode('AGFzbQEAAAA='),mtime=0)).decode())"]);
  const response = carriedResponse("file:///s/pyodide.asm.wasm", gz.toString());
  assert.equal(response.headers.get("Content-Type"), "application/wasm");
  const module = await WebAssembly.compileStreaming(response);
  assert.ok(module instanceof WebAssembly.Module);
  assert.deepEqual([...decodeBase64("AGFzbQEAAAA=")], [0, 97, 115, 109, 1, 0, 0, 0]);
  assert.match(OVER_HTTP, /make serve/);
});
