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
# The team's folder beside the checkout, named once (tests.helpers.SEEDS_DEFAULT), and the files
# it keeps, which a clone lacks: this test spells none of them out, so that it can check itself.
TEAM = re.escape(helpers.SEEDS_DEFAULT.parent.name)
TEAM_FILES = tuple(
    f"{stem}.{ext}" for stem, ext in (("DESIGN", "md"), ("TEACHING", "md"), ("seed_claims", "csv"))
)
OUTSIDE_NAMES = re.compile("|".join(rf"\b{re.escape(name)}\b" for name in TEAM_FILES))
# The folder, however it is spelt: "../" and its name, its name and a subfolder, its name as a
# path part in code, or an absolute path into it.
OUTSIDE_FOLDER = re.compile(
    rf"\.\./{TEAM}\b|(?<![\w.-]){TEAM}/(?:seeds|reference|hooks)\b"
    rf"|/\s*[\"']{TEAM}[\"']|[\"']{TEAM}[\"']\s*/|/work/{TEAM}\b"
)
# A relative path that climbs: it must stay inside when resolved against the file's own folder,
# or name a top-level part of the repository after its "../" (an example in CONTRIBUTING.md,
# a link between the site's pages, written from another folder than the file's own).
CLIMBING = re.compile(r"(?:\.\./)+([\w.\-]*)[\w.\-/]*")
# The one place that may name the articles' default folder.
ALLOWED = {Path("tests/helpers.py")}
BINARY = {
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".ico",
    ".woff",
    ".woff2",
    ".ttf",
    ".zip",
    ".mo",
    ".pdf",
    ".wasm",
}


def tracked_files() -> list[Path]:
    """The repository's files, as git tracks them (untracked but not ignored ones included)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
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
    team = helpers.SEEDS_DEFAULT.parent.name
    bad = [
        f"see {TEAM_FILES[0]}",
        f"ids of {TEAM_FILES[2]}",
        f"the articles in ../{team}/seeds/",
        f"Path(__file__).parents[3] / '{team}' / 'seeds'",
        f"open('/work/{team}/x')",
        f"[a]({'../' * 3}elsewhere/page.md)",
    ]
    for line in bad:
        assert problems_in(Path("book/appendix/page.md"), line), line
    good = [
        "[chapter 2](../02_vram.md)",
        "{doc}`../notebooks/02_will_it_fit`",
        "a site link: ../../../book/appendix/fact_check.html",
        "the docs/design.md page",
        f"a {team}/ memory pool",
    ]
    for line in good:
        assert not problems_in(Path("book/appendix/page.md"), line), line


def test_the_articles_are_read_only_through_gpulab_seeds(monkeypatch, tmp_path):
    """GPULAB_SEEDS names the articles' folder; without it (or empty), the default is beside the
    checkout."""
    monkeypatch.setenv("GPULAB_SEEDS", str(tmp_path))
    assert helpers.seeds_dir() == tmp_path
    monkeypatch.delenv("GPULAB_SEEDS")
    assert helpers.seeds_dir() == helpers.SEEDS_DEFAULT
    # set but empty (`GPULAB_SEEDS= make test`) is unset, not the working directory
    monkeypatch.setenv("GPULAB_SEEDS", "")
    assert helpers.seeds_dir() == helpers.SEEDS_DEFAULT
    assert not helpers.SEEDS_DEFAULT.is_relative_to(ROOT)  # beside the checkout, not in it
