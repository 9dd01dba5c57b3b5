"""Staging a book source tree for one edition, from a run's executed notebooks.

The book's pages and ``_config.yml`` with the run's substitutions (machine times, backend
statuses), each executed notebook as the site shows it (``site_copy``), and the site's own
static files: the course's stylesheet and scripts, the widget manager, MathJax, the CJK font
and Pyodide, all copied from node_modules so that no page loads anything from a CDN.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tools import editions
from tools.execution.report import machine_description, machine_times, time_key
from tools.execution.runs import (
    LEARNER_DIR,
    ROOT,
    RunConfig,
    discover,
    execute_hint,
    executed_path,
    passed_notebooks,
    report_path,
    shown_path,
)
from tools.sphinx_ext import site
from tools.staging import pictures
from tools.staging.site_copy import (
    add_exercise_launch,
    add_image_alt_text,
    add_machine_time,
    keep_site_representations,
    show_run_parameters,
)

WIDGET_ASSETS = ROOT / "node_modules" / "@jupyter-widgets" / "html-manager" / "dist"
REQUIRE_JS = ROOT / "node_modules" / "requirejs" / "require.js"
MATHJAX = ROOT / "node_modules" / "mathjax" / "es5"
# Pyodide runs chapter 6's static calculators (gpulab.calculators); these are the files its
# loader fetches (the .map files are for debuggers only).
PYODIDE = ROOT / "node_modules" / "pyodide"
# pyodide.js, the classic build, serves pages opened from file:// (gpulab.ui.calculators)
PYODIDE_FILES = (
    "pyodide.mjs",
    "pyodide.js",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)
# The Chinese text of both editions renders in Noto Sans SC, which the site carries (OFL-1.1):
# its 100 slices by Unicode range, of which a page loads only those its characters need.
CJK_FONT = ROOT / "node_modules" / "@fontsource-variable" / "noto-sans-sc"
CJK_FONT_DIR = "noto-sans-sc"  # in the site's static folder; tools/sphinx_ext/site.py links its CSS
SITE_STATIC = "_site_static"  # not the root _static/: JB1 would load every .js there
COURSE_ASSETS = ROOT / "tools" / "staging" / "static"  # the course's own stylesheet and scripts


def stage_site(run: RunConfig, edition: str = "en") -> Path:
    """Lay out a book source tree whose notebooks are the executed copies, for one edition:
    a language's code (editions.LANGUAGES), or "gettext" (the English text the message
    catalogues are made from)."""
    import yaml

    from tools.authoring import exercises

    lang = "en" if edition == "gettext" else edition
    src = run.run_dir / editions.source_folder(edition)
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    shutil.copytree(ROOT / "book", src / "book")
    shutil.copy(ROOT / "_toc.yml", src / "_toc.yml")
    # the pages' pictures, drawn from gpulab's data: /_pictures/<name>.svg in every edition
    pictures.render(src / pictures.FOLDER)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config.setdefault("execute", {})["execute_notebooks"] = "off"  # executed once, by papermill
    # Local Sphinx extensions live in the repository, not in the staged copy: absolute paths.
    extensions = config.get("sphinx", {}).get("local_extensions") or {}
    for name, path in extensions.items():
        extensions[name] = str(ROOT / path)
    # each notebook's machine time from this run's timing report, for the pages that quote it
    times = machine_times(run)
    if times:
        machine = json.loads(report_path(run).read_text()).get("machine_text", {}).get(
            lang
        ) or machine_description(run, lang)
    else:
        machine = editions.text(lang, "unknown_machine")
    subs = config.setdefault("parse", {}).setdefault("myst_substitutions", {})
    subs.update({time_key(nb): t for nb, t in times.items()})
    subs["time_machine"] = machine
    subs.update(backend_statuses(lang))
    editions.configure(config, edition, src)
    (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    missing = []
    passed = passed_notebooks(run)
    for notebook in discover():
        executed = executed_path(notebook, run, editions.outputs_language(notebook, lang))
        if not executed.exists() or str(notebook.relative_to(ROOT)) not in passed:
            missing.append(str(notebook.relative_to(ROOT)))
            continue
        target = src / notebook.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        # the notebooks' tagged exercise cells become sphinx-exercise blocks on the site only
        site_copy = exercises.to_sphinx_exercise(json.loads(executed.read_text(encoding="utf-8")))
        show_run_parameters(site_copy)
        add_image_alt_text(site_copy)
        keep_site_representations(site_copy)
        rel = str(notebook.relative_to(ROOT))
        # the texts the pipeline adds are its own, in each language: none goes into a catalogue
        if rel in times and edition != "gettext":
            add_machine_time(site_copy, times[rel], machine, run.mode, lang)
        if notebook.parent.name == "labs":  # the exercise first: a learner starts there
            if edition != "gettext":
                add_exercise_launch(site_copy, notebook, config, lang)
            learner = src / "labs" / LEARNER_DIR / notebook.name
            learner.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / "labs" / LEARNER_DIR / notebook.name, learner)
        target.write_text(json.dumps(site_copy, ensure_ascii=False), encoding="utf-8")
    if missing:
        raise SystemExit(
            f"not executed successfully in {shown_path(report_path(run))}: "
            + ", ".join(missing)
            + f"; {execute_hint(run)}"
        )
    _copy_site_assets(src / SITE_STATIC)
    return src


def backend_statuses(lang: str = "en") -> dict[str, str]:
    """Whether the course has run on each GPU backend, from the stored measured figures: the
    MyST substitutions `backend_status_cuda`, `_rocm` and `_mps` (gpulab.measured)."""
    from gpulab.reference import measured

    return {
        f"backend_status_{kind}": measured.backend_status(kind, lang=lang)
        for kind in measured.BACKENDS
    }


def _copy_site_assets(static: Path) -> None:
    """Copy the course's stylesheet and scripts, require.js, the widget manager with its fonts,
    MathJax, the CJK font and Pyodide into the site's static folder, and write the archive of
    gpulab that the static calculators run in Pyodide, with the carriers file:// pages load.

    The site carries its own JavaScript so that it renders offline and sends no request to a
    third-party CDN (docs/design.md); the npm packages are pinned in package-lock.json.
    """
    from gpulab.ui import calculators  # the archive is of the gpulab this interpreter imports

    needed = [
        WIDGET_ASSETS / "embed-amd.js",
        REQUIRE_JS,
        MATHJAX / "tex-mml-chtml.js",
        CJK_FONT / "index.css",
        *(PYODIDE / name for name in PYODIDE_FILES),
    ]
    if not all(p.exists() for p in needed):
        raise SystemExit("site JavaScript missing: run `npm ci` (make does) first")
    static.mkdir(parents=True, exist_ok=True)
    for asset in COURSE_ASSETS.iterdir():
        shutil.copy(asset, static / asset.name)
    (static / site.LANGUAGE_STYLESHEET).write_text(editions.language_css(), encoding="utf-8")
    shutil.copy(REQUIRE_JS, static / "require.js")
    for asset in WIDGET_ASSETS.iterdir():
        # embed-amd.js loads its chunks and icon fonts from its own folder
        if asset.suffix in (".js", ".woff", ".woff2", ".ttf", ".eot", ".svg") and (
            asset.name not in ("embed.js", "libembed-amd.js")
        ):
            shutil.copy(asset, static / asset.name)
    # the CJK font's stylesheet loads its slices from files/ beside it; its licence goes along
    font = static / CJK_FONT_DIR
    font.mkdir()
    for name in ("index.css", "LICENSE"):
        shutil.copy(CJK_FONT / name, font / name)
    shutil.copytree(CJK_FONT / "files", font / "files")
    # MathJax loads its fonts relative to its own script
    mathjax = static / "mathjax"
    mathjax.mkdir()
    shutil.copy(MATHJAX / "tex-mml-chtml.js", mathjax / "tex-mml-chtml.js")
    shutil.copytree(MATHJAX / "output" / "chtml" / "fonts", mathjax / "output" / "chtml" / "fonts")
    # Pyodide and gpulab's pure layers, where the calculators' snippets say they are
    pyodide = static / calculators.PYODIDE_DIR
    pyodide.mkdir(parents=True)
    for name in PYODIDE_FILES:
        shutil.copy(PYODIDE / name, pyodide / name)
    archive = static / calculators.ARCHIVE
    archive.parent.mkdir(parents=True, exist_ok=True)
    archive.write_bytes(calculators.python_archive())
    # the same files again as classic scripts, for pages opened from file://
    for name in calculators.CARRIED_FILES:
        carried = static / name
        carrier = carried.with_name(carried.name + calculators.PAYLOAD_SUFFIX)
        carrier.write_text(
            calculators.payload_script(carried.name, carried.read_bytes()), encoding="ascii"
        )
