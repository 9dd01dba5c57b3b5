"""The generated tables of notebooks with their Colab links: the README's and the attendee page's.

Both are written between markers and checked by ``tools/checks/nbcheck.py``; ``--fix`` rewrites
them. The Colab addresses come from ``_config.yml`` (``tools/notebook_meta.colab_url``), so a
changed repository URL changes every link at once.
"""

from __future__ import annotations

import json
from pathlib import Path

from tools.authoring.learner_generator import learner_path
from tools.execution.runs import discover
from tools.notebook_meta import ROOT, colab_url, load_config, title_of

README_START = "<!-- notebooks:start -->"
README_END = "<!-- notebooks:end -->"


def colab_links(config: dict, path: Path, root: Path = ROOT) -> str:
    """Markdown Colab link(s) for a notebook: exercise and solution for a lab, else one link."""
    rel = path.relative_to(root).as_posix()
    if path.parent.name == "labs":
        learner = learner_path(path).relative_to(root).as_posix()
        return f"[exercise]({colab_url(config, learner)}) · [solution]({colab_url(config, rel)})"
    return f"[open]({colab_url(config, rel)})"


def readme_table(config: dict, root: Path = ROOT) -> str:
    """The README's table of notebooks, with their Colab links."""
    rows = ["| notebook | what it is | open in Colab |", "|---|---|---|"]
    for path in discover(root):
        rel = path.relative_to(root).as_posix()
        title = title_of(json.loads(path.read_text(encoding="utf-8")))
        rows.append(f"| [`{rel}`]({rel}) | {title} | {colab_links(config, path, root)} |")
    return "\n".join(rows)


def readme_problems(config: dict, root: Path = ROOT) -> list[str]:
    """Whether the README's notebook table is the generated one."""
    text = (root / "README.md").read_text(encoding="utf-8")
    if README_START not in text or README_END not in text:
        return [f"README.md lacks the {README_START} ... {README_END} markers"]
    current = text.split(README_START)[1].split(README_END)[0].strip()
    if current == readme_table(config, root):
        return []
    return ["README.md's notebook table is out of date"]


def fix_readme(config: dict, root: Path = ROOT) -> None:
    """Rewrite the README's notebook table between its markers."""
    path = root / "README.md"
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(README_START)
    _, tail = rest.split(README_END)
    path.write_text(
        f"{head}{README_START}\n{readme_table(config, root)}\n{README_END}{tail}", encoding="utf-8"
    )


# ---------------------------------------------------------------- the workshop's attendee page

PAGE = ROOT / "book" / "workshop" / "attendee.md"
START = "<!-- attendee-links:start -->"
END = "<!-- attendee-links:end -->"


def attendee_table(config: dict, root: Path = ROOT) -> str:
    """One row per discovered notebook: its page on the site and its Colab link(s)."""
    rows = ["| notebook | read it | open in Colab |", "|---|---|---|"]
    for path in discover(root):
        rel = path.relative_to(root)
        title = title_of(json.loads(path.read_text(encoding="utf-8")))
        page = f"{{doc}}`{title} </{rel.with_suffix('').as_posix()}>`"
        rows.append(f"| `{rel.as_posix()}` | {page} | {colab_links(config, path, root)} |")
    return "\n".join(rows)


def attendee_problems(page: Path = PAGE, root: Path = ROOT) -> list[str]:
    """What is wrong with the page's table: missing markers, or out of date."""
    text = page.read_text(encoding="utf-8")
    if START not in text or END not in text:
        return [f"{page.relative_to(root)} lacks the {START} ... {END} markers"]
    current = text.split(START)[1].split(END)[0].strip()
    if current != attendee_table(load_config(root), root):
        return [
            f"{page.relative_to(root)}: the table of Colab links is out of date "
            f"(run `python workshop/attendee_links.py --fix`)"
        ]
    return []


def fix_attendee(page: Path = PAGE, root: Path = ROOT) -> None:
    """Rewrite the table between the page's markers."""
    text = page.read_text(encoding="utf-8")
    head, rest = text.split(START)
    _, tail = rest.split(END)
    table = attendee_table(load_config(root), root)
    page.write_text(f"{head}{START}\n{table}\n{END}{tail}", encoding="utf-8")
