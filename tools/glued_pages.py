"""The figures the chapter pages paste with glue: find every reference, check it, render it.

A page says ``{glue:text}`../notebooks/02_will_it_fit.ipynb::llama70_q4km_gb:.1f``` and the site
build pastes the value the notebook glued. The values are those of the chapter's
``gpulab.course.figures_ch0N.figures()`` (the notebook's last cell glues them), so this tool
can resolve every reference without executing a notebook or building the site: it checks that
each names a chapter notebook, a key that notebook glues and a format spec that applies, and it
renders a page as the site will say it (what a test compares when a constant changes).

    python tools/glued_pages.py                 # check every page's references
    python tools/glued_pages.py --render PAGE   # the page with its values pasted in
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from ast import literal_eval
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "book"
# The pasting roles a page may use; only glue:text has a format spec and a path form that
# survives a translated build, so it is the one the course uses.
GLUE_ROLE = re.compile(r"\{glue(?::(?P<kind>\w*))?\}`(?P<body>[^`]*)`")


@dataclass(frozen=True)
class GlueRef:
    """One glue reference in a page."""

    page: str  # relative to the repository
    line: int
    notebook: str  # the notebook it pastes from, relative to the repository
    key: str
    spec: str  # the format spec after the last ":"
    raw: str  # the role as written


class GlueError(ValueError):
    """A glue reference that the site build could not paste."""


@cache
def _figures(notebook: str) -> dict:
    """A chapter's figures, computed once per process (a page pastes hundreds of them)."""
    from gpulab.course import figures

    return figures.chapter_figures(notebook)


@cache
def _notebook_keys(notebook: str) -> frozenset[str]:
    """Keys a notebook glues with its own `glue.glue("key", ...)` calls (measured values)."""
    cells = json.loads((ROOT / notebook).read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return frozenset(re.findall(r"glue\(\s*[\"'](\w+)[\"']", code))


def parse(text: str, page: str) -> list[GlueRef]:
    """Every glue reference of a page's Markdown, checked for form (not yet for its value)."""
    refs, page_dir = [], (ROOT / page).parent
    for number, line in enumerate(text.splitlines(), start=1):
        for m in GLUE_ROLE.finditer(line):
            where = f"{page}:{number}: {m.group(0)}"
            if m.group("kind") != "text":
                raise GlueError(f"{where}: use {{glue:text}} with a path::key:spec")
            body = m.group("body")
            if "::" not in body:
                raise GlueError(f"{where}: name the notebook, path::key:spec (a same-page glue "
                                "fails in a translated build)")
            path, rest = body.split("::", 1)
            if ":" not in rest:
                # myst-nb splits the last ":" off as the spec, so path::key alone would lose its key
                raise GlueError(f"{where}: add a format spec, such as :s or :.1f")
            key, spec = rest.rsplit(":", 1)
            notebook = os.path.relpath((page_dir / path).resolve(), ROOT)
            refs.append(GlueRef(page, number, Path(notebook).as_posix(), key, spec, m.group(0)))
    return refs


def format_like_myst_nb(value: object, spec: str) -> str:
    """The text myst-nb pastes for a glued value and a spec (its format_plain_text)."""
    text = repr(value)
    try:
        value = literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if spec == "":
        return str(value)
    kind = spec[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, spec)


def resolve(ref: GlueRef) -> str:
    """The text the site pastes for one reference; GlueError when it could not."""
    where = f"{ref.page}:{ref.line}: {ref.raw}"
    if not (ROOT / ref.notebook).exists():
        raise GlueError(f"{where}: no notebook {ref.notebook}")
    try:
        values = _figures(ref.notebook)
    except ValueError as exc:  # not a chapter notebook
        values = {}
        if ref.key not in _notebook_keys(ref.notebook):
            raise GlueError(f"{where}: {exc}") from None
    if ref.key not in values:
        if ref.key in _notebook_keys(ref.notebook):
            return f"<{ref.key}: measured when the notebook runs>"
        close = [k for k in values if k.split("_")[0] == ref.key.split("_")[0]][:5]
        raise GlueError(f"{where}: {ref.notebook} glues no key {ref.key!r}"
                        + (f"; close: {', '.join(close)}" if close else ""))
    try:
        return format_like_myst_nb(values[ref.key], ref.spec)
    except (TypeError, ValueError) as exc:
        raise GlueError(f"{where}: spec {ref.spec!r} does not apply to "
                        f"{values[ref.key]!r}: {exc}") from None


def pages(root: Path = PAGES) -> list[Path]:
    """Every Markdown page of the book."""
    return sorted(root.rglob("*.md"))


def render(path: Path) -> str:
    """The page's Markdown with every glued value pasted in, as the site will say it."""
    page = path.resolve().relative_to(ROOT).as_posix()
    text = path.read_text(encoding="utf-8")
    refs = iter(parse(text, page))
    return GLUE_ROLE.sub(lambda m: resolve(next(refs)), text)


def check_all(root: Path = PAGES) -> tuple[int, list[str]]:
    """(references found, the problems) over every page."""
    found, problems = 0, []
    for path in pages(root):
        page = path.relative_to(ROOT).as_posix()
        try:
            refs = parse(path.read_text(encoding="utf-8"), page)
        except GlueError as exc:
            problems.append(str(exc))
            continue
        for ref in refs:
            found += 1
            try:
                resolve(ref)
            except GlueError as exc:
                problems.append(str(exc))
    return found, problems


def main(argv: list[str] | None = None) -> int:
    """Check every page, or --render one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", metavar="PAGE", help="print one page with its values pasted")
    args = parser.parse_args(argv)
    if args.render:
        print(render(Path(args.render)))
        return 0
    found, problems = check_all()
    for problem in problems:
        print(problem)
    print(f"{found} glue references, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main())
