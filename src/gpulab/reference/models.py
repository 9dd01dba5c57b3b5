"""A catalogue of real model architectures, each from its transcribed config.json (chapter 2).

Every entry is a file ``data/model_configs/<name>.json`` holding the model's ``config.json``
as published on huggingface.co (copied into the repository: nothing is downloaded), the URL
it comes from, and the published parameter count with where that figure is stated. The
chapter and the tests check that the count computed from the architecture
(:class:`gpulab.modelspec.ModelSpec`) matches the published one.

    >>> from gpulab import models
    >>> spec = models.get("Llama-3-8B")
    >>> spec.n_params
    8030261248
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from gpulab.core.constraints import did_you_mean_text, show
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked
from gpulab.reference.modelspec import ModelSpec

__all__ = ["CATALOGUE", "CatalogueEntry", "get", "load_catalogue", "names"]

_DATA = "data/model_configs"


@dataclass(frozen=True)
class CatalogueEntry:
    """One named model: its config.json, where it comes from, and its published size."""

    name: str  # the catalogue key, e.g. "Llama-3-8B"
    config: dict = field(hash=False)  # the transcribed config.json; treat as read-only
    source: str  # URL of the config.json on huggingface.co
    published_params: int | None  # total parameters as published; None if no source gives it
    published_params_source: str  # where that figure is stated (URL and quote or method)
    published_active_params: int | None = None  # per-token parameters of an MoE, as published
    published_active_params_source: str = ""
    transcribed_from: str = ""  # where the copy of config.json was read (no download at run time)
    note: str = ""  # what differs from the model the name suggests, if anything

    @functools.cached_property
    def spec(self) -> ModelSpec:
        """The architecture: ModelSpec.from_hf_config(config, name), with the source attached.

        Parsed once per entry (a chapter's figures ask for the same model hundreds of times);
        a ModelSpec is frozen, so every caller may share it.
        """
        spec = ModelSpec.from_hf_config(self.config, self.name)
        return dataclasses.replace(spec, source=self.source)


def _entry(name: str, data: dict[str, Any]) -> CatalogueEntry:
    """Build an entry from one parsed data/model_configs/<name>.json file."""
    known = {f.name for f in dataclasses.fields(CatalogueEntry)} - {"name"}
    unknown = set(data) - known
    if unknown:
        raise ValueError(
            f"{name}.json has unknown fields {sorted(unknown)}; allowed: {sorted(known)}"
        )
    return CatalogueEntry(name=name, **data)


def load_catalogue() -> dict[str, CatalogueEntry]:
    """Read every data/model_configs/*.json shipped with gpulab, keyed by file name."""
    folder = resources.files("gpulab").joinpath(_DATA)
    entries = {}
    for item in sorted(folder.iterdir(), key=lambda p: p.name.lower()):
        if item.name.endswith(".json"):
            name = item.name[: -len(".json")]
            entries[name] = _entry(name, json.loads(item.read_text(encoding="utf-8")))
    return entries


CATALOGUE: dict[str, CatalogueEntry] = load_catalogue()  # name -> entry; do not modify


def names() -> list[str]:
    """The catalogue's model names, in a stable order."""
    return list(CATALOGUE)


@checked
def get(model: str) -> ModelSpec:
    """The ModelSpec of a catalogue model by name (case-insensitive); unknown names list all."""
    entry = CATALOGUE.get(model)
    if entry is None:
        folded = {key.lower(): key for key in CATALOGUE}
        entry = CATALOGUE.get(folded.get(model.lower(), ""))
    if entry is None:
        hint = did_you_mean_text(model, CATALOGUE)
        raise GpulabConfigError(
            f"model={show(model)} is not in the catalogue; {hint + ' ' if hint else ''}"
            f"choose one of: {', '.join(names())}",
            "model",
        )
    return entry.spec
