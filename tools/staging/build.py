"""Building the site with Jupyter Book from staged trees: the catalogues, then every edition.

Warnings are errors, every build starts from a clean folder, Sphinx's whole output goes to the
run's log and only its warnings and errors to the terminal (``step.run_logged``).
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from gpulab.reference import languages
from tools import editions
from tools.execution import step
from tools.execution.runs import (
    RunConfig,
    execute_hint,
    html_dir,
    passed_notebooks,
    serve_hint,
    shown_path,
    site_log,
)
from tools.staging.stage import stage_site


def jupyter_book_command(src: Path, out: Path, *builder: str) -> list[str]:
    """The Jupyter Book build of a staged tree into `out`, warnings as errors."""
    cmd = [
        sys.executable,
        "-m",
        "jupyter_book",
        "build",
        str(src),
        "--path-output",
        str(out),
        "--builder",
        *builder,
        "-W",
        "-n",
        "--keep-going",
    ]
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    return [jb, *cmd[3:]] if jb else cmd


def _jupyter_book(src: Path, out: Path, *builder: str, log: Path, what: str) -> None:
    """Run Jupyter Book on a staged tree into `out`, warnings as errors, its output into `log`;
    a warning or an error fails the build, and is shown on the terminal."""
    sys.stdout.flush()
    code, shown = step.run_logged(jupyter_book_command(src, out, *builder), log)
    if code:
        why = (
            "the warnings and errors above fail it (warnings are errors here)"
            if shown
            else "Sphinx printed no warning"
        )
        raise SystemExit(
            f"FAILED: {what} (exit status {code}): {why}; Sphinx's whole output "
            f"is in {shown_path(log)}"
        )


def catalogue_dir(run: RunConfig) -> Path:
    """Where a run's message templates (.pot, one per page) land."""
    return run.run_dir / "gettext" / "_build" / "gettext"


def build_catalogues(run: RunConfig) -> Path:
    """Extract the English pages' messages into .pot files, the executed outputs left out."""
    from tools import i18n

    started = time.perf_counter()
    src = stage_site(run, "gettext")
    shutil.rmtree(run.run_dir / "gettext", ignore_errors=True)
    _jupyter_book(
        src,
        run.run_dir / "gettext",
        "custom",
        "--custom-builder",
        "gettext",
        log=site_log(run),
        what="the message catalogues",
    )
    dropped = i18n.drop_untranslatable(catalogue_dir(run))
    print(
        f"    the message catalogues: {shown_path(catalogue_dir(run))} in "
        f"{time.perf_counter() - started:.0f} s ({dropped} messages with no words left out)",
        flush=True,
    )
    return catalogue_dir(run)


def check_executed(run: RunConfig) -> None:
    """Stop with what to run when the run has no executed notebooks to build a site from."""
    if not passed_notebooks(run):
        raise SystemExit(
            f"no executed notebooks in {shown_path(run.run_dir / 'executed')} "
            f"({run.mode} mode, kernel {run.kernel}) to build the site from: "
            f"{execute_hint(run)}"
        )


def build_site(run: RunConfig) -> Path:
    """Build both editions from the executed copies, warnings as errors, from a clean folder:
    the English site in `_build/html`, each other one in its registry folder under it."""
    check_executed(run)
    log = site_log(run)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    print(
        f"==> building the site from the executed notebooks in "
        f"{shown_path(run.run_dir / 'executed')} (Sphinx's output: {shown_path(log)}; its "
        "warnings and errors show here) ...",
        flush=True,
    )
    begun = time.perf_counter()
    build_catalogues(run)
    started = time.perf_counter()
    src = stage_site(run)
    shutil.rmtree(run.run_dir / "_build", ignore_errors=True)
    _jupyter_book(src, run.run_dir, "html", log=log, what="the English site")
    print(f"    the English site in {time.perf_counter() - started:.0f} s", flush=True)
    for edition in editions.LANGUAGES[1:]:
        started = time.perf_counter()
        out = run.run_dir / editions.source_folder(edition).replace("site_src", "build")
        shutil.rmtree(out, ignore_errors=True)
        _jupyter_book(stage_site(run, edition), out, "html", log=log, what=f"the {edition} site")
        folder = html_dir(run) / languages.get(edition).folder
        shutil.move(str(out / "_build" / "html"), str(folder))
        shutil.rmtree(out)
        with log.open("a", encoding="utf-8") as f:  # Sphinx's last line named the folder `out`
            f.write(f"\nmoved {out / '_build' / 'html'} to {folder}\n")
        print(f"    the {edition} site in {time.perf_counter() - started:.0f} s", flush=True)
    index = html_dir(run) / "index.html"
    print(
        f"The site is built in {(time.perf_counter() - begun) / 60:.1f} min: {shown_path(index)} "
        f"({editions.other_editions(lambda f: shown_path(html_dir(run) / f) + '/')}); "
        f"to read it, run {serve_hint(run)}",
        flush=True,
    )
    return index
