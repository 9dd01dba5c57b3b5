"""Write what the node tests of the static calculators (calculators.test.mjs) compare with.

    python tests/js/expected.py OUT_DIR

OUT_DIR gets gpulab-py.zip (``gpulab.calculators.python_archive()``, the archive the site
carries) and gpulab-py.zip.js (its carrier for file:// pages, ``payload_script``), memory.html
and cost.html (the snippets notebook 06 displays) and expected.json: the seeded inputs of
tests/js/samples.py as the page's inputs hold them (text), with what gpulab computes for them
here in CPython through tests/calculator_oracle.py, which do not go through the page's
function, and the inputs the page must refuse.
The node test runs this script itself, so its fixtures are never stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from gpulab import calculator, calculators  # noqa: E402
from gpulab.core.errors import GpulabConfigError  # noqa: E402
from tests import calculator_oracle as oracle  # noqa: E402
from tests.js import samples  # noqa: E402

MEMORY_DEFAULTS = samples.MEMORY_DEFAULTS


def memory_cases() -> list[dict]:
    cases = []
    for values in samples.memory_samples():
        want = oracle.memory_expected(
            values["model"],
            values["weights"],
            values["context"],
            values["users"],
            values["gpu"],
            values["kv_cache"],
        )
        cases.append({"inputs": samples.texts(values), "expected": want})
    return cases


def cost_cases() -> list[dict]:
    cases = []
    for values in samples.cost_samples():
        cases.append(
            {
                "inputs": samples.texts(values) | {"currency": "CNY"},
                "expected": oracle.cost_expected(values),
            }
        )
    return cases


def cost_defaults() -> dict:
    return samples.texts(calculators.COST_DEFAULTS) | {"currency": "CNY"}


def bad_cases() -> list[dict]:
    """Refused inputs; where gpulab.cost itself refuses the value, it must name the field too."""
    out = [
        {"kind": "memory", "inputs": MEMORY_DEFAULTS | {f: t}, "field": f}
        for f, t in samples.BAD_MEMORY
    ]
    for field, text in samples.BAD_COST:
        out.append({"kind": "cost", "inputs": cost_defaults() | {field: text}, "field": field})
        if text:
            try:
                oracle.cost_expected(calculators.COST_DEFAULTS | {field: float(text)})
            except GpulabConfigError as err:
                assert err.field == field, (field, err)
            else:
                raise AssertionError(f"gpulab.cost accepts {field}={text}")
    defaults = {"memory": MEMORY_DEFAULTS, "cost": cost_defaults()}
    out += [
        {"kind": kind, "inputs": defaults[kind] | {f: t}, "field": f, "text_box": True}
        for kind, f, t in samples.BAD_TEXT_ONLY
    ]
    for case in out:  # the message names the input as the page labels it
        case["label"] = calculator.LABELS[case["kind"]][case["field"]]
    return out


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    archive = calculators.python_archive()
    (out / "gpulab-py.zip").write_bytes(archive)
    # the archive's carrier, as a page opened from file:// loads it
    (out / "gpulab-py.zip.js").write_text(
        calculators.payload_script("gpulab-py.zip", archive), encoding="ascii"
    )
    (out / "memory.html").write_text(calculators.memory_calculator_html(), encoding="utf-8")
    (out / "cost.html").write_text(calculators.cost_calculator_html(), encoding="utf-8")
    data = {
        "memory": {"defaults": MEMORY_DEFAULTS, "samples": memory_cases()},
        "cost": {"defaults": cost_defaults(), "samples": cost_cases()},
        "bad": bad_cases(),
        "archive": calculators.ARCHIVE,
        "pyodide_dir": calculators.PYODIDE_DIR,
    }
    (out / "expected.json").write_text(
        json.dumps(data, indent=1, allow_nan=False), encoding="utf-8"
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]))
