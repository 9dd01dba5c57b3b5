"""Chapter 6's candidate GPUs as a table that fits the page.

A `gpulab.choose.Candidate` carries a dozen fields; a reader choosing a card wants the card,
whether the workload fits, the memory needed against the memory offered, the speed bound of
the task, the power and the price. So the table has those seven columns, with words and units
in the headers, the card (and its count) first, and only the bound the workload's task uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpulab.core.units import GB
from gpulab.core.validate import checked
from gpulab.estimate.choose import Candidate, Task
from gpulab.ui.tables import Table

__all__ = ["BOUNDS", "candidate_table", "card_name"]

# The speed bound each task is judged by: (column title, Candidate attribute)
BOUNDS = {
    "inference": ("decode bound (tokens/s per user)", "decode_tokens_per_s_per_user"),
    "fine-tuning": ("training bound (tokens/s)", "training_tokens_per_s_bound"),
}


@checked
def card_name(candidate: Candidate) -> str:
    """The card and how many: "RTX 4090", or "2 x RTX 3090"."""
    return candidate.gpu if candidate.count == 1 else f"{candidate.count} x {candidate.gpu}"


@checked
def candidate_table(candidates: Sequence[Candidate], title: str, task: Task = "inference") -> Table:
    """The candidates as a table: card, fits, GB needed and offered, the task's bound, W, price."""
    bound_title, bound_field = BOUNDS[task]
    rows = [
        {
            "GPU": card_name(c),
            "fits": c.fits,
            "needed (GB)": c.memory_needed_bytes / GB,
            "offered (GB)": c.memory_available_bytes / GB,
            # a bound for a workload the card cannot hold would read as a speed it could reach
            bound_title: getattr(c, bound_field) if c.fits else None,
            "board power (W)": c.power_w,
            # dollars at launch, where the card had a list price (datacenter cards have none)
            "launch price": None if c.price_usd is None else f"${c.price_usd:,.0f}",
        }
        for c in candidates
    ]
    columns = [
        "GPU",
        "fits",
        "needed (GB)",
        "offered (GB)",
        bound_title,
        "board power (W)",
        "launch price",
    ]
    return Table(
        rows,
        columns,
        title=title,
        key_columns=1,
        formats={
            "fits": "yes/no",
            "needed (GB)": ".1f",
            "offered (GB)": ".0f",
            bound_title: ",.0f|does not fit",
            "board power (W)": ",.0f",
            "launch price": "|none",
        },
    )
