"""Exercise checks and the learner-copy generator (foundation; every lab uses them).

A lab is written once, as its solution. Cells tagged ``solution`` hold the answers, between
``### BEGIN SOLUTION`` and ``### END SOLUTION`` lines (a cell without the markers is replaced
whole). The generator writes the learner copy, in which each solution block becomes a stub
that raises ``NotImplementedError`` with a hint, and the end-of-lab exercises keep their
statements but lose their solutions (``gpulab.course.exercises``); a test fails when a copy is
out of date.

A cell whose metadata says ``"gpulab": {"source": "module:function"}`` holds that library
function's source, written by the generator, so the code a lab shows is the code that runs
(chapter 5's slow loop). A solution cell may say ``"learner_source"`` (and ``"learner_name"``):
the learner copy then starts from that function's source, renamed, to edit, instead of a stub.

    python tools/nbcheck.py --fix  # regenerate every learner copy (and repair the notebooks)
    python tools/nbcheck.py        # exit 1 when a copy is out of date, among other problems
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpulab.core.validate import NonNegativeFloat, checked
from gpulab.course import exercises

SOLUTION_TAG = "solution"
STUB_TAG = "learner-stub"  # a learner copy's cell that the learner fills in
REFERENCE_TAG = "nbval-check-output"
BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
HINT_PREFIX = "# HINT:"
DEFAULT_HINT = "write this part, then run the check below"
# The command that regenerates the learner copies, named in the out-of-date hints. It is the
# repository's tool, not a module of the package, so it keeps working wherever the
# generator lives.
REGENERATE = "python tools/nbcheck.py --fix"
# Plain CommonMark (a blockquote, not a MyST directive): learners open this copy in JupyterLab
# or Colab, which would show a directive as raw text.
LEARNER_NOTE = (
    "> **Note.** This is the learner copy of the lab, generated from the solution "
    "`{solution}` by `" + REGENERATE + "`. Fill in each cell that raises "
    "`NotImplementedError`, then run the check below it."
)


# ---------------------------------------------------------------- checks


class CheckFailed(AssertionError):
    """A lab check that failed, or a part not written yet.

    Jupyter shows it as one clear line (IPython's ``_render_traceback_`` hook) instead of a
    traceback into gpulab, which says nothing the message does not; ``%tb`` in the next cell
    shows the full traceback. Elsewhere it is a plain AssertionError.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[31mCheck failed:\x1b[0m {self}",
                "(the full traceback: run %tb in the next cell)"]



@dataclass
class CheckResult:
    """What a passed check saw: how many cases, and the largest error among them."""

    name: str
    cases: int
    max_abs_error: float
    # True once the line is on the page: check() shows it at once in Jupyter, so that a cell
    # with several checks shows each (IPython shows only a cell's last value by itself).
    shown: bool = field(default=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return (f"✓ {self.name}: all {self.cases} cases agree with the spec "
                f"(largest absolute error {self.max_abs_error:.2e})")

    def _ipython_display_(self) -> None:
        """IPython's hook: the cell's last value shows nothing more once check() has shown it."""
        if not self.shown:
            _show(self)


def _show(result: CheckResult) -> None:
    """Show a passed check's line in Jupyter, as plain text; do nothing outside IPython."""
    ipython = sys.modules.get("IPython")  # never imported here: a script has no page to show on
    if ipython is None or ipython.get_ipython() is None:
        return
    from IPython.display import display

    display({"text/plain": repr(result)}, raw=True)
    result.shown = True


@dataclass
class _Mismatch:
    """One case where the answer and the spec disagree."""

    case: int
    args: str
    detail: str
    score: float  # how far off (for choosing the worst); inf for shape or type problems


def _as_array(value):
    """A float64 numpy array from a tensor, array, number or nested sequence.

    None is not a number: numpy would read it as NaN, so a function that returns None where
    the spec returns NaN would pass. It raises TypeError instead (the caller reports it).
    """
    import numpy as np

    if hasattr(value, "detach"):  # a torch tensor, on any device
        value = value.detach().to("cpu")
        if value.is_complex():
            return value.numpy().astype(np.complex128)
        return value.double().numpy()
    if value is None:
        raise TypeError("None")
    raw = np.asarray(value)
    if raw.dtype == object and any(v is None for v in raw.flat):
        raise TypeError("None")
    return np.asarray(value, dtype=np.float64)


def _describe_args(args: Sequence, kwargs: dict) -> str:
    """A short description of a case: shapes for tensors, values for scalars."""
    def one(a):
        shape = getattr(a, "shape", None)
        if shape is not None:
            return f"{type(a).__name__}{tuple(shape)}"
        text = repr(a)
        return text if len(text) <= 40 else text[:37] + "..."
    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _num(x) -> str:
    """A number for an error message: plain, 10 significant digits."""
    return f"{complex(x):.10g}" if isinstance(x, complex) or getattr(x, "imag", 0) else f"{float(x):.10g}"


def _compare(got, expected, rtol: float, atol: float) -> tuple[str, float, float]:
    """(problem or "", score for ranking, largest absolute error) of one output pair."""
    import numpy as np

    if isinstance(expected, (tuple, list)) and not hasattr(expected, "shape"):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return (f"expected a sequence of {len(expected)} outputs, got {type(got).__name__}",
                    math.inf, math.inf)
        worst = ("", 0.0, 0.0)
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            detail, score, err = _compare(g, e, rtol, atol)
            if detail:
                detail = f"output {i}: {detail}"
            if score > worst[1] or (detail and not worst[0]):
                worst = (detail, score, max(err, worst[2]))
            else:
                worst = (worst[0], worst[1], max(err, worst[2]))
        return worst
    if isinstance(expected, str) or isinstance(got, str):
        # words (a classification such as "memory" or "compute") must match exactly
        if got == expected:
            return "", 0.0, 0.0
        return f"got {got!r}, expected {expected!r}", math.inf, 0.0
    if got is None and expected is None:
        return "", 0.0, 0.0
    try:
        g, e = _as_array(got), _as_array(expected)
    except (TypeError, ValueError):
        what = "None" if got is None else type(got).__name__
        return (f"got {what}, which cannot be compared with the spec's "
                f"{type(expected).__name__} {_short(expected)}", math.inf, math.inf)
    if g.shape != e.shape:
        return f"shape {tuple(g.shape)}, expected {tuple(e.shape)}", math.inf, math.inf
    if g.size == 0:
        return "", 0.0, 0.0
    nan_mismatch = np.isnan(g) != np.isnan(e)
    with np.errstate(invalid="ignore"):  # inf - inf is NaN: equal infinities are caught below
        diff = np.abs(g - e)
    # equal values (infinities of the same sign included) and NaN against NaN agree exactly
    diff = np.where((g == e) | (np.isnan(g) & np.isnan(e)), 0.0, diff)
    diff = np.where(nan_mismatch | np.isnan(diff), np.inf, diff)
    allowed = atol + rtol * np.abs(np.nan_to_num(e))
    excess = diff / np.maximum(allowed, np.finfo(float).tiny)
    idx = np.unravel_index(int(np.argmax(excess)), excess.shape)
    max_err = float(np.max(diff))
    if np.all(diff <= allowed):
        return "", 0.0, max_err
    bad = int(np.count_nonzero(diff > allowed))
    where = f" at index {tuple(int(i) for i in idx)}" if g.ndim else ""
    return (f"{bad} of {g.size} values differ; worst{where}: got {_num(g[idx])}, "
            f"expected {_num(e[idx])} (abs error {diff[idx]:.3g}, allowed {allowed[idx]:.3g})",
            float(excess[idx]), max_err)


@checked
def check(
    fn: Callable,
    spec: Callable,
    cases: Iterable,
    *,
    rtol: NonNegativeFloat = 1e-5,
    atol: NonNegativeFloat = 1e-8,
    name: str | None = None,
) -> CheckResult:
    """Compare `fn` with the reference `spec` on every case; raise AssertionError with the worst mismatch.

    Each case is a tuple of positional arguments, a dict of keyword arguments, or a single
    argument. Outputs may be tensors (any device), arrays, numbers or tuples of them.
    """
    name = name or getattr(fn, "__name__", "your function")
    mismatches: list[_Mismatch] = []
    max_err = 0.0
    n = 0
    for n, case in enumerate(cases, start=1):
        args, kwargs = _split_case(case)
        expected = spec(*args, **kwargs)
        try:
            got = fn(*args, **kwargs)
        except NotImplementedError as exc:
            hint = str(exc) or DEFAULT_HINT
            raise CheckFailed(f"`{name}` is not written yet: {hint}") from None
        detail, score, err = _compare(got, expected, rtol, atol)
        max_err = max(max_err, err)
        if detail:
            mismatches.append(_Mismatch(n, _describe_args(args, kwargs), detail, score))
    if n == 0:
        raise ValueError("cases is empty; give at least one case to check")
    if mismatches:
        worst = max(mismatches, key=lambda m: m.score)
        raise CheckFailed(
            f"`{name}` disagrees with the spec on {len(mismatches)} of {n} cases. "
            f"Worst: case {worst.case} {worst.args}: {worst.detail}"
        )
    result = CheckResult(name, n, max_err)
    _show(result)
    return result


def _split_case(case) -> tuple[tuple, dict]:
    """Positional and keyword arguments of one case."""
    if isinstance(case, dict):
        return (), case
    if isinstance(case, tuple):
        return case, {}
    return (case,), {}


# ---------------------------------------------------------------- learner copies


def _source(cell: dict) -> str:
    """A cell's source as one string (notebooks store it as a string or a list of lines)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _hint(lines: list[str]) -> str:
    """The hint given in a solution block by a `# HINT:` line, or the default."""
    for line in lines:
        if line.strip().startswith(HINT_PREFIX):
            return line.strip()[len(HINT_PREFIX):].strip()
    return DEFAULT_HINT


def stub_source(source: str, cell_hint: str | None = None) -> str:
    """The learner's version of a solution cell: each solution block becomes a stub."""
    lines = source.splitlines()
    if not any(line.strip() in (BEGIN, END) for line in lines):
        hint = cell_hint or DEFAULT_HINT
        return f"# Your code here.\nraise NotImplementedError({hint!r})"
    out: list[str] = []
    block: list[str] | None = None
    indent = ""
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped == BEGIN:
            if block is not None:
                raise ValueError(f"line {number}: {BEGIN!r} inside another solution block")
            block, indent = [], line[: len(line) - len(line.lstrip())]
        elif stripped == END:
            if block is None:
                raise ValueError(f"line {number}: {END!r} without {BEGIN!r}")
            hint = _hint(block) if _hint(block) != DEFAULT_HINT else (cell_hint or DEFAULT_HINT)
            out.append(f"{indent}# Your code here.")
            out.append(f"{indent}raise NotImplementedError({hint!r})")
            block = None
        elif block is not None:
            block.append(line)
        else:
            out.append(line)
    if block is not None:
        raise ValueError(f"{BEGIN!r} is never closed by {END!r}")
    return "\n".join(out)


def library_source(ref: str, rename: str | None = None) -> str:
    """The source of a library function named "module:function", optionally renamed."""
    module, _, name = ref.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise ValueError(f"gpulab.source {ref!r}: no function {name!r} in module {module!r}") from None
    source = inspect.getsource(fn).rstrip("\n")
    if rename:
        source = source.replace(f"def {name}(", f"def {rename}(", 1)
    return source


def refresh_generated(nb: dict) -> bool:
    """Rewrite every cell that declares a library source from that source; True if any changed."""
    changed = False
    for cell in nb.get("cells", []):
        ref = cell.get("metadata", {}).get("gpulab", {}).get("source")
        if ref and _source(cell) != library_source(ref):
            cell["source"] = library_source(ref)
            changed = True
    return changed


def is_solution_cell(cell: dict) -> bool:
    """True for a code cell tagged as a solution."""
    return cell.get("cell_type") == "code" and SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def make_learner_copy(solution: dict, solution_path: str) -> dict:
    """The learner copy of a solution notebook (a dict in nbformat 4), outputs stripped."""
    learner = copy.deepcopy(solution)
    cells = []
    for cell in learner["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
            # a learner's copy has no reference outputs to check (its stubs stop it first)
            tags = cell.get("metadata", {}).get("tags")
            if tags and REFERENCE_TAG in tags:
                cell["metadata"]["tags"] = [t for t in tags if t != REFERENCE_TAG]
        if is_solution_cell(cell):
            meta = cell["metadata"]
            start_from = meta.get("gpulab", {}).get("learner_source")
            if start_from:  # the learner edits a copy of this function instead of a stub
                start = library_source(start_from, meta["gpulab"].get("learner_name"))
                cell["source"] = f"{HINT_PREFIX} {meta.get('hint', DEFAULT_HINT)}\n{start}"
                meta.pop("gpulab")
            else:
                cell["source"] = stub_source(_source(cell), meta.get("hint"))
            meta["tags"] = [t for t in meta["tags"] if t != SOLUTION_TAG] + [STUB_TAG]
        cells.append(cell)
    if not any(is_solution_cell(c) for c in solution["cells"]):
        raise ValueError(f"{solution_path} has no cell tagged {SOLUTION_TAG!r}; it is not a lab")
    note = {"cell_type": "markdown", "id": "learner-copy-note", "metadata": {},
            "source": LEARNER_NOTE.replace("{solution}", solution_path)}
    # after the title cell, so the page still opens with the lab's title
    learner["cells"] = cells[:1] + [note] + cells[1:]
    learner = exercises.strip_solutions(learner)  # the exercises stay, their answers go
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
    """Refresh the library code in every lab and regenerate every learner copy; return what changed."""
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
    """`python -m gpulab.course.labs [--check] [LABS_DIR]`: write (or check) the learner copies."""
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
