"""What the site's copy of an executed notebook gets that the notebook itself does not.

The run's parameters shown once, each figure's alt text, only the representation an output
names for the site (and the widget state still shown), the build machine's time under the
title, and a lab's launch of its exercise copy.
"""

from __future__ import annotations

from pathlib import Path

from tools import editions
from tools.execution.runs import LEARNER_DIR


def add_machine_time(
    nb: dict, seconds_text: str, machine: str, mode: str, lang: str = "en"
) -> None:
    """Say under a notebook's title how long the build machine took to run it, apart from the
    reading time its title states (the site only; the figure is the timing report's)."""
    title = nb["cells"][0]
    text = "".join(title["source"]).rstrip("\n")
    line = editions.text(lang, "machine_time").format(
        seconds=seconds_text, machine=machine, mode=editions.text(lang, f"mode_{mode}")
    )
    title["source"] = f"{text}\n\n{line}"


def add_exercise_launch(nb: dict, notebook: Path, config: dict, lang: str = "en") -> None:
    """Put the launch of a lab's exercise copy (Colab and download) under the lab's title, on
    the site only: the page itself is the solution, and a learner starts from the exercise."""
    from tools.notebook_meta import colab_url

    rel = f"labs/{LEARNER_DIR}/{notebook.name}"
    text = editions.text(lang, "do_the_lab").format(
        colab=colab_url(config, rel), download=f"{LEARNER_DIR}/{notebook.name}"
    )
    cell = {"cell_type": "markdown", "id": "open-the-exercise", "metadata": {}, "source": text}
    nb["cells"].insert(1, cell)


def show_run_parameters(nb: dict) -> None:
    """One parameters cell on the site: papermill's injected cell is hidden, and the values it
    set are noted under the notebook's own defaults, so the reader sees both once."""

    def tags(cell):
        return cell.setdefault("metadata", {}).setdefault("tags", [])

    injected = [c for c in nb["cells"] if "injected-parameters" in tags(c)]
    own = [c for c in nb["cells"] if "parameters" in tags(c)]
    if not injected or not own:
        return
    values = [
        line.strip()
        for line in "".join(injected[0]["source"]).splitlines()
        if line.strip() and not line.startswith("#")
    ]
    tags(injected[0]).append("remove-cell")
    source = "".join(own[0]["source"]).rstrip("\n")
    own[0]["source"] = source + "\n# this page was built with: " + "; ".join(values)


def add_image_alt_text(nb: dict) -> None:
    """Give each cell's figures the alt text the kernel read off them (gpulab.ui.alt_text).

    myst-nb takes an image's alt attribute from the cell's `mystnb.image` options, so a cell
    with several figures gets one text that describes each in turn.
    """
    for cell in nb["cells"]:
        alts = [
            out.get("metadata", {}).get("image/png", {}).get("alt")
            for out in cell.get("outputs", [])
            if "image/png" in out.get("data", {})
        ]
        alts = [a for a in alts if a]
        if not alts:
            continue
        text = (
            alts[0]
            if len(alts) == 1
            else " ".join(f"Figure {i} of {len(alts)}: {a}" for i, a in enumerate(alts, 1))
        )
        options = cell.setdefault("metadata", {}).setdefault("mystnb", {})
        options.setdefault("image", {})["alt"] = text


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def keep_site_representations(nb: dict) -> None:
    """Give the site only the representation an output names for it, and drop the widget
    state that no output shows any more.

    An output whose metadata says ``{"gpulab": {"site": MIME}}`` keeps only that MIME type on
    the site: chapter 2's calculator (gpulab.ui.widgets) is an ipywidget that needs a kernel,
    and its text/html runs gpulab in the page. Jupyter and Colab still get the whole bundle.
    The state of widgets left without a view goes too (all of it when none is left), so a page
    loads no widget manager for nothing: myst-nb adds its scripts only where state remains.
    """
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            keep = out.get("metadata", {}).get("gpulab", {}).get("site")
            if keep in out.get("data", {}):
                out["data"] = {keep: out["data"][keep]}
    widgets = nb.get("metadata", {}).get("widgets", {})
    state = widgets.get(WIDGET_STATE, {}).get("state")
    if state is None:
        return
    todo = [
        out["data"][WIDGET_VIEW]["model_id"]
        for cell in nb["cells"]
        for out in cell.get("outputs", [])
        if WIDGET_VIEW in out.get("data", {})
    ]
    kept: set[str] = set()
    while todo:  # the shown widgets and every model they refer to (children, layouts, styles)
        model = todo.pop()
        if model in state and model not in kept:
            kept.add(model)
            todo += _model_references(state[model])
    if kept:
        widgets[WIDGET_STATE]["state"] = {k: v for k, v in state.items() if k in kept}
    else:
        nb["metadata"].pop("widgets")


def _model_references(value) -> list[str]:
    """The widget models a model's saved state refers to: "IPY_MODEL_<id>" strings, and the
    views in the outputs an Output widget holds."""
    if isinstance(value, str):
        return [value.removeprefix("IPY_MODEL_")] if value.startswith("IPY_MODEL_") else []
    if isinstance(value, dict):
        view = value.get(WIDGET_VIEW)
        own = [view["model_id"]] if isinstance(view, dict) and "model_id" in view else []
        return own + [ref for v in value.values() for ref in _model_references(v)]
    if isinstance(value, list):
        return [ref for v in value for ref in _model_references(v)]
    return []
