"""Throttling watch (chapter 5): samples while a load runs, and the summary reads them right."""

import pytest

from gpulab import monitor
from gpulab.core.errors import GpulabConfigError
from gpulab.machine.hardware import THROTTLE_REASONS


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


def test_the_gpu_sampler_reads_nvml(monkeypatch):
    """On a (fake) NVML, a sample holds the SM clock, temperature, power, load and reasons."""
    import sys

    from tests.unit.test_hardware import two_gpus

    fake = two_gpus()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    read, max_clock, note = monitor._gpu_sampler(0)
    assert note.startswith("NVML readings")
    handle = fake.nvmlDeviceGetHandleByIndex(0)
    assert max_clock == fake.nvmlDeviceGetMaxClockInfo(handle, fake.NVML_CLOCK_SM)
    s = read(0.5)
    assert s.t == 0.5
    assert s.clock_mhz == fake.nvmlDeviceGetClockInfo(handle, fake.NVML_CLOCK_SM)
    assert s.temperature_c == fake.nvmlDeviceGetTemperature(handle, fake.NVML_TEMPERATURE_GPU)
    assert s.power_w == fake.nvmlDeviceGetPowerUsage(handle) / 1000
    assert s.utilization_percent == fake.nvmlDeviceGetUtilizationRates(handle).gpu
    assert set(s.reasons) <= set(THROTTLE_REASONS)


def test_no_nvml_means_no_gpu_readings_and_says_why(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    read, max_clock, note = monitor._gpu_sampler(0)
    assert read is None and max_clock is None
    assert "NVML unavailable" in note
