// Chapter 6's static calculators: the glue between the page and gpulab running in Pyodide.
//
// gpulab.ui.calculators puts this file, as it is, into each calculator's HTML snippet, as
// an inline module script. The computation is the library's own Python: the page loads
// Pyodide and an archive of gpulab's pure layers (core, reference, estimate) from the site's
// _static/ folder, then for every change sends the raw text of the inputs to
// gpulab.estimate.calculator.page_outputs_json and writes back what it returns. Nothing is
// computed here. Where there is no built site (Jupyter), the snippet keeps the outputs it was
// rendered with and says where the live calculator is.
//
// Opened from file:// (the path `make book` prints), the browser refuses to import a module or
// to fetch() a file. There the script loads Pyodide's classic build with <script> tags, and the
// files Pyodide and the script fetch from the classic scripts that carry them (gzip, base64;
// gpulab.ui.calculators.payload_script), and answers those fetch() calls from them.

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

// Where the carrying scripts leave their files, by the URL of the file each carries.
const CARRIED = "gpulabFiles";
const CONTENT_TYPES = { ".wasm": "application/wasm", ".json": "application/json" };
// Said when a page opened from file:// cannot start: the way that always works.
export const OVER_HTTP = "Open this page over http: run `make serve` in the course's folder " +
  "and open the address it prints.";

/** Bytes from base64 text (Uint8Array.fromBase64 where the browser has it). */
export function decodeBase64(text) {
  if (typeof Uint8Array.fromBase64 === "function") {
    return Uint8Array.fromBase64(text);
  }
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) {
    bytes[i] = binary.charCodeAt(i);
  }
  return bytes;
}

/** A Response holding one carried file: its base64 of gzip, inflated as it is read. */
export function carriedResponse(url, text) {
  const body = new Blob([decodeBase64(text)]).stream()
    .pipeThrough(new DecompressionStream("gzip"));
  const type = CONTENT_TYPES[url.slice(url.lastIndexOf("."))] ?? "application/octet-stream";
  // instantiateStreaming compiles the wasm only from a response typed application/wasm
  return new Response(body, { headers: { "Content-Type": type } });
}

/**
 * Answer fetch() of a carried file from its payload (once: the text is dropped, as Pyodide
 * fetches each file once and the wasm's is 4 MB); any other URL goes to the real fetch.
 */
export function installCarriedFetch(scope, baseURI) {
  const realFetch = scope.fetch;
  scope.fetch = (input, init) => {
    const url = new URL(input instanceof scope.Request ? input.url : String(input), baseURI).href;
    const files = scope[CARRIED] ?? {};
    if (!(url in files)) {
      return realFetch.call(scope, input, init);
    }
    const text = files[url];
    delete files[url];
    return Promise.resolve(carriedResponse(url, text));
  };
}

/** Run a classic script (which a file:// page may still do); resolves once it has run. */
function loadClassicScript(doc, url) {
  return new Promise((resolve, reject) => {
    const script = doc.createElement("script");
    script.src = url;
    script.onload = () => resolve();
    script.onerror = () => reject(new Error(`${url} did not load`));
    doc.head.append(script);
  });
}

/**
 * On a page opened from file://: Pyodide's classic build and the carried files, with fetch()
 * answered from them; returns what importing pyodide.mjs returns over http.
 */
async function loadFromFiles(doc, base, root) {
  const { classic, carried } = root.dataset;
  const scripts = [...classic.split(" "), ...carried.split(" ").map((name) => `${name}.js`)];
  // pyodide.asm.js among them: Pyodide then skips its own import() of it
  await Promise.all(scripts.map((name) => loadClassicScript(doc, `${base}${name}`)));
  installCarriedFetch(doc.defaultView, doc.baseURI);
  return { loadPyodide: doc.defaultView.loadPyodide };
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
  const fromFile = doc.location?.protocol === "file:";
  const archiveBytes = () => fetchBytes(`${base}${archive}`);
  // from a file, the archive is fetched once fetch() answers from the carried files
  const load = () => (fromFile
    ? loadFromFiles(doc, base, roots[0]).then((module) => Promise.all([module, archiveBytes()]))
    : Promise.all([importModule(`${base}${pyodide}pyodide.mjs`), archiveBytes()]));
  globalThis.gpulabCalculatorEngine ??= load().then(([module, bytes]) => loadEngine({
    loadPyodide: module.loadPyodide, indexURL: `${base}${pyodide}`, archive: bytes,
  }));
  let compute;
  try {
    compute = await globalThis.gpulabCalculatorEngine;
  } catch (err) {
    for (const root of roots) {
      setState(root, "failed", `The calculator could not start (${err.message}); it shows ` +
        `the values of its defaults.${fromFile ? ` ${OVER_HTTP}` : ""}`);
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
