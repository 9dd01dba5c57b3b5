"""next_steps, plots and widgets on faked reports (they hold no logic of their own beyond this)."""

from __future__ import annotations

import dataclasses

import matplotlib
import pytest

matplotlib.use("Agg")

from gpulab import calculator, doctor, hardware, memory, next_steps, plots, widgets  # noqa: E402

GIB = 1024**3


def _report(**changes) -> hardware.HardwareReport:
    """This machine's report with some fields replaced."""
    return dataclasses.replace(hardware.detect(), **changes)


def _gpu(**changes) -> hardware.GPUInfo:
    return dataclasses.replace(
        hardware.GPUInfo(
            index=0,
            name="NVIDIA GeForce RTX 4090",
            memory_total_bytes=24 * GIB,
            memory_free_bytes=20 * GIB,
        ),
        **changes,
    )


def test_next_steps_on_a_cpu_machine_points_to_colab():
    """Without any GPU the advice says the course runs on the CPU and where to find a GPU."""
    steps = next_steps.next_steps(
        _report(backend="cpu", gpus=[], gpus_present=0, nvidia_device_files=False)
    )
    assert "No GPU was found" in steps[0] and "Colab" in steps[0]
    assert "first lab" in steps[-1]


def test_next_steps_when_a_gpu_is_present_but_unused():
    """A GPU that PyTorch cannot use comes first: fix the doctor's findings."""
    steps = next_steps.next_steps(_report(backend="cpu", gpus=[_gpu()], gpus_present=1))
    assert "cannot use it" in steps[0]


def test_next_steps_on_a_cuda_gpu_names_it_and_its_memory():
    """On a GPU the advice names the card and its memory in GiB."""
    steps = next_steps.next_steps(_report(backend="cuda", gpus=[_gpu()], gpus_present=1))
    assert "RTX 4090 has 24 GiB" in steps[0]


def test_next_steps_low_ram_suggests_quick_mode():
    """Under 8 GiB of RAM the advice says to run in quick mode."""
    steps = next_steps.next_steps(_report(ram_total_bytes=4 * GIB))
    assert any("quick = True" in s for s in steps)


def test_memory_overview_has_a_bar_per_memory():
    """One bar pair per memory: RAM and each GPU."""
    fig = plots.memory_overview(
        _report(ram_total_bytes=16 * GIB, ram_available_bytes=8 * GIB, gpus=[_gpu(), _gpu(index=1)])
    )
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["RAM", "GPU 0: NVIDIA GeForce RTX 4090", "GPU 1: NVIDIA GeForce RTX 4090"]


def test_memory_overview_without_sizes_says_so():
    """A report without memory sizes gives a figure that says they could not be read."""
    fig = plots.memory_overview(_report(ram_total_bytes=None, gpus=[]))
    assert "could not be read" in fig.axes[0].texts[0].get_text()


def test_report_tabs_hold_report_findings_and_steps():
    """Three tabs; the findings are escaped HTML with their fixes."""
    finding = doctor.Finding("error", "x-y", "bad <thing>", "do this")
    tab = widgets.report_tabs(_report(), [finding], ["step one"])
    assert [tab.get_title(i) for i in range(3)] == ["Machine", "Doctor", "What next"]
    assert "bad &lt;thing&gt;" in tab.children[1].value and "do this" in tab.children[1].value
    assert "step one" in tab.children[2].value


def test_gpus_that_fit_sorts_by_memory_and_counts_cards():
    """A 30 GB estimate fits a 32 GB card but not a 24 GB one; two 24 GB cards hold it."""
    from gpulab import memory

    rows = {r["gpu"]: r for r in memory.gpus_that_fit(30e9)}
    assert rows["RTX 5090"]["fits"] and not rows["RTX 4090"]["fits"]
    two = {r["gpu"]: r for r in memory.gpus_that_fit(30e9, count=2)}
    assert two["RTX 4090"]["fits"] and two["RTX 4090"]["memory_gb"] == 48
    sizes = [r["memory_gb"] for r in memory.gpus_that_fit(1)]
    assert sizes == sorted(sizes)


def test_memory_breakdown_plot_stacks_parts():
    """One bar segment per non-zero part, one dashed line per capacity."""
    from gpulab import memory, models

    b = memory.estimate_inference(models.get("Llama-3-8B"), "int4")
    fig = plots.memory_breakdown({"a": b}, {"24 GB": 24e9})
    ax = fig.axes[0]
    assert (
        len(ax.patches) == 3
    )  # weights, KV cache, activations (the runtime's share is the card's)
    assert len(ax.get_lines()) == 1


def test_calculator_estimates_and_verdicts():
    """The calculator's logic: catalogue or pasted config, inference or training, verdict lines."""
    spec, b = calculator.estimate_for(
        "Llama-3-70B", "", "inference", "q4_k_m", "bf16", "bf16-mixed", "adamw", 4096, 1
    )
    lines = calculator.fit_verdicts(b, [("RTX 4090", 24 * 2**30)])
    # 24 GiB reported: (24 x 2**30 - 0.5 GiB) / 1.05 = 24.0e9 bytes left for tensors
    assert lines[0] == "your RTX 4090 (25.8 GB, 24.0 GB for tensors): does not fit"
    # the smallest cards that fit by name, then how many more (not every card in one paragraph)
    fitting = [r["gpu"] for r in memory.gpus_that_fit(b.total) if r["fits"]]
    assert len(fitting) > 5
    assert lines[-1] == f"fits on one: {', '.join(fitting[:5])} and {len(fitting) - 5} more"
    cfg = (
        '{"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, '
        '"num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1000}'
    )
    spec, b = calculator.estimate_for(
        calculator.PASTE, cfg, "training", "int4", "bf16", "fp32", "adamw", 128, 2
    )
    assert b.gradients == spec.n_params * 4


@pytest.mark.parametrize(
    "text, message", [("{not json", "not valid JSON"), ('{"model_type": "mamba"}', "mamba")]
)
def test_calculator_bad_config_says_why(text, message):
    """A pasted config that cannot be read raises a ValueError that says why."""
    with pytest.raises(ValueError, match=message):
        calculator.estimate_for(
            calculator.PASTE, text, "inference", "int4", "bf16", "bf16-mixed", "adamw", 4096, 1
        )


def test_memory_calculator_builds_its_controls():
    """The widget has its controls and an output area; training hides the inference formats."""
    ui = widgets.memory_calculator(None, default_model="Llama-3-8B")
    controls, _ = ui.children
    mode = controls.children[2]
    fmt = controls.children[3].children[0]
    mode.value = "training"
    assert fmt.layout.display == "none"


def test_memory_calculators_bundle_carries_the_in_page_calculator_for_the_site():
    """The widget's display bundle holds its view for Jupyter and, marked for the site, the
    in-page calculator at the widget's defaults (its own id, not chapter 6's), whose figures
    are the library's; the site's copy keeps only that calculator."""
    from IPython.core.interactiveshell import InteractiveShell

    from tests import calculator_oracle as oracle
    from tools.staging import site_copy

    data, metadata = InteractiveShell.instance().display_formatter.format(
        widgets.memory_calculator(None, default_model="Llama-3-70B")
    )
    assert site_copy.WIDGET_VIEW in data and metadata == {"gpulab": {"site": "text/html"}}
    page = data["text/html"]
    assert f'id="{widgets.SITE_CALCULATOR_UID}"' in page
    assert widgets.SITE_CALCULATOR_UID != "gpulab-memory-calculator"  # chapter 6's
    # the widget starts at int4 weights, a bf16 KV cache, 4096 tokens and batch 1
    want = oracle.memory_expected("Llama-3-70B", "int4", 4096, 1, "RTX 4090")
    assert f'data-out="total" data-value="{want["total"]}"' in page
    assert '<option value="Llama-3-70B" selected>' in page
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [{"output_type": "display_data", "data": data, "metadata": metadata}],
            }
        ],
        "metadata": {},
    }
    site_copy.keep_site_representations(nb)
    assert nb["cells"][0]["outputs"][0]["data"] == {"text/html": page}
