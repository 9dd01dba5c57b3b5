"""The package's layout is its architecture: layers, their modules, the map in CONTRIBUTING.md.

The import direction itself is checked by import-linter (`lint-imports` in `make lint`,
contracts in pyproject.toml); these tests check what it cannot: every module belongs to a
layer, short names are unique and importable the documented way, no flat module is left at
the top, the contributor's map matches the code, and modules stay small, the library's and
the tools' alike.
"""

from __future__ import annotations

import importlib
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gpulab

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "gpulab"
TOOLS = ROOT / "tools"
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
MAX_LINES = 500
LINE_WIDTH = 100  # ruff's line length: a tools module's longer line counts as several


def _module_files() -> dict[str, Path]:
    """gpulab.<layer>.<module> -> its file, for every module file in a layer's folder."""
    found = {}
    for layer in gpulab.LAYERS:
        for path in sorted((PACKAGE / layer).glob("*.py")):
            if path.name != "__init__.py":
                found[f"gpulab.{layer}.{path.stem}"] = path
    return found


def test_every_module_file_belongs_to_its_layer_and_is_listed():
    assert set(_module_files()) == set(gpulab.MODULES.values())


def test_the_top_level_holds_only_the_package_and_its_command_line():
    """No flat shim modules: gpulab/*.py is the lazy package and `python -m gpulab`."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py"]
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted([*gpulab.LAYERS, "data"])


def test_short_names_are_unique_and_import_from_the_top_level():
    """`from gpulab import memory` works for every module, and is the same module object."""
    names = [n for names in gpulab.LAYERS.values() for n in names]
    assert len(names) == len(set(names))
    for name, path in gpulab.MODULES.items():
        assert getattr(gpulab, name) is importlib.import_module(path)
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        gpulab.nonsense  # noqa: B018


def test_importing_the_package_loads_no_layer_and_no_torch():
    """The top level is lazy: a notebook pays only for the modules it uses."""
    code = (
        "import sys, gpulab; "
        "print(sorted(m for m in sys.modules if m.startswith(('gpulab.', 'torch'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""},
    ).stdout
    assert out.strip() == "[]"


def test_the_estimate_layer_runs_without_torch_or_numpy():
    """What the browser calculators need imports without torch, numpy or any other wheel."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'numpy', 'psutil', 'pynvml', 'yaml'):\n"
        "            raise ImportError(f'blocked {name}')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from gpulab import choose, cost, memory, models, perf, power, serving\n"
        "spec = models.get('Llama-3-70B')\n"
        "print(round(memory.estimate_inference(spec, 'int4').total / 1e9, 1))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""},
    )
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) > 39


def _map_rows() -> dict[str, set[str]]:
    """CONTRIBUTING.md's layer table: layer -> the modules it lists."""
    rows = {}
    for line in CONTRIBUTING.splitlines():
        m = re.match(r"\|\s*`(\w+)`\s*\|.*\|\s*((?:`\w+`[,\s]*)+)\|\s*$", line)
        if m and m.group(1) in gpulab.LAYERS:
            rows[m.group(1)] = set(re.findall(r"`(\w+)`", m.group(2)))
    return rows


def test_contributing_maps_every_module_to_its_layer():
    assert _map_rows() == {layer: set(names) for layer, names in gpulab.LAYERS.items()}


def test_modules_stay_small_except_those_contributing_lists_with_a_reason():
    allowed = set(re.findall(r"^- `src/gpulab/(\S+\.py)`: ", CONTRIBUTING, flags=re.M))
    assert len(allowed) <= 3
    long = {
        str(p.relative_to(PACKAGE)): len(p.read_text().splitlines())
        for p in _module_files().values()
    }
    over = {name: n for name, n in long.items() if n > MAX_LINES and name not in allowed}
    assert over == {}


def _size(text: str) -> int:
    """A module's length in lines of at most LINE_WIDTH characters: a longer line counts as as
    many lines as it would take wrapped, so that no module fits by packing long lines."""
    return sum(max(1, math.ceil(len(line) / LINE_WIDTH)) for line in text.splitlines())


def test_a_long_line_counts_as_the_lines_it_would_take():
    assert _size("x = 1\n\n" + "y" * 100 + "\n" + "z" * 101 + "\n" + "w" * 250) == 1 + 1 + 1 + 2 + 3


def test_tools_modules_stay_small_except_those_contributing_lists_with_a_reason():
    """tools/ follows the library's rule, counted in lines of at most 100 characters."""
    allowed = set(re.findall(r"^- `(tools/\S+\.py)`: ", CONTRIBUTING, flags=re.M))
    assert len(allowed) <= 3
    sizes = {
        str(p.relative_to(ROOT)): _size(p.read_text(encoding="utf-8"))
        for p in sorted(TOOLS.rglob("*.py"))
    }
    assert "tools/pipeline.py" in sizes and "tools/checks/nbcheck.py" in sizes  # found at all
    over = {name: n for name, n in sizes.items() if n > MAX_LINES and name not in allowed}
    assert over == {}
