"""Install the two committed kernelspecs into the running Python's prefix (the venv).

The committed specs start their argv with `python` so that they work through JUPYTER_PATH
from any environment; the installed copies name this interpreter by its absolute path, so
that JupyterLab or VS Code started without the venv on PATH still uses the course kernel.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "jupyter" / "kernels"


def install(prefix: Path = Path(sys.prefix), python: str = sys.executable) -> list[Path]:
    """Copy each committed kernelspec to prefix/share/jupyter/kernels with an absolute argv[0]."""
    installed = []
    for spec_dir in sorted(p for p in SPECS.iterdir() if (p / "kernel.json").is_file()):
        target = prefix / "share" / "jupyter" / "kernels" / spec_dir.name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(spec_dir, target)
        spec = json.loads((spec_dir / "kernel.json").read_text())
        spec["argv"][0] = python
        (target / "kernel.json").write_text(json.dumps(spec, indent=2) + "\n")
        installed.append(target)
    return installed


if __name__ == "__main__":
    for path in install():
        print(f"kernel installed: {path}")
