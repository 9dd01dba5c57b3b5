"""The figures the pages paste with ``{fig}``: find every reference, check it, render it.

A page says ``{fig}`llama70_q4km_gb:.1f``` (a name of ``gpulab.course.figures.all_figures()``,
then the format spec after the last ":", which may be left out for an int or a str) and the
site build pastes the value (tools/sphinx_ext/figures.py, through ``resolve`` below). This tool
resolves the same references without building the site: it checks that each names a figure
and a spec that applies to it, and renders a page as the site will say it.

    python tools/checks/page_figures.py                 # check every page's references
    python tools/checks/page_figures.py --render PAGE   # the page with its values pasted in
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "book"
FIG_ROLE = re.compile(r"\{fig\}`(?P<body>[^`]*)`")
NAME = re.compile(r"[a-z][a-z0-9_]*")  # the names figures() gives: snake_case


@dataclass(frozen=True)
class FigRef:
    """One figure reference in a page."""

    page: str  # relative to the repository
    line: int
    name: str
    spec: str  # the format spec after the ":", or ""
    raw: str  # the role as written


class FigureError(ValueError):
    """A figure reference that the site build could not paste."""


@cache
def figures() -> dict:
    """Every chapter's figures, computed once per process (the pages paste thousands)."""
    from gpulab.course.figures import all_figures

    return all_figures()


def split(body: str) -> tuple[str, str]:
    """(name, spec) of a role's text: "llama70_q4km_gb:.1f" or "gpu_count"."""
    name, _, spec = body.partition(":")
    return name, spec


def resolve(name: str, spec: str, where: str = "") -> str:
    """The text the site pastes for a figure; FigureError says why it could not."""
    from gpulab.course.figure_formats import default_format
    from gpulab.course.figures import format_figure

    where = f"{where}: " if where else ""
    if not NAME.fullmatch(name):
        raise FigureError(f"{where}{name!r} is not a figure name (snake_case: llama70_q4km_gb)")
    values = figures()
    if name not in values:
        close = difflib.get_close_matches(name, values, n=3)
        raise FigureError(
            f"{where}no figure {name!r}"
            + (f"; did you mean {' or '.join(map(repr, close))}?" if close else "")
        )
    try:  # no spec: the one the figure's table gives (gpulab.course.figure_formats)
        return format_figure(values[name], spec or default_format(name))
    except (TypeError, ValueError) as exc:
        raise FigureError(
            f"{where}spec {spec!r} does not apply to {values[name]!r}: {exc}"
        ) from None


def parse(text: str, page: str) -> list[FigRef]:
    """Every figure reference of a page's Markdown, in order."""
    refs = []
    for number, line in enumerate(text.splitlines(), start=1):
        for m in FIG_ROLE.finditer(line):
            name, spec = split(m.group("body"))
            refs.append(FigRef(page, number, name, spec, m.group(0)))
    return refs


def resolve_ref(ref: FigRef) -> str:
    """The text the site pastes for one reference of a page."""
    return resolve(ref.name, ref.spec, f"{ref.page}:{ref.line}: {ref.raw}")


def pages(root: Path = PAGES) -> list[Path]:
    """Every Markdown page of the book."""
    return sorted(root.rglob("*.md"))


def render(path: Path) -> str:
    """The page's Markdown with every figure pasted in, as the site will say it."""
    page = path.resolve().relative_to(ROOT).as_posix()
    text = path.read_text(encoding="utf-8")
    refs = iter(parse(text, page))
    return FIG_ROLE.sub(lambda m: resolve_ref(next(refs)), text)


def check_all(root: Path = PAGES) -> tuple[int, list[str]]:
    """(references found, the problems) over every page."""
    found, problems = 0, []
    for path in pages(root):
        for ref in parse(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix()):
            found += 1
            try:
                resolve_ref(ref)
            except FigureError as exc:
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
    print(f"{found} figure references, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main())
