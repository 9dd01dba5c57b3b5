"""next_steps, plots and widgets on faked reports (they hold no logic of their own beyond this)."""

from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")

from gpulab import doctor, hardware, next_steps, plots, widgets  # noqa: E402

GIB = 1024**3


def _report(**changes) -> hardware.HardwareReport:
    """This machine's report with some fields replaced."""
    return dataclasses.replace(hardware.detect(), **changes)


def _gpu(**changes) -> hardware.GPUInfo:
    return dataclasses.replace(hardware.GPUInfo(index=0, name="NVIDIA GeForce RTX 4090",
                                                memory_total_bytes=24 * GIB,
                                                memory_free_bytes=20 * GIB), **changes)


def test_next_steps_on_a_cpu_machine_points_to_colab():
    """Without any GPU the advice says the course runs on the CPU and where to find a GPU."""
    steps = next_steps.next_steps(_report(backend="cpu", gpus=[], gpus_present=0, nvidia_device_files=False))
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
    fig = plots.memory_overview(_report(ram_total_bytes=16 * GIB, ram_available_bytes=8 * GIB,
                                        gpus=[_gpu(), _gpu(index=1)]))
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
