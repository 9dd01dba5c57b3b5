"""What the notebooks' tools share: the book's configuration, Colab addresses, titles.

Imported by ``tools/checks/nbcheck.py`` (the format check),
``tools/authoring/link_tables.py`` (the generated tables of notebooks) and, through the latter,
``workshop/attendee_links.py``; it imports none of them, so the tools import one way.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def load_config(root: Path = ROOT) -> dict:
    """The book's `_config.yml`."""
    return yaml.safe_load((root / "_config.yml").read_text())


def colab_url(config: dict, rel_path: str) -> str:
    """The "Open in Colab" address of a notebook in the configured repository."""
    repo = config["repository"]
    owner_repo = repo["url"].rstrip("/").removeprefix("https://github.com/")
    branch = repo.get("branch", "main")
    return f"{config['launch_buttons']['colab_url']}/github/{owner_repo}/blob/{branch}/{rel_path}"


def cell_source(cell: dict) -> str:
    """A cell's source as one string (nbformat allows a string or a list of lines)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def title_of(nb: dict) -> str:
    """The notebook's title: the first `# ` line of its first cell."""
    first = cell_source(nb["cells"][0]) if nb.get("cells") else ""
    for line in first.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""
