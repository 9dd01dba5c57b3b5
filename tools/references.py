"""nbval's output comparison, applied to the copies the pipeline already executed.

docs/design.md: papermill executes each notebook once; nbval then checks the cells tagged for
output checking. nbval's own runner would execute every notebook a second time, so this
module calls nbval's comparison (``IPyNbCell.compare_outputs``: its sanitizers, its skipped
keys, its stream coalescing) directly on the committed reference and the executed output.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import nbformat
from nbval.plugin import IPyNbCell, IPyNbFile, get_sanitize_patterns, nocolors

REFERENCE_TAG = "nbval-check-output"
SANITIZE_FILE = Path(__file__).resolve().parents[1] / "tests" / "notebooks" / "nbval_sanitize.cfg"
# The keys nbval skips by default (IPyNbFile.__init__), images included (no --nbdime).
SKIP_COMPARE = ("metadata", "traceback", "prompt_number", "output_type", "name",
                "execution_count", "application/vnd.jupyter.widget-view+json",
                "image/png", "image/jpeg")


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
        self.comparison_traceback += [f"mismatch in {key!r}", "reference:", str(left),
                                      "this run:", str(right)]


def sanitize_patterns(path: Path = SANITIZE_FILE) -> dict[str, str]:
    """The regex -> replacement pairs of an nbval sanitize file."""
    return dict(get_sanitize_patterns(path.read_text())) if path.exists() else {}


def reference_cells(notebook: dict) -> list[dict]:
    """The cells whose committed output is a reference."""
    return [c for c in notebook["cells"]
            if c["cell_type"] == "code" and REFERENCE_TAG in c.get("metadata", {}).get("tags", [])]


def compare(source: Path, executed: Path) -> list[str]:
    """Every reference cell whose new output differs from the committed one, explained."""
    assert IPyNbFile  # nbval's collector: imported so a changed nbval fails loudly here
    src = json.loads(source.read_text(encoding="utf-8"))
    ran = {c.get("id"): c for c in json.loads(executed.read_text(encoding="utf-8"))["cells"]}
    patterns = sanitize_patterns()
    failures = []
    for cell in reference_cells(src):
        new = ran.get(cell.get("id"))
        if new is None:
            failures.append(f"cell {cell.get('id')}: missing from the executed copy")
            continue
        comparer = _Comparer(patterns)
        # nbval works on NotebookNode objects (attribute access), as nbformat reads them
        test = [nbformat.from_dict(o) for o in new["outputs"]]
        ref = [nbformat.from_dict(o) for o in cell["outputs"]]
        if not comparer.compare_outputs(test, ref):
            first_line = "".join(cell["source"]).splitlines()[0] if cell["source"] else ""
            failures.append(f"cell {cell.get('id')} (`{first_line}`):\n  "
                            + "\n  ".join(comparer.comparison_traceback))
    return failures
