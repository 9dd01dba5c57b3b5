"""The teaching checks of "teach first" (issues 28 and 29): which files follow them, the words
learner-facing text must not use, and the command that runs the checks or reports the counts.

A chapter's page, notebook and lab are listed in TEACH_FIRST once they follow the conventions of
CONTRIBUTING.md ("Teaching cells"); the checks apply to the listed files only, so that each
chapter joins when it is rewritten, and the list ends holding every chapter. Listing a file is
all it takes: tests/unit/test_teaching.py runs every check below on each listed file,
tests/notebooks on their executed outputs, tests/site on their built pages.

    python tools/checks/teaching.py                    # every check on TEACH_FIRST; 1 on a problem
    python tools/checks/teaching.py --report [PATHS]   # the counts per notebook and lab (all)
    python tools/checks/teaching.py --report --pages   # and per page
    python tools/checks/teaching.py --unlisted         # the course's files TEACH_FIRST lacks
    python tools/checks/teaching.py --summary [PATHS]  # problems per check, listed or not (all)

What each file must meet (half its main body as mechanisms, named mechanisms, graded cells,
longer scripts, exempt appendices) is the table RULES of tools/checks/teaching_cells.py.
"""

from __future__ import annotations

# Repository-relative paths of the pages, notebooks and labs the teaching checks apply to.
TEACH_FIRST: tuple[str, ...] = (
    "book/setup.md",
    "notebooks/00_check_your_setup.ipynb",
    "labs/00_first_kernel_lab.ipynb",
    "book/03_inference_vs_training.md",
    "notebooks/03_inference_vs_training.ipynb",
    "labs/03_tokens_per_second_lab.ipynb",
    "book/01_why_gpus_are_fast.md",
    "notebooks/01_why_gpus_are_fast.ipynb",
    "labs/01_roofline_lab.ipynb",
    "book/02_vram.md",
    "notebooks/02_will_it_fit.ipynb",
    "labs/02_predict_then_measure_lab.ipynb",
    "book/workshop/jupyterhub.md",
    "book/workshop/attendee.md",
    "book/workshop/instructor_guide.md",
    "book/06_choosing_hardware.md",
    "notebooks/06_choosing_hardware.ipynb",
    "book/intro.md",
    "book/appendix/fact_check.ipynb",
    "book/appendix/published_measurements.ipynb",
    "book/04_backends.md",
    "notebooks/04_backends.ipynb",
    "labs/04_triton_kernels_lab.ipynb",
    "book/05_pitfalls.md",
    "notebooks/05_pitfalls.ipynb",
    "labs/05_fix_slow_training_loop_lab.ipynb",
    "book/07_beyond_one_gpu.md",
    "notebooks/07_beyond_one_gpu.ipynb",
    "labs/07_torch_distributed_lab.ipynb",
)

# The course's own machinery, which learner-facing text does not name (case-insensitive).
MACHINERY_WORDS: tuple[str, ...] = (
    "registry",
    "registries",
    "csv",
    "seed_claims",
    "data folder",
    "data/measured",
    "drift",
    "quick mode",
    "build mode",
    "pasted",
    "figures_ch",
    "gpulab.course",
)

# Below the two lists, which the chapters edit, so that their edits and the code's stay apart.
import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

if __package__ in (None, ""):  # run as a script: the repository's root and src come first
    _ROOT = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(_ROOT), str(_ROOT / "src")]


def _root() -> Path:
    from tools.notebook_meta import ROOT

    return ROOT


def is_lab(path: str) -> bool:
    """True for a lab's solution notebook (`labs/NN_*.ipynb`)."""
    return path.startswith("labs/") and path.count("/") == 1 and path.endswith(".ipynb")


def notebook_checks() -> dict:
    """The checks of a notebook or lab, by name: each takes (notebook, path), returns problems."""
    from tools.checks import teaching_cells as cells
    from tools.checks import teaching_labs as labs
    from tools.checks import teaching_pages as pages

    return {
        "length": cells.length_problems,
        "mechanism-metadata": cells.metadata_problems,
        "mechanism-code": cells.code_problems,
        "mechanism-count": cells.count_problems,
        "mechanism-order": cells.order_problems,
        "agreement": cells.agreement_problems,
        "reveal-hidden": cells.reveal_problems,
        "grader": labs.grader_problems,
        "stubs": lambda nb, where: labs.stub_problems(nb, where) if is_lab(where) else [],
        "learner-copy": lambda nb, where: (
            labs.learner_copy_problems(nb, where, _root()) if is_lab(where) else []
        ),
        "writefile": lambda nb, where: labs.writefile_problems(nb, where, _root()),
        "machinery": notebook_machinery,
        "cpu-gpu-box": pages.box_problems,
    }


def page_checks() -> dict:
    """The checks of a page, by name: each takes (text, path), returns problems."""
    from tools.authoring import picture_registry as pictures
    from tools.checks import teaching_pages as pages

    return {
        "articles-section": pages.role_problems,
        "pictures": lambda text, where: pages.picture_problems(text, where, pictures.registered()),
        "machinery": lambda text, where: pages.machinery_problems(
            {"page": pages.page_prose(text)}, where, MACHINERY_WORDS
        ),
    }


def claim_numbers_checked(where: str) -> bool:
    """False for a file whose text names claims by number (the fact-check appendix's entries,
    which the `{claim}` roles point to); True elsewhere."""
    from tools.checks import teaching_cells as cells

    return not cells.rule_for(where).claims_by_number


def notebook_machinery(nb: dict, where: str) -> list[str]:
    """Machinery words in a notebook's Markdown, and in a lab's learner copy's stubs and hints."""
    from tools.checks import teaching_labs as labs
    from tools.checks import teaching_pages as pages
    from tools.notebook_meta import cell_source

    texts = {
        f"cell {i}": cell_source(c)
        for i, c in enumerate(nb.get("cells", []))
        if c.get("cell_type") == "markdown"
    }
    found = pages.machinery_problems(texts, where, MACHINERY_WORDS, claim_numbers_checked(where))
    if is_lab(where):
        learner = f"labs/learner/{Path(where).name}"
        found += pages.machinery_problems(
            labs.learner_texts(where, _root()), learner, MACHINERY_WORDS
        )
    return found


def unlisted(root: Path | None = None) -> list[str]:
    """The pages, notebooks and labs of the course (`_toc.yml`: the introduction, the chapters,
    the workshop pages, the appendices) that TEACH_FIRST does not list, in the book's order."""
    from tools.checks import teaching_report

    listed = set(TEACH_FIRST)
    return [p for p in teaching_report.toc_files(root or _root()) if p not in listed]


def summary(paths: list[str]) -> str:
    """Per file, how many problems each check finds, whether or not TEACH_FIRST lists it."""
    lines = []
    for path in paths:
        names = notebook_checks() if path.endswith(".ipynb") else page_checks()
        counts = {name: len(check(path, only=name)) for name in names}
        found = ", ".join(f"{name} {n}" for name, n in counts.items() if n)
        lines.append(f"{path}: {sum(counts.values())} problem(s){f' ({found})' if found else ''}")
    return "\n".join(lines)


def check(path: str, only: str | None = None) -> list[str]:
    """Every teaching check of one file (or only the one named), as problems."""
    target = _root() / path
    if not target.exists():
        return [f"{path}: listed in TEACH_FIRST but not found"]
    text = target.read_text(encoding="utf-8")
    if path.endswith(".ipynb"):
        nb, checks = json.loads(text), notebook_checks()
        return [p for name, fn in checks.items() if only in (None, name) for p in fn(nb, path)]
    checks = page_checks()
    return [p for name, fn in checks.items() if only in (None, name) for p in fn(text, path)]


def main(argv: list[str] | None = None) -> int:
    """Run every check on TEACH_FIRST (exit 1 on a problem), or print --report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--report",
        nargs="*",
        metavar="PATH",
        help="print the counts per notebook and lab (default: every one of _toc.yml)",
    )
    parser.add_argument(
        "--pages",
        action="store_true",
        help="with --report: a second table, per page (default: every page of _toc.yml)",
    )
    parser.add_argument(
        "--unlisted", action="store_true", help="print the course's files TEACH_FIRST lacks"
    )
    parser.add_argument(
        "--summary",
        nargs="*",
        metavar="PATH",
        help="print per file the problems each check finds (default: every file of _toc.yml)",
    )
    args = parser.parse_args(argv)
    if args.summary is not None:
        from tools.checks import teaching_report

        print(summary(list(args.summary) or teaching_report.toc_files(_root())))
        return 0
    if args.unlisted:
        print("\n".join(unlisted()))
        return 0
    if args.report is not None:
        from tools.checks import teaching_report

        paths = list(args.report) or teaching_report.toc_files(_root())
        print(teaching_report.table(paths, _root()))
        if args.pages:
            print()
            print(teaching_report.page_table(paths, MACHINERY_WORDS, _root()))
        return 0
    found = [p for path in TEACH_FIRST for p in check(path)]
    for line in found:
        print(line)
    print(f"teaching checks: {len(TEACH_FIRST)} file(s) listed, {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
