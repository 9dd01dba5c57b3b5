"""Rename figures where the pages paste them, in the pages and in their translations at once.

A figure's name appears in a page's ``{fig}`` roles and, as written there, in the msgid and the
msgstr of every catalogue entry that holds it; renaming it in the page alone would leave the
translation behind (its msgid would no longer match, and the Chinese edition would fall back
to English). This tool rewrites both, so that no translation is lost:

    python tools/authoring/rename_figures.py OLD=NEW [OLD=NEW ...]

The figure itself is renamed in its ``gpulab.course.figures_ch0N`` module by hand (its keys
are often built in code); ``tools/checks/page_figures.py`` then names any reference
left unresolved.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "book"
CATALOGUES = ROOT / "locales"
FIG_ROLE = re.compile(r"\{fig\}`(?P<name>[a-z][a-z0-9_]*)(?P<spec>:[^`]*)?`")


def files() -> list[Path]:
    """The pages and the catalogues that may hold figure roles."""
    return sorted(PAGES.rglob("*.md")) + sorted(CATALOGUES.rglob("*.po"))


def rename_roles(text: str, renames: dict[str, str]) -> str:
    """The text with every {fig} role whose name is a key of `renames` renamed."""
    return FIG_ROLE.sub(
        lambda m: f"{{fig}}`{renames.get(m['name'], m['name'])}{m['spec'] or ''}`", text
    )


def rewrite(convert: Callable[[str], str]) -> list[Path]:
    """Apply `convert` to every page and catalogue; the files it changed."""
    changed = []
    for path in files():
        text = path.read_text(encoding="utf-8")
        new = convert(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    """Rename figures (OLD=NEW ...) in the pages and the catalogues."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("renames", nargs="+", metavar="OLD=NEW")
    args = parser.parse_args(argv)
    pairs = [r.split("=", 1) for r in args.renames]
    if any(len(p) != 2 or not all(p) for p in pairs):
        parser.error("give OLD=NEW pairs, such as llama70_gb=llama70_fp16_gb")
    changed = rewrite(lambda text: rename_roles(text, dict(pairs)))
    for path in changed:
        print(path.relative_to(ROOT))
    print(f"{len(changed)} files changed")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main())
