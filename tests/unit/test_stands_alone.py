"""The repository stands alone: no file points to something a clone does not have.

A clone holds the course and nothing beside it. The one declared optional input is the two source
articles, read from the folder named by ``GPULAB_SEEDS`` (``tests.helpers.SEEDS``, the only place
allowed to name its default), by the tests that compare quotes with them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests import helpers

ROOT = Path(__file__).resolve().parents[2]
# Names of files the team keeps beside the repository, which a clone lacks.
OUTSIDE_NAMES = re.compile(r"\b(?:DESIGN|TEACHING)\.md\b|\bseed_claims\.csv\b")
# The folder beside the checkout, however it is spelt: ../shared, shared/seeds, "shared" as a
# path part in code, or an absolute path into it.
OUTSIDE_FOLDER = re.compile(r"\.\./shared\b|(?<![\w.-])shared/(?:seeds|reference|hooks)\b"
                            r"|/\s*[\"']shared[\"']|[\"']shared[\"']\s*/|/work/shared\b")
# A relative path that climbs: it must stay inside when resolved against the file's own folder,
# or name a top-level part of the repository after its "../" (an example in CONTRIBUTING.md,
# a link between the site's pages, written from another folder than the file's own).
CLIMBING = re.compile(r"(?:\.\./)+([\w.\-]*)[\w.\-/]*")
# The one place that may name the articles' default folder (and this test, which names the
# patterns it looks for).
ALLOWED = {Path("tests/helpers.py"), Path("tests/unit/test_stands_alone.py")}
BINARY = {".png", ".jpg", ".jpeg", ".gif", ".ico", ".woff", ".woff2", ".ttf", ".zip", ".mo",
          ".pdf", ".wasm"}


def tracked_files() -> list[Path]:
    """The repository's files, as git tracks them (untracked but not ignored ones included)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         cwd=ROOT, capture_output=True, check=True).stdout
    return sorted(Path(p) for p in out.decode().split("\0") if p and (ROOT / p).is_file())


def problems_in(rel: Path, text: str) -> list[str]:
    """Each place in one file's text that points outside the repository, as `file:line: what`."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in (OUTSIDE_NAMES, OUTSIDE_FOLDER):
            found += [f"{rel}:{number}: {m.group(0)!r}" for m in pattern.finditer(line)]
        for m in CLIMBING.finditer(line):
            target = (ROOT / rel.parent / m.group(0)).resolve()
            if not target.is_relative_to(ROOT) and not (ROOT / m.group(1)).exists():
                found.append(f"{rel}:{number}: {m.group(0)!r} leaves the repository")
    return found


def test_no_file_points_outside_the_repository():
    """Every tracked text file, notebooks and catalogues included, names only what a clone has."""
    found = []
    for rel in tracked_files():
        if rel in ALLOWED or rel.suffix in BINARY:
            continue
        try:
            text = (ROOT / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += problems_in(rel, text)
    assert not found, "paths outside the repository:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_outside_path():
    """The oracle: hand-written lines that leave the repository are each found, and links
    between the book's own folders are not."""
    bad = ["see DESIGN.md", "ids of seed_claims.csv", "the articles in ../shared/seeds/",
           "Path(__file__).parents[3] / 'shared' / 'seeds'", "open('/work/shared/x')",
           "[a](../../../elsewhere/page.md)"]
    for line in bad:
        assert problems_in(Path("book/appendix/page.md"), line), line
    good = ["[chapter 2](../02_vram.md)", "{doc}`../notebooks/02_will_it_fit`",
            "a site link: ../../../book/appendix/fact_check.html",
            "the docs/design.md page", "a shared/ memory pool"]
    for line in good:
        assert not problems_in(Path("book/appendix/page.md"), line), line


def test_the_articles_are_read_only_through_gpulab_seeds(monkeypatch, tmp_path):
    """GPULAB_SEEDS names the articles' folder; without it, the default is beside the checkout."""
    monkeypatch.setenv("GPULAB_SEEDS", str(tmp_path))
    assert helpers.seeds_dir() == tmp_path
    monkeypatch.delenv("GPULAB_SEEDS")
    assert helpers.seeds_dir() == helpers.SEEDS_DEFAULT
    assert not helpers.SEEDS_DEFAULT.is_relative_to(ROOT)  # beside the checkout, not in it
