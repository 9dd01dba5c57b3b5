"""nbval's output comparison, applied to the copies the pipeline already executed.

docs/design.md: papermill executes each notebook once; nbval then checks the cells tagged for
output checking. nbval's own runner would execute every notebook a second time, so this
module calls nbval's comparison (``IPyNbCell.compare_outputs``: its sanitizers, its skipped
keys, its stream coalescing) directly on the recorded reference and the executed output.

The references live beside the tests, not in the notebooks, which are committed without any
output: ``tests/notebooks/references/<notebook's path>.json`` maps each tagged cell's id to
its outputs (``record`` writes it from an executed copy).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import nbformat
from nbval.plugin import IPyNbCell, IPyNbFile, get_sanitize_patterns, nocolors

REFERENCE_TAG = "nbval-check-output"
ROOT = Path(__file__).resolve().parents[2]
SANITIZE_FILE = ROOT / "tests" / "notebooks" / "nbval_sanitize.cfg"
STORE = ROOT / "tests" / "notebooks" / "references"
# The keys nbval skips by default (IPyNbFile.__init__), images included (no --nbdime).
SKIP_COMPARE = (
    "metadata",
    "traceback",
    "prompt_number",
    "output_type",
    "name",
    "execution_count",
    "application/vnd.jupyter.widget-view+json",
    "image/png",
    "image/jpeg",
)


class _Comparer:
    """The parts of an nbval cell item that its compare_outputs needs."""

    colors = nocolors
    compare_outputs = IPyNbCell.compare_outputs
    sanitize = IPyNbCell.sanitize

    def __init__(self, patterns: dict[str, str]):
        self.parent = SimpleNamespace(skip_compare=SKIP_COMPARE, sanitize_patterns=patterns)
        self.comparison_traceback: list[str] = []

    def format_output_compare(self, key: str, left, right) -> None:
        """Record a mismatch as reference vs. new output (nbval's fallback format)."""
        self.comparison_traceback += [
            f"mismatch in {key!r}",
            "reference:",
            str(left),
            "this run:",
            str(right),
        ]


def sanitize_patterns(path: Path = SANITIZE_FILE) -> dict[str, str]:
    """The regex -> replacement pairs of an nbval sanitize file."""
    return dict(get_sanitize_patterns(path.read_text())) if path.exists() else {}


def reference_cells(notebook: dict) -> list[dict]:
    """The cells whose output is compared with a recorded reference."""
    return [
        c
        for c in notebook["cells"]
        if c["cell_type"] == "code" and REFERENCE_TAG in c.get("metadata", {}).get("tags", [])
    ]


def store_path(notebook: Path) -> Path:
    """Where a notebook's reference outputs are kept: STORE / its path, with .json."""
    return STORE / notebook.resolve().relative_to(ROOT).with_suffix(".json")


def stored(notebook: Path, store: Path | None = None) -> dict[str, list]:
    """A notebook's recorded reference outputs by cell id ({} when none are recorded)."""
    if store is None:
        if not notebook.resolve().is_relative_to(ROOT):  # a scratch notebook: nothing recorded
            return {}
        store = store_path(notebook)
    return json.loads(store.read_text(encoding="utf-8")) if store.exists() else {}


def record(notebook: Path, executed: Path) -> int:
    """Take the reference cells' outputs from an executed copy into the notebook's store.

    Run after a deliberate change of a reference value; the diff shows the new reference.
    """
    ids = {c.get("id") for c in reference_cells(json.loads(notebook.read_text(encoding="utf-8")))}
    outputs = {}
    for cell in json.loads(executed.read_text(encoding="utf-8"))["cells"]:
        if cell.get("id") in ids:
            for out in cell["outputs"]:
                if "execution_count" in out:
                    out["execution_count"] = None
            outputs[cell["id"]] = cell["outputs"]
    path = store_path(notebook)
    if outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(outputs, indent=1, ensure_ascii=False, sort_keys=True) + "\n",
            encoding="utf-8",
        )
    elif path.exists():
        path.unlink()
    return len(outputs)


def compare(source: Path, executed: Path, store: Path | None = None) -> list[str]:
    """Every reference cell whose new output differs from its recorded one, explained."""
    assert IPyNbFile  # nbval's collector: imported so a changed nbval fails loudly here
    src = json.loads(source.read_text(encoding="utf-8"))
    ran = {c.get("id"): c for c in json.loads(executed.read_text(encoding="utf-8"))["cells"]}
    references = stored(source, store)
    patterns = sanitize_patterns()
    failures = []
    for cell in reference_cells(src):
        new, reference = ran.get(cell.get("id")), references.get(cell.get("id"))
        if new is None or reference is None:
            where = "the executed copy" if new is None else "the recorded references"
            failures.append(f"cell {cell.get('id')}: missing from {where}")
            continue
        comparer = _Comparer(patterns)
        # nbval works on NotebookNode objects (attribute access), as nbformat reads them
        test = [nbformat.from_dict(o) for o in coalesce_streams(new["outputs"])]
        ref = [nbformat.from_dict(o) for o in coalesce_streams(reference)]
        if not comparer.compare_outputs(test, ref):
            first_line = "".join(cell["source"]).splitlines()[0] if cell["source"] else ""
            failures.append(
                f"cell {cell.get('id')} (`{first_line}`):\n  "
                + explain(comparer.comparison_traceback)
            )
    return failures


def coalesce_streams(outputs: list[dict]) -> list[dict]:
    """The outputs with each run of stream outputs to one stream joined into one, its text one
    string: where a kernel flushes its stdout between two prints is timing, not output, and a
    busy machine splits one printed table into two messages that nbval would count as a change."""
    out: list[dict] = []
    for output in outputs:
        if output.get("output_type") != "stream":
            out.append(dict(output))
            continue
        text = output["text"] if isinstance(output["text"], str) else "".join(output["text"])
        previous = out[-1] if out else {}
        if previous.get("output_type") == "stream" and previous.get("name") == output.get("name"):
            out[-1] = dict(previous, text=previous["text"] + text)
        else:
            out.append(dict(output, text=text))
    return out


def explain(traceback: list) -> str:
    """nbval's comparison traceback as lines: it holds strings and, for a changed text output,
    lists of the diff's lines."""
    lines = []
    for item in traceback:
        lines += (
            [str(line).rstrip("\n") for line in item] if isinstance(item, list) else [str(item)]
        )
    return "\n  ".join(lines)
