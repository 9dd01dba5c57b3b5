"""How CUDA reads CUDA_VISIBLE_DEVICES (and HIP and ROCR their variables): which GPUs are visible.

A process sees the GPUs the variable lists, in its order, up to the first entry CUDA cannot
use; an empty value or "-1" hides them all. The course's CPU kernel sets it to "" on purpose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated

from gpulab.core.validate import OneOf, checked

__all__ = ["VISIBILITY_VARS", "VisibleDevices", "parse_visible_devices", "select_visible"]

VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


@dataclass
class VisibleDevices:
    """How CUDA will read a CUDA_VISIBLE_DEVICES value."""

    all_visible: bool  # the variable is not set
    entries: list[int | str] = field(default_factory=list)  # indices, "GPU-..." / "MIG-..." ids
    note: str | None = None  # why some or all entries were dropped

    @property
    def hides_all(self) -> bool:
        """True when the value leaves CUDA no GPU at all."""
        return not self.all_visible and not self.entries


@checked
def parse_visible_devices(
    value: str | None,
    name: Annotated[str, OneOf(VISIBILITY_VARS, "visibility variable")] = "CUDA_VISIBLE_DEVICES",
) -> VisibleDevices:
    """Parse a *_VISIBLE_DEVICES value as CUDA does: read entries until the first invalid one."""
    if value is None:
        return VisibleDevices(all_visible=True)
    text = value.strip()
    if text == "":
        return VisibleDevices(all_visible=False, note=f"GPUs hidden: {name} is set to ''")
    entries: list[int | str] = []
    for raw in text.split(","):
        item = raw.strip()
        # ASCII digits only, as CUDA reads them: Python's \d and int() also accept fullwidth
        # (U+FF10) and Arabic-Indic (U+0660) digits, which CUDA stops at.
        if re.fullmatch(r"[0-9]+", item):
            entries.append(int(item))
        elif item.startswith(("GPU-", "MIG-")) and len(item) > 4:
            entries.append(item)
        else:
            # CUDA stops at the first entry it cannot use ("-1" is the usual way to hide all).
            break
    if not entries:
        if text == "-1":
            note = f"GPUs hidden: {name} is set to '-1'"
        else:
            note = (
                f"{name}={value!r} is not a list of GPU indices or UUIDs; "
                f"{'CUDA' if name == 'CUDA_VISIBLE_DEVICES' else 'the runtime'} will see no GPU"
            )
        return VisibleDevices(all_visible=False, note=note)
    if len(entries) < len(text.split(",")):
        kept = ",".join(str(e) for e in entries)
        return VisibleDevices(
            all_visible=False,
            entries=entries,
            note=f"{name}={value!r}: only the entries before the first invalid one count ({kept})",
        )
    return VisibleDevices(all_visible=False, entries=entries)


@checked
def select_visible(
    indices_uuids: list[tuple[int, str | None]], visible: VisibleDevices
) -> tuple[list[int], list[str]]:
    """Return the NVML indices that CUDA_VISIBLE_DEVICES leaves visible, in its order, and notes."""
    if visible.all_visible:
        return [i for i, _ in indices_uuids], []
    known = {i for i, _ in indices_uuids}
    chosen: list[int] = []
    notes: list[str] = []
    for entry in visible.entries:
        if isinstance(entry, int):
            if entry not in known:
                # CUDA also stops at an index that does not exist.
                notes.append(f"CUDA_VISIBLE_DEVICES names GPU {entry}, which does not exist")
                break
            match = entry
        elif entry.startswith("MIG-"):
            # MIG instances are slices of a GPU; NVML lists the parent, which we cannot pick out
            # here.
            notes.append("CUDA_VISIBLE_DEVICES names MIG instances; all GPUs NVML lists are shown")
            return [i for i, _ in indices_uuids], notes
        else:
            # CUDA accepts any unique prefix of a GPU UUID.
            hits = [i for i, uuid in indices_uuids if uuid and uuid.startswith(entry)]
            if len(hits) != 1:
                notes.append(f"CUDA_VISIBLE_DEVICES entry {entry!r} matches {len(hits)} GPUs")
                break
            match = hits[0]
        if match not in chosen:
            chosen.append(match)
    return chosen, notes
