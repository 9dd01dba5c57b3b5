"""Start an attendee's Jupyter server: copy the course notebooks into their home, then serve.

JupyterHub runs this (``c.Spawner.cmd`` in ``jupyterhub_config.py``) as the attendee, in their
home folder. The first start copies the chapter notebooks, the learner copies of the labs (not
the solutions, unless GPULAB_HUB_SHARE_SOLUTIONS=1) and the labs' helper folders into
``~/gpulab-course/``; later starts copy only what is new, so an attendee's edits are never
overwritten. The copies open on the ``gpulab`` kernel (the one that sees the GPU). Then it
replaces itself with ``jupyterhub-singleuser`` from the same venv, with the hub's arguments.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

COURSE_FOLDER = "gpulab-course"  # under the attendee's home
# (folder in the course, folder in the attendee's copy) for the notebooks attendees work in.
NOTEBOOK_SOURCES = (
    ("notebooks", "notebooks"),
    ("labs/learner", "labs"),
    ("book/appendix", "appendix"),
)
SOLUTIONS = ("labs", "solutions")  # copied only when the instructor shares them
KERNELSPEC = {"name": "gpulab", "display_name": "Python 3 (gpulab)", "language": "python"}


def _copy_notebook(source: Path, target: Path) -> None:
    """Copy one notebook, set to open on the gpulab kernel."""
    nb = json.loads(source.read_text(encoding="utf-8"))
    nb.setdefault("metadata", {})["kernelspec"] = dict(KERNELSPEC)
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def copy_course(course: Path, home: Path, share_solutions: bool = False) -> list[Path]:
    """Copy what is missing of the course into ``home/gpulab-course``; return the new files."""
    dest = home / COURSE_FOLDER
    sources = list(NOTEBOOK_SOURCES) + ([SOLUTIONS] if share_solutions else [])
    added = []
    for src_rel, dst_rel in sources:
        src, dst = course / src_rel, dest / dst_rel
        for notebook in sorted(src.glob("*.ipynb")):
            target = dst / notebook.name
            if not target.exists():
                dst.mkdir(parents=True, exist_ok=True)
                _copy_notebook(notebook, target)
                added.append(target)
    # Folders beside the labs (scripts a lab runs, e.g. labs/07_distributed/) go along.
    for folder in sorted(p for p in (course / "labs").glob("*/") if p.is_dir()):
        if folder.name in ("learner", "__pycache__") or folder.name.startswith("."):
            continue
        for path in sorted(folder.rglob("*")):
            target = dest / "labs" / path.relative_to(course / "labs")
            if path.is_file() and "__pycache__" not in path.parts and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
                added.append(target)
    return added


def main(argv: list[str]) -> None:
    """Copy the course into $HOME, then exec jupyterhub-singleuser with ``argv``."""
    course = Path(os.environ.get("GPULAB_COURSE_DIR") or Path(__file__).resolve().parents[1])
    home = Path(os.environ.get("HOME") or os.getcwd())
    share = os.environ.get("GPULAB_HUB_SHARE_SOLUTIONS", "0") == "1"
    added = copy_course(course, home, share_solutions=share)
    print(f"gpulab: {len(added)} course file(s) copied into {home / COURSE_FOLDER}", flush=True)
    server = Path(sys.executable).parent / "jupyterhub-singleuser"
    os.execv(server, [str(server), *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
