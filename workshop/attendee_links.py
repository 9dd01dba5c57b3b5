"""The attendee page's table of notebooks with their Colab links, generated so it cannot drift.

``python workshop/attendee_links.py`` checks that ``book/workshop/attendee.md`` holds the table
for every notebook the pipeline discovers; ``--fix`` rewrites it between its markers. The Colab
addresses come from ``tools/nbcheck.colab_url`` (and so from ``_config.yml``), like the README's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make `tools` importable
    sys.path.insert(0, str(ROOT))

from tools.nbcheck import colab_links, load_config, title_of  # noqa: E402
from tools.pipeline import discover  # noqa: E402

PAGE = ROOT / "book" / "workshop" / "attendee.md"
START = "<!-- attendee-links:start -->"
END = "<!-- attendee-links:end -->"


def links_table(config: dict, root: Path = ROOT) -> str:
    """One row per discovered notebook: its page on the site and its Colab link(s)."""
    rows = ["| notebook | read it | open in Colab |", "|---|---|---|"]
    for path in discover(root):
        rel = path.relative_to(root)
        title = title_of(json.loads(path.read_text(encoding="utf-8")))
        page = f"{{doc}}`{title} </{rel.with_suffix('').as_posix()}>`"
        rows.append(f"| `{rel.as_posix()}` | {page} | {colab_links(config, path, root)} |")
    return "\n".join(rows)


def problems(page: Path = PAGE, root: Path = ROOT) -> list[str]:
    """What is wrong with the page's table: missing markers, or out of date."""
    text = page.read_text(encoding="utf-8")
    if START not in text or END not in text:
        return [f"{page.relative_to(root)} lacks the {START} ... {END} markers"]
    current = text.split(START)[1].split(END)[0].strip()
    if current != links_table(load_config(root), root):
        return [f"{page.relative_to(root)}: the table of Colab links is out of date "
                f"(run `python workshop/attendee_links.py --fix`)"]
    return []


def fix(page: Path = PAGE, root: Path = ROOT) -> None:
    """Rewrite the table between the page's markers."""
    text = page.read_text(encoding="utf-8")
    head, rest = text.split(START)
    _, tail = rest.split(END)
    table = links_table(load_config(root), root)
    page.write_text(f"{head}{START}\n{table}\n{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Check the attendee page's table; with --fix, regenerate it first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fix", action="store_true", help="rewrite the table")
    args = parser.parse_args(argv)
    if args.fix:
        fix()
    found = problems()
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
