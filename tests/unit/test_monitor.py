"""Throttling watch (chapter 5): samples while a load runs, and the summary reads them right."""

import pytest

from gpulab import monitor
from gpulab.errors import GpulabConfigError


def test_watch_runs_the_load_and_samples_the_cpu():
    calls = []
    w = monitor.watch(lambda: calls.append(1), "cpu", interval_s=0.02, min_seconds=0.1)
    assert calls, "the load never ran"
    assert w.device == "cpu"
    assert w.note
    assert w.summary()["samples"] == len(w.samples)


def test_summary_ignores_idle_clock_events():
    w = monitor.Watch("cuda:0", max_clock_mhz=2000)
    w.samples = [
        monitor.Sample(0.0, 210, 35, 20, 0, ("GpuIdle",)),
        monitor.Sample(0.1, 1980, 70, 300, 100, ()),
        monitor.Sample(0.2, 1500, 88, 450, 100, ("SwPowerCap", "HwThermalSlowdown")),
    ]
    s = w.summary()
    assert s["reasons under load"] == ["HwThermalSlowdown", "SwPowerCap"]
    assert s["clock_mhz min"] == 210 and s["clock_mhz max"] == 1980
    assert s["temperature_c median"] == 70


def test_idle_reasons_alone_are_not_a_finding():
    w = monitor.Watch("cuda:0")
    w.samples = [monitor.Sample(0.0, 210, 35, 20, 0, ("GpuIdle",))]
    assert w.summary()["reasons under load"] == []


def test_bad_arguments_are_named():
    with pytest.raises(GpulabConfigError, match="load"):
        monitor.watch(42)
    with pytest.raises(GpulabConfigError, match="interval_s"):
        monitor.watch(lambda: None, interval_s=0)
