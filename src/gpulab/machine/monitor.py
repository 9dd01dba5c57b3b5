"""Watch clocks, temperature and power while a load runs: is the device throttling? (chapter 5)

An idle GPU lowers its clocks to save power; that is not throttling. Throttling is a loaded
GPU held below its clocks by its power limit (SwPowerCap) or by heat (the thermal slowdowns),
and NVML reports which. Temperature alone says little: a GPU at 83 C that keeps its clocks is
working as designed; the question is whether the clocks drop while the work runs.
On a CPU the operating system may report the current frequency (psutil), and in a VM it
often reports only the host's nominal clock: the sample says where each figure came from.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpulab.core.validate import NonNegativeFloat, PositiveFloat, checked
from gpulab.machine.nvml import import_nvml, throttle_reasons
from gpulab.machine.report import plausible

if TYPE_CHECKING:  # imported when a watch starts
    import torch

__all__ = ["Sample", "Watch", "watch"]


@dataclass(frozen=True)
class Sample:
    """One reading, `t` seconds after the watch started; None where the device does not say."""

    t: float
    clock_mhz: float | None = None  # GPU SM clock, or the mean CPU core frequency
    temperature_c: float | None = None
    power_w: float | None = None
    utilization_percent: float | None = None
    reasons: tuple[str, ...] = ()  # NVML's clock-event reasons at that moment


@dataclass
class Watch:
    """Everything sampled during one load."""

    device: str  # "cuda:0" or "cpu"
    samples: list[Sample] = field(default_factory=list)
    max_clock_mhz: float | None = None  # the GPU's maximum SM clock, when known
    note: str = ""  # where the figures come from, or why there are none

    def summary(self) -> dict:
        """Median and extreme readings, and every clock-event reason seen under load."""

        def values(name):
            return [getattr(s, name) for s in self.samples if getattr(s, name) is not None]

        out = {"samples": len(self.samples)}
        for name in ("clock_mhz", "temperature_c", "power_w", "utilization_percent"):
            vals = values(name)
            if vals:
                out[f"{name} median"] = statistics.median(vals)
                out[f"{name} min"] = min(vals)
                out[f"{name} max"] = max(vals)
        busy = [s for s in self.samples if not s.utilization_percent or s.utilization_percent > 50]
        out["reasons under load"] = sorted({r for s in busy for r in s.reasons if r != "GpuIdle"})
        return out


def _gpu_sampler(index: int) -> tuple[Callable[[float], Sample] | None, float | None, str]:
    """A function reading NVML for GPU `index`, its maximum SM clock, and a note."""
    nvml, why = import_nvml()
    if nvml is None:
        return None, None, f"NVML unavailable ({why}): no clock readings"
    try:
        nvml.nvmlInit()
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:  # noqa: BLE001 - any NVML failure means: no readings, say why
        return None, None, f"NVML unavailable ({type(exc).__name__}): no clock readings"

    def read(t: float) -> Sample:
        # each value through report.plausible: a driver's "N/A" or NaN is None, not a number
        notes: list[str] = []
        clock = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
        temp = nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
        power = nvml.nvmlDeviceGetPowerUsage(handle)
        util = nvml.nvmlDeviceGetUtilizationRates(handle).gpu
        reasons = throttle_reasons(nvml, handle, "GPU", notes) or []
        watts = plausible("power_draw_w", power / 1000 if isinstance(power, (int, float)) else None)
        return Sample(
            t,
            plausible("sm_clock_mhz", clock),
            plausible("temperature_c", temp),
            watts,
            plausible("utilization_gpu_percent", util),
            tuple(reasons),
        )

    try:
        max_clock = nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)
    except Exception:  # noqa: BLE001
        max_clock = None
    return read, max_clock, "NVML readings of the GPU (SM clock, temperature, board power)"


def _cpu_sampler() -> tuple[Callable[[float], Sample] | None, str]:
    """A function reading the CPU's reported frequency and temperature through psutil."""
    import psutil

    freq = psutil.cpu_freq(percpu=True)
    if not freq:
        return None, "this OS reports no CPU frequency"

    def temperature() -> float | None:
        sensors = getattr(psutil, "sensors_temperatures", lambda: {})() or {}
        readings = [r.current for group in sensors.values() for r in group if r.current]
        return max(readings) if readings else None

    def read(t: float) -> Sample:
        clocks = [f.current for f in psutil.cpu_freq(percpu=True) or []]
        util = psutil.cpu_percent(interval=None)
        return Sample(t, statistics.mean(clocks) if clocks else None, temperature(), None, util)

    note = "the CPU frequency the OS reports"
    if all(f.max == 0 for f in freq):
        note += " (no maximum exposed: in a VM this is often the host's nominal clock, not live)"
    return read, note


@checked
def watch(
    load: Callable[[], Any],
    device: torch.device | str = "cpu",
    interval_s: PositiveFloat = 0.1,
    min_seconds: NonNegativeFloat = 1.0,
) -> Watch:
    """Run `load()` repeatedly for at least `min_seconds` while a thread samples the device.

    Samples are taken every `interval_s` after the start, so `min_seconds` should be several
    intervals long.
    """
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        read, max_clock, note = _gpu_sampler(index)
    elif dev.type == "cpu":
        (read, note), max_clock = _cpu_sampler(), None
    else:
        read, max_clock, note = None, None, f"no sensors are read for {dev.type} devices"
    result = Watch(str(dev), max_clock_mhz=max_clock, note=note)
    stop = threading.Event()
    start = time.perf_counter()

    def sample_loop():
        # utilisation is measured since the previous call in the same thread (psutil keeps it
        # per thread), so one reading is discarded and the first kept one comes an interval in
        read(0.0)
        while not stop.wait(interval_s):
            result.samples.append(read(time.perf_counter() - start))

    thread = threading.Thread(target=sample_loop, daemon=True) if read else None
    if thread:
        thread.start()
    try:
        while time.perf_counter() - start < min_seconds:
            load()
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
    finally:
        stop.set()
        if thread:
            thread.join()
    return result
