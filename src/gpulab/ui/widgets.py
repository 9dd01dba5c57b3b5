"""ipywidgets front ends over the library; no logic of their own (docs/design.md).

What a widget shows is computed by the layers below (the memory calculator's estimate and
verdicts by ``gpulab.calculator``); a widget only lays it out and redraws it.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from gpulab.core.validate import checked
from gpulab.machine.doctor import findings_html
from gpulab.machine.report import HardwareReport  # at run time: @checked reads the annotations
from gpulab.machine.rules import Finding

if TYPE_CHECKING:
    import ipywidgets

__all__ = ["SITE_CALCULATOR_UID", "memory_calculator", "report_tabs", "with_site_html"]


def _list_html(items: list[str]) -> str:
    """An HTML bullet list of plain-text items."""
    return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"


@checked
def report_tabs(
    report: HardwareReport, findings: list[Finding], steps: list[str]
) -> ipywidgets.Tab:
    """Tabs with the hardware report, the doctor's findings and the next steps (notebook 00)."""
    import ipywidgets as w

    pages = {
        "Machine": report._repr_html_(),
        "Doctor": findings_html(findings),
        "What next": _list_html(steps),
    }
    tab = w.Tab(children=[w.HTML(value=v) for v in pages.values()])
    for i, title in enumerate(pages):
        tab.set_title(i, title)
    return tab


# The id of chapter 2's in-page calculator, apart from chapter 6's (gpulab.ui.calculators).
SITE_CALCULATOR_UID = "gpulab-memory-calculator-ch02"


@checked
def with_site_html(widget: ipywidgets.Widget, site_html: str) -> ipywidgets.Widget:
    """Give a widget's display bundle a text/html version, marked as the one the site shows.

    A saved widget on the static site has no kernel behind it, so it looks live and does
    nothing; tools/staging/site_copy.py's keep_site_representations keeps only the
    representation the output's metadata names (``{"gpulab": {"site": "text/html"}}``).
    Jupyter and Colab show the widget, which their widget renderers prefer to the HTML.
    """
    widget_bundle = widget._repr_mimebundle_

    def bundle(**kwargs):
        data = widget_bundle(**kwargs)
        return data | {"text/html": site_html}, {"gpulab": {"site": "text/html"}}

    # an instance attribute, as ipywidgets' own close() sets one
    widget._repr_mimebundle_ = bundle
    return widget


@checked
def memory_calculator(report: HardwareReport | None = None, default_model: str = "Llama-3-8B"):
    """Chapter 2's calculator: model (listed or a pasted config.json), format, context, batch, mode.

    Shows a stacked bar of the estimate and the GPUs of `gpulab.specs` it fits on, the
    reader's own GPU first. Needs a running kernel; on the static site the same output shows
    the in-page calculator of gpulab.ui.calculators instead, at the widget's defaults.
    """
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    from gpulab.estimate import memory
    from gpulab.estimate.calculator import PASTE, estimate_for, fit_verdicts
    from gpulab.reference import formats, models, specs
    from gpulab.ui import calculators, plots

    model = w.Dropdown(options=[*models.names(), PASTE], value=default_model, description="model")
    config = w.Textarea(
        placeholder='{"model_type": "llama", "hidden_size": 4096, ...}',
        layout=w.Layout(width="95%", height="90px", display="none"),
    )
    mode = w.ToggleButtons(options=["inference", "training"], value="inference")
    fmt = w.Dropdown(options=list(formats.WEIGHT_FORMATS), value="int4", description="weights")
    kv = w.Dropdown(options=list(formats.KV_FORMATS), value="bf16", description="KV cache")
    precision = w.Dropdown(
        options=list(formats.TRAINING_PRECISIONS), value="bf16-mixed", description="precision"
    )
    optimizer = w.Dropdown(options=list(memory.OPTIMIZERS), value="adamw", description="optimizer")
    context = w.IntText(value=4096, description="context")
    batch = w.IntText(value=1, description="batch")
    out = w.Output()
    own = [
        (g.name, g.memory_total_bytes)
        for g in (report.gpus if report else [])
        if g.memory_total_bytes
    ]

    def update(*_):
        config.layout.display = "block" if model.value == PASTE else "none"
        for box in (fmt, kv):
            box.layout.display = "flex" if mode.value == "inference" else "none"
        for box in (precision, optimizer):
            box.layout.display = "flex" if mode.value == "training" else "none"
        out.clear_output(wait=True)
        with out:
            try:
                spec, b = estimate_for(
                    model.value,
                    config.value,
                    mode.value,
                    fmt.value,
                    kv.value,
                    precision.value,
                    optimizer.value,
                    context.value,
                    batch.value,
                )
            except ValueError as exc:
                print(f"Cannot estimate: {exc}")
                return
            # the lines are what each card leaves for tensors, as the verdicts below compare
            lines = {
                name: specs.tensor_capacity(total, apple=name.lower().startswith("apple"))
                for name, total in own
            }
            fig = plots.memory_breakdown(
                {spec.name or "model": b},
                lines,
                title=f"{spec.name}: {b.total / 1e9:.1f} GB ({mode.value})",
            )
            display(fig)
            plt.close(fig)  # shown once, inside the output area
            for note in spec.notes:  # e.g. a pasted config's own quantization, not applied
                print(f"Note: {note}")
            for line in fit_verdicts(b, own):
                print(line)

    for control in (model, config, mode, fmt, kv, precision, optimizer, context, batch):
        control.observe(update, names="value")
    update()
    controls = w.VBox(
        [
            model,
            config,
            mode,
            w.HBox([fmt, kv]),
            w.HBox([precision, optimizer]),
            w.HBox([context, batch]),
        ]
    )
    site = calculators.memory_calculator_html(
        uid=SITE_CALCULATOR_UID,
        model=model.value,
        weights=fmt.value,
        kv_cache=kv.value,
        context=context.value,
        users=batch.value,
    )
    return with_site_html(w.VBox([controls, out]), site)
