"""Progress bars on long sweeps, and none in the executed pages (every lab).

The execution pipeline sets GPULAB_PROGRESS=0: a bar frozen at 0% in an executed copy tells
a reader of the site nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from gpulab.core.validate import checked

__all__ = ["progress_bar"]


@checked
def progress_bar(items: Iterable, description: str, show: bool = True) -> Iterable:
    """Items wrapped in a progress bar when asked for (tqdm's notebook bar in Jupyter)."""
    if not show or os.environ.get("GPULAB_PROGRESS", "1") == "0":
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=description, leave=False)
