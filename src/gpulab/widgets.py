"""ipywidgets front ends over the library; no logic of their own (DESIGN.md)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from gpulab.doctor import findings_html

if TYPE_CHECKING:
    import ipywidgets

    from gpulab.doctor import Finding
    from gpulab.hardware import HardwareReport


def _list_html(items: list[str]) -> str:
    """An HTML bullet list of plain-text items."""
    return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"


def report_tabs(report: HardwareReport, findings: list[Finding], steps: list[str]) -> ipywidgets.Tab:
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


PASTE = "paste a config.json"


def calculator_lines(spec, breakdown, own_gpus: list[tuple[str, int]]) -> list[str]:
    """The calculator's verdicts: the reader's GPUs, then every table GPU the estimate fits on."""
    from gpulab import memory

    lines = [f"your {name} ({total / 1e9:.0f} GB): "
             f"{'fits' if breakdown.total <= total else 'does not fit'}" for name, total in own_gpus]
    fitting = [r["gpu"] for r in memory.gpus_that_fit(breakdown.total) if r["fits"]]
    lines.append("fits on one: " + (", ".join(fitting) if fitting else "no single GPU in the table"))
    return lines


def calculator_estimate(model: str, config_text: str, mode: str, weights: str, kv_cache: str,
                        precision: str, optimizer: str, context: int, batch: int):
    """(spec, breakdown) for the calculator's inputs; raises ValueError naming a bad input."""
    import json

    from gpulab import memory, models

    if model == PASTE:
        try:
            cfg = json.loads(config_text or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"config.json is not valid JSON: {exc}") from None
        spec = memory.ModelSpec.from_hf_config(cfg)
    else:
        spec = models.get(model)
    if mode == "inference":
        return spec, memory.estimate_inference(spec, weights, kv_cache, batch, context)
    return spec, memory.estimate_training(spec, precision, optimizer, batch, context)


def memory_calculator(report: HardwareReport | None = None, default_model: str = "Llama-3-8B"):
    """A calculator: model (catalogue or pasted config.json), format, context, batch, mode (chapter 2).

    Shows a stacked bar of the estimate and the GPUs of `gpulab.specs` it fits on, the
    reader's own GPU first. Needs a running kernel; the static site has chapter 6's version.
    """
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    from gpulab import memory, models, plots

    model = w.Dropdown(options=[*models.names(), PASTE], value=default_model, description="model")
    config = w.Textarea(placeholder='{"model_type": "llama", "hidden_size": 4096, ...}',
                        layout=w.Layout(width="95%", height="90px", display="none"))
    mode = w.ToggleButtons(options=["inference", "training"], value="inference")
    fmt = w.Dropdown(options=list(memory.WEIGHT_FORMATS), value="int4", description="weights")
    kv = w.Dropdown(options=list(memory.KV_FORMATS), value="bf16", description="KV cache")
    precision = w.Dropdown(options=list(memory.TRAINING_PRECISIONS), value="bf16-mixed",
                           description="precision")
    optimizer = w.Dropdown(options=list(memory.OPTIMIZERS), value="adamw", description="optimizer")
    context = w.IntText(value=4096, description="context")
    batch = w.IntText(value=1, description="batch")
    out = w.Output()
    own = [(g.name, g.memory_total_bytes) for g in (report.gpus if report else []) if g.memory_total_bytes]

    def update(*_):
        config.layout.display = "block" if model.value == PASTE else "none"
        for box in (fmt, kv):
            box.layout.display = "flex" if mode.value == "inference" else "none"
        for box in (precision, optimizer):
            box.layout.display = "flex" if mode.value == "training" else "none"
        out.clear_output(wait=True)
        with out:
            try:
                spec, b = calculator_estimate(model.value, config.value, mode.value, fmt.value,
                                              kv.value, precision.value, optimizer.value,
                                              context.value, batch.value)
            except (ValueError, KeyError) as exc:
                print(f"Cannot estimate: {exc}")
                return
            fig = plots.memory_breakdown({spec.name or "model": b}, dict(own),
                                         title=f"{spec.name}: {b.total / 1e9:.1f} GB ({mode.value})")
            display(fig)
            plt.close(fig)  # shown once, inside the output area
            for line in calculator_lines(spec, b, own):
                print(line)

    for control in (model, config, mode, fmt, kv, precision, optimizer, context, batch):
        control.observe(update, names="value")
    update()
    controls = w.VBox([model, config, mode, w.HBox([fmt, kv]), w.HBox([precision, optimizer]),
                       w.HBox([context, batch])])
    return w.VBox([controls, out])
