"""The figures the introduction pastes: the map's minutes, stop by stop, and its total.

Each is the reader's time its notebook's title cell states (``gpulab.course_map``), so the
page's map and total follow the notebooks: ``map_nb02_min`` is notebook 2's minutes,
``map_lab02_min`` lab 2's, ``map_factcheck_min`` and ``map_published_min`` the appendices', and
``map_total_hours`` with ``map_total_rest_min`` their sum in hours and minutes (in minutes
alone, the sum would share its value with a figure of another chapter).
"""

from __future__ import annotations

from pathlib import PurePosixPath

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked
from gpulab.reference import course_map

__all__ = ["figure_name", "figures"]

# The appendices' names on the map, by notebook stem.
_APPENDICES = {"fact_check": "factcheck", "published_measurements": "published"}


@checked
def figure_name(path: str) -> str:
    """The figure holding a stop's minutes: notebooks/02_x -> map_nb02_min, labs/02_x ->
    map_lab02_min, book/appendix/fact_check -> map_factcheck_min."""
    p = PurePosixPath(path)
    if not (p.parent.name in ("notebooks", "labs") or p.stem in _APPENDICES):
        raise GpulabConfigError(
            f"path={path!r} is not a stop of the course: a notebook, a lab or an appendix", "path"
        )
    if p.parent.name == "appendix":
        return f"map_{_APPENDICES[p.stem]}_min"
    kind = {"notebooks": "nb", "labs": "lab"}[p.parent.name]
    return f"map_{kind}{p.stem[:2]}_min"


def figures() -> dict[str, int]:
    """The introduction's figures by name: each stop's minutes, then the total."""
    minutes = course_map.minutes()
    total = course_map.total_minutes()
    return {
        **{figure_name(path): m for path, m in minutes.items()},
        "map_total_hours": total // 60,
        "map_total_rest_min": total % 60,
    }
