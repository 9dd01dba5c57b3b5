"""The learner-copy generator: each lab's learner copy, written from its solution.

A lab is written once, as its solution. Cells tagged ``solution`` hold the answers, between
``### BEGIN SOLUTION`` and ``### END SOLUTION`` lines (a cell without the markers is replaced
whole). The generator writes the learner copy, in which each solution block becomes a stub
that raises ``NotImplementedError``; the block's ``# HINT 1:`` to ``# HINT 3:`` lines (the old
``# HINT:`` is level 1) become a Markdown cell right after the stub, one collapsed
``<details>`` per level, and the stub's message says to open them. An end-of-lab exercise
keeps its statement; a solution code cell of it written with the markers becomes a stub with
its check kept (the code after the markers), and the ``#### Solution`` Markdown and any other
solution cell are dropped (``tools.authoring.exercises``). An exercise without markers keeps
only its statement. A test fails when a copy is out of date.

A cell whose metadata says ``"gpulab": {"source": "module:function"}`` holds that library
function's source, written by the generator, so the code a lab shows is the code that runs
(chapter 5's slow loop). A solution cell may say ``"learner_source"`` (and ``"learner_name"``):
the learner copy then starts from that function's source, renamed, to edit, instead of a stub.

It is authoring code, so it lives in the repository's tools, not in the package a learner
installs; the checks the stubs call (``gpulab.course.labs.check``) stay in the package.

    python tools/checks/nbcheck.py --fix  # regenerate every learner copy (and repair the notebooks)
    python tools/checks/nbcheck.py        # exit 1 when a copy is out of date, among other problems
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository's root and src come first
    _ROOT = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(_ROOT), str(_ROOT / "src")]

from gpulab.course.labs import DEFAULT_HINT  # noqa: E402
from tools.authoring import exercises, solution_blocks  # noqa: E402
from tools.notebook_meta import cell_source  # noqa: E402

SOLUTION_TAG = "solution"
BEGIN, END = solution_blocks.BEGIN, solution_blocks.END  # the markers of a solution block
STUB_TAG = "learner-stub"  # a learner copy's cell that the learner fills in
HINTS_TAG = "learner-hints"  # the Markdown cell of collapsed hints under a stub
REFERENCE_TAG = "nbval-check-output"
HINT_PREFIX = "# HINT:"
# The stub's message where hints follow it (labs.check shows it as "not written yet: ...")
HINTED = "write this part, then run the check (stuck? open the hints below this cell)"
# The command that regenerates the learner copies, named in the out-of-date hints: the one
# command a lab's author runs, which also repairs the notebooks.
REGENERATE = "python tools/checks/nbcheck.py --fix"
# Plain CommonMark (a blockquote, not a MyST directive): learners open this copy in JupyterLab
# or Colab, which would show a directive as raw text.
LEARNER_NOTE = (
    "> **Note.** This is the learner copy of the lab, generated from the solution "
    "`{solution}` by `" + REGENERATE + "`. Fill in each cell that raises "
    "`NotImplementedError`, then run the check below it."
)


def _message(has_hints: bool) -> str:
    return HINTED if has_hints else DEFAULT_HINT


def stub_source(source: str, cell_hint: str | None = None) -> str:
    """The learner's version of a solution cell: each solution block becomes a stub whose
    message points to the hints below the cell (where it has any)."""
    lines = source.splitlines()
    if not solution_blocks.has_blocks(source):
        return f"# Your code here.\nraise NotImplementedError({_message(bool(cell_hint))!r})"
    found = solution_blocks.blocks(source)  # ValueError on broken markers, with the line
    out: list[str] = []
    position = 0
    for block in found:
        out += lines[position : block.begin]
        hinted = bool(block.hints) or bool(cell_hint)
        out.append(f"{block.indent}# Your code here.")
        out.append(f"{block.indent}raise NotImplementedError({_message(hinted)!r})")
        position = block.end + 1
    out += lines[position:]
    return "\n".join(out)


def hint_levels(source: str, cell_hint: str | None = None) -> list[tuple[str, dict[int, str]]]:
    """(the function, its hints by level) for each block of a cell that has hints; a cell's
    `hint` metadata is level 1 of a block that has none."""
    if not solution_blocks.has_blocks(source):
        return [("", {1: cell_hint})] if cell_hint else []
    out = []
    for block in solution_blocks.blocks(source):
        levels = block.hints or ({1: cell_hint} if cell_hint else {})
        if levels:
            out.append((block.function, levels))
    return out


def hints_markdown(source: str, cell_hint: str | None = None) -> str | None:
    """The Markdown cell under a stub: one collapsed `<details>` per hint level (plain HTML,
    which JupyterLab, Colab and the site all render); None when the cell has no hint."""
    levels = hint_levels(source, cell_hint)
    if not levels:
        return None
    parts = []
    for function, by_level in levels:
        for level, text in by_level.items():
            name = f" for {function}" if function and len(levels) > 1 else ""
            parts.append(f"<details><summary>Hint {level}{name}</summary>\n\n{text}\n\n</details>")
    return "\n\n".join(parts)


def library_source(ref: str, rename: str | None = None) -> str:
    """The source of a library function named "module:function", optionally renamed."""
    module, _, name = ref.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise ValueError(
            f"gpulab.source {ref!r}: no function {name!r} in module {module!r}"
        ) from None
    source = inspect.getsource(fn).rstrip("\n")
    if rename:
        source = source.replace(f"def {name}(", f"def {rename}(", 1)
    return source


def refresh_generated(nb: dict) -> bool:
    """Rewrite every cell that declares a library source from that source; True if any changed."""
    changed = False
    for cell in nb.get("cells", []):
        ref = cell.get("metadata", {}).get("gpulab", {}).get("source")
        if ref and cell_source(cell) != library_source(ref):
            cell["source"] = library_source(ref)
            changed = True
    return changed


def is_solution_cell(cell: dict) -> bool:
    """True for a code cell tagged as a solution."""
    tags = cell.get("metadata", {}).get("tags", [])
    return cell.get("cell_type") == "code" and SOLUTION_TAG in tags


def _exercise_work(nb: dict) -> set[int]:
    """Positions of the exercises' solution code cells written with solution markers: in the
    learner copy each becomes the exercise's cell to fill in, its check kept."""
    return {
        i
        for group in exercises.exercises(nb)
        for i in group.solution
        if nb["cells"][i]["cell_type"] == "code"
        and solution_blocks.has_blocks(cell_source(nb["cells"][i]))
    }


def _hints_cell(stub: dict, text: str) -> dict:
    return {
        "cell_type": "markdown",
        "id": f"{stub.get('id', 'stub')}-hints"[:64],
        "metadata": {"tags": [HINTS_TAG]},
        "source": text,
    }


def _as_stub(cell: dict) -> dict | None:
    """Turn a solution cell into the learner's stub in place; return its hints cell, if any."""
    meta = cell["metadata"]
    start_from = meta.get("gpulab", {}).get("learner_source")
    hints = None
    if start_from:  # the learner edits a copy of this function instead of a stub
        start = library_source(start_from, meta["gpulab"].get("learner_name"))
        cell["source"] = f"{HINT_PREFIX} {meta.get('hint', DEFAULT_HINT)}\n{start}"
        meta.pop("gpulab")
    else:
        source = cell_source(cell)
        hints = hints_markdown(source, meta.get("hint"))
        cell["source"] = stub_source(source, meta.get("hint"))
    drop = (SOLUTION_TAG, exercises.SOLUTION_TAG)
    meta["tags"] = [t for t in meta.get("tags", []) if t not in drop] + [STUB_TAG]
    # an exercise's solution is saved hidden (exercises.normalise); the learner's cell is not
    meta.pop("jupyter", None)
    meta.pop("cellView", None)
    return _hints_cell(cell, hints) if hints else None


def make_learner_copy(solution: dict, solution_path: str) -> dict:
    """The learner copy of a solution notebook (a dict in nbformat 4), outputs stripped."""
    learner = copy.deepcopy(solution)
    work = _exercise_work(learner)
    cells = []
    for i, cell in enumerate(learner["cells"]):
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
            # a learner's copy has no reference outputs to check (its stubs stop it first)
            tags = cell.get("metadata", {}).get("tags")
            if tags and REFERENCE_TAG in tags:
                cell["metadata"]["tags"] = [t for t in tags if t != REFERENCE_TAG]
        hints = _as_stub(cell) if is_solution_cell(cell) or i in work else None
        cells += [cell] + ([hints] if hints else [])
    if not any(is_solution_cell(c) for c in solution["cells"]):
        raise ValueError(f"{solution_path} has no cell tagged {SOLUTION_TAG!r}; it is not a lab")
    note = {
        "cell_type": "markdown",
        "id": "learner-copy-note",
        "metadata": {},
        "source": LEARNER_NOTE.replace("{solution}", solution_path),
    }
    # after the title cell, so the page still opens with the lab's title
    learner["cells"] = cells[:1] + [note] + cells[1:]
    # the exercises stay, with their cells to fill in; the rest of their solutions goes
    learner = exercises.strip_solutions(learner)
    learner.setdefault("metadata", {})["gpulab"] = {"learner_copy_of": solution_path}
    return learner


def learner_path(solution: Path) -> Path:
    """Where the learner copy of a lab solution lives: `labs/learner/<same name>`."""
    return solution.parent / "learner" / solution.name


def _dump(nb: dict) -> str:
    """Notebook JSON exactly as the repository stores it."""
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def solutions(labs_dir: Path) -> list[Path]:
    """Every lab solution notebook in a labs folder."""
    return sorted(p for p in labs_dir.glob("*.ipynb") if not p.name.startswith("_"))


def write_learner_copies(labs_dir: Path) -> list[Path]:
    """Refresh every lab's library code, regenerate every learner copy; return what changed."""
    changed = []
    for solution in solutions(labs_dir):
        nb = json.loads(solution.read_text(encoding="utf-8"))
        if refresh_generated(nb):  # the library's code changed: the lab shows it as it is
            solution.write_text(_dump(nb), encoding="utf-8")
            changed.append(solution)
        text = _dump(make_learner_copy(nb, f"labs/{solution.name}"))
        target = learner_path(solution)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            changed.append(target)
    return changed


def out_of_date(labs_dir: Path) -> list[Path]:
    """Labs whose library code cells are stale, and learner copies that are missing or differ
    from what the generator makes now."""
    stale = []
    for solution in solutions(labs_dir):
        nb = json.loads(solution.read_text(encoding="utf-8"))
        if refresh_generated(copy.deepcopy(nb)):
            stale.append(solution)  # a cell no longer holds its library function's source
        target = learner_path(solution)
        want = _dump(make_learner_copy(nb, f"labs/{solution.name}"))
        if not target.exists() or target.read_text(encoding="utf-8") != want:
            stale.append(target)
    for target in sorted((labs_dir / "learner").glob("*.ipynb")):
        if not (labs_dir / target.name).exists():
            stale.append(target)  # a copy whose solution is gone
    return stale


def main(argv: list[str] | None = None) -> int:
    """`learner_generator.py [--check] [LABS_DIR]`: write (or only check) the learner copies."""
    args = list(sys.argv[1:] if argv is None else argv)
    check_only = "--check" in args
    args = [a for a in args if a != "--check"]
    labs_dir = Path(args[0]) if args else Path("labs")
    if not labs_dir.is_dir():
        print(f"labs folder {labs_dir} not found; run from the repository root", file=sys.stderr)
        return 2
    if check_only:
        stale = out_of_date(labs_dir)
        for path in stale:
            print(f"out of date: {path} (run `{REGENERATE}`)")
        return 1 if stale else 0
    for path in write_learner_copies(labs_dir):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
