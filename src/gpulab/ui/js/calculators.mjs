// Chapter 6's static calculators: the glue between the page and gpulab running in Pyodide.
//
// gpulab.ui.calculators puts this file, as it is, into each calculator's HTML snippet, as
// an inline module script. The computation is the library's own Python: the page loads
// Pyodide and an archive of gpulab's pure layers (core, reference, estimate) from the site's
// _static/ folder, then for every change sends the raw text of the inputs to
// gpulab.estimate.calculator.page_outputs_json and writes back what it returns. Nothing is
// computed here. Where there is no built site (Jupyter), the snippet keeps the outputs it was
// rendered with and says where the live calculator is.

// Where the archive is unpacked in Pyodide's file system; put first on sys.path.
export const LIB_DIR = "/home/pyodide/gpulab-lib";
export const ENTRY_MODULE = "gpulab.estimate.calculator";

/**
 * Start Pyodide, unpack the gpulab archive into its file system and return
 * compute(kind, inputs) -> {error, field, outputs}, which calls gpulab.
 * loadPyodide and archive (an ArrayBuffer or Uint8Array of the zip) are passed in, so the
 * page (files fetched from _static/) and the node tests (node_modules) run this same code.
 */
export async function loadEngine({ loadPyodide, indexURL, archive }) {
  const pyodide = await loadPyodide(indexURL === undefined ? {} : { indexURL });
  pyodide.unpackArchive(archive, "zip", { extractDir: LIB_DIR });
  pyodide.pyimport("sys").path.insert(0, LIB_DIR);
  const entry = pyodide.pyimport(ENTRY_MODULE).page_outputs_json;
  return (kind, inputs) => JSON.parse(entry(kind, JSON.stringify(inputs)));
}

/** The text of every input of a calculator, by its data-in name. */
export function readInputs(root) {
  const inputs = {};
  for (const el of root.querySelectorAll("[data-in]")) {
    inputs[el.getAttribute("data-in")] = el.value;
  }
  return inputs;
}

/** Write gpulab's result into the elements named by data-out: value, text, attributes. */
export function writeOutputs(root, result) {
  for (const [key, out] of Object.entries(result.outputs)) {
    for (const el of root.querySelectorAll(`[data-out="${key}"]`)) {
      if ("value" in out) {
        el.setAttribute("data-value", out.value === null ? "" : String(out.value));
      }
      if ("text" in out) {
        el.textContent = out.text;
      }
      for (const [name, value] of Object.entries(out.attrs ?? {})) {
        el.setAttribute(name, value);
      }
    }
  }
  if (result.error) {
    root.setAttribute("data-error", result.field ?? "");
  } else {
    root.removeAttribute("data-error");
  }
}

/** Show a calculator's state (static, loading, ready, failed) and its status line. */
export function setState(root, state, message) {
  root.setAttribute("data-state", state);
  const status = root.querySelector("[data-status]");
  if (status !== null) {
    status.textContent = message;
  }
}

/** Recompute on every edit of an input, and once now; then the inputs are live. */
export function attach(root, compute) {
  const kind = root.getAttribute("data-calculator");
  const update = () => {
    try {
      writeOutputs(root, compute(kind, readInputs(root)));
    } catch (err) {
      setState(root, "failed", `gpulab failed on these inputs: ${err.message}`);
      throw err;
    }
  };
  for (const el of root.querySelectorAll("[data-in]")) {
    el.addEventListener("input", update);
    el.addEventListener("change", update);
    el.disabled = false;
  }
  update();
}

/**
 * The site's _static/ URL, from the content root Sphinx writes on every page; null where
 * the snippet is not on the built site (Jupyter, a plain HTML file).
 */
export function staticBase(doc) {
  const root = doc.documentElement.getAttribute("data-content_root");
  return root === null ? null : new URL(`${root}_static/`, doc.baseURI).href;
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) {
    throw new Error(`${url}: HTTP ${response.status}`);
  }
  return response.arrayBuffer();
}

/**
 * Start every calculator of the page that has not started: load gpulab once for all of them
 * (the promise is shared through globalThis, as each snippet runs this file), then attach.
 */
export async function start(doc, importModule = (url) => import(url)) {
  const roots = [...doc.querySelectorAll('.gpulab-calc[data-state="static"]')];
  const base = staticBase(doc);
  if (base === null || roots.length === 0) {
    return roots.length;
  }
  for (const root of roots) {
    setState(root, "loading", "Loading gpulab into your browser (Pyodide, about 11 MB)...");
  }
  const { pyodide, archive } = roots[0].dataset;
  globalThis.gpulabCalculatorEngine ??= Promise.all([
    importModule(`${base}${pyodide}pyodide.mjs`),
    fetchBytes(`${base}${archive}`),
  ]).then(([module, bytes]) => loadEngine({
    loadPyodide: module.loadPyodide, indexURL: `${base}${pyodide}`, archive: bytes,
  }));
  let compute;
  try {
    compute = await globalThis.gpulabCalculatorEngine;
  } catch (err) {
    for (const root of roots) {
      setState(root, "failed", `The calculator could not start (${err.message}); it shows ` +
        "the values of its defaults.");
    }
    return 0;
  }
  for (const root of roots) {
    attach(root, compute);
    root.setAttribute("data-ready-ms", String(Math.round(performance.now())));
    setState(root, "ready", "");
  }
  return roots.length;
}

if (typeof document !== "undefined") {
  start(document);
}
