"""Reading NVIDIA GPUs through NVML (the nvidia-ml-py package, imported as ``pynvml``).

Defensive by design, because drivers and bindings vary: every NVML call runs in its own
``try``, every value is converted under its own guard (an ``"N/A"``, a NaN or an undecodable
name makes that one field unknown, with a note, and the GPU stays in the report), the device
count is bounded, and the whole probe, the import of pynvml included, runs in a daemon thread
under detection's time limit (``hardware.detect``), so a hung driver or a hung binding cannot
hang ``python -m gpulab doctor``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from gpulab.core.units import GIB
from gpulab.core.validate import PositiveFloat, checked, lenient
from gpulab.machine.report import THROTTLE_REASONS, GPUInfo, plausible
from gpulab.machine.visible import VisibleDevices, select_visible

__all__ = [
    "MAX_GPUS",
    "NVMLBinding",
    "import_nvml",
    "in_daemon_thread",
    "join_until",
    "nvml_read",
    "nvml_timeout_note",
    "throttle_reasons",
]

MAX_GPUS = 64  # more than any one machine holds; a count above it is a driver's placeholder


@runtime_checkable
class NVMLBinding(Protocol):
    """What detection needs of an NVML binding: the pynvml module, or a test's fake of it.

    Only the calls that open and close NVML are required here; every other call is looked up
    when it is needed, and a missing one is a note, not an error.
    """

    def nvmlInit(self) -> Any:
        """Start NVML."""

    def nvmlShutdown(self) -> Any:
        """Stop NVML."""


def _text(value: Any) -> str | None:
    """NVML returns bytes in old nvidia-ml-py releases and str in new ones; else None."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value if isinstance(value, str) else None


def _cuda_version_from_int(value: Any) -> str | None:
    """Turn NVML's CUDA version integer (12040) into "12.4"; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1000 <= value < 100_000:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def import_nvml() -> tuple[Any | None, str | None]:
    """(the pynvml module, None), or (None, why it cannot be used): never raises."""
    try:
        import pynvml  # from the nvidia-ml-py package
    except ImportError:
        return None, "nvidia-ml-py (pynvml) is not installed"
    except KeyboardInterrupt:  # the reader's Ctrl-C is not a broken install
        raise
    except BaseException as exc:  # a broken install can raise anything, sys.exit() included
        return None, f"nvidia-ml-py (pynvml) failed to import: {type(exc).__name__}: {exc}"
    return pynvml, None


@checked
def in_daemon_thread(fn: Callable[[], Any], name: str) -> tuple[threading.Thread, list[Any]]:
    """Start ``fn`` in a daemon thread; (the thread, a list that holds its result once done).

    A daemon thread, because a call that never returns (a hung driver, an import that sleeps)
    must be abandoned, not waited for, when the process exits.
    """
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(fn()), name=name, daemon=True)
    thread.start()
    return thread, result


@checked
def join_until(thread: threading.Thread, deadline: float) -> None:
    """Wait for ``thread`` until the ``time.monotonic()`` deadline, and not a moment longer."""
    remaining = deadline - time.monotonic()
    thread.join(min(max(remaining, 0.0), threading.TIMEOUT_MAX))


def _init_note(nvml: Any, exc: BaseException) -> str:
    """Explain why nvmlInit failed, in the reader's terms."""
    if isinstance(exc, getattr(nvml, "NVMLError_LibraryNotFound", ())):
        return "NVML library not found (no NVIDIA driver installed?)"
    if isinstance(exc, getattr(nvml, "NVMLError_DriverNotLoaded", ())):
        return "NVIDIA driver is installed but not loaded (reboot, or check `nvidia-smi`)"
    if isinstance(exc, getattr(nvml, "NVMLError_NoPermission", ())):
        return "NVML: no permission to talk to the NVIDIA driver"
    return f"NVML could not start: {exc}"


def _read_field(nvml: Any, label: str, notes: list[str], fn: Any, *args: Any) -> Any:
    """Call one NVML function; on any failure record a note and return None."""
    try:
        return fn(*args)
    except Exception as exc:  # one unsupported call must not lose the whole GPU
        if isinstance(exc, getattr(nvml, "NVMLError_NotSupported", ())):
            notes.append(f"{label}: not supported by this GPU or driver")
        else:
            notes.append(f"{label} could not be read: {exc}")
        return None


def _convert(label: str, notes: list[str], fn: Any) -> Any:
    """Convert one raw NVML value; a value of an unexpected shape becomes None with a note."""
    try:
        return fn()
    except Exception as exc:
        notes.append(f"{label}: unreadable value ({type(exc).__name__}: {exc})")
        return None


def _decode_throttle_reasons(nvml: Any, bits: Any) -> list[str]:
    """Name the set bits of an NVML clocks-event (throttle) reasons mask; skip unknown constants."""
    mask_bits = int(bits)
    names = []
    for name in THROTTLE_REASONS:
        mask = getattr(nvml, f"nvmlClocksEventReason{name}", None)
        if mask is None:
            mask = getattr(nvml, f"nvmlClocksThrottleReason{name}", None)
        if mask is not None and mask_bits & int(mask):
            names.append(name)
    return names


@lenient("takes an NVML device handle, an opaque object of the binding's own kind")
def throttle_reasons(
    nvml: NVMLBinding, handle: Any, label: str, notes: list[str]
) -> list[str] | None:
    """Why the clocks are held back: the "ClocksEvent" call first, then the older "Throttle" one."""
    errors = []
    for fn_name in (
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
    ):
        fn = getattr(nvml, fn_name, None)
        if fn is None:
            continue
        try:
            return _decode_throttle_reasons(nvml, fn(handle))
        except Exception as exc:
            errors.append(exc)
    if not errors:
        notes.append(f"{label} clock throttle reasons: this nvidia-ml-py has no call for them")
    elif isinstance(errors[-1], getattr(nvml, "NVMLError_NotSupported", ())):
        notes.append(f"{label} clock throttle reasons: not supported by this GPU or driver")
    else:
        notes.append(f"{label} clock throttle reasons could not be read: {errors[-1]}")
    return None


def _other_processes_memory(processes: Any) -> int:
    """GPU memory held by the compute processes in ``processes`` other than this one."""
    me = os.getpid()
    total = 0
    for p in processes:
        used = getattr(p, "usedGpuMemory", None)
        # usedGpuMemory is None where the driver does not tell (WSL, no permission)
        if (
            getattr(p, "pid", None) != me
            and isinstance(used, int)
            and not isinstance(used, bool)
            and used > 0
        ):
            total += used
    return total


def _milli(value: Any) -> float | None:
    """NVML's milliwatts in watts; None passes through."""
    return None if value is None else float(value) / 1000


_FIELDS = (  # (GPUInfo field, what the note calls it) of the numeric fields read from NVML
    ("memory_total_bytes", "memory"),
    ("memory_free_bytes", "free memory"),
    ("power_limit_w", "power limit"),
    ("power_draw_w", "power draw"),
    ("temperature_c", "temperature"),
    ("sm_clock_mhz", "SM clock"),
    ("max_sm_clock_mhz", "max SM clock"),
    ("memory_clock_mhz", "memory clock"),
    ("pcie_gen_current", "PCIe generation"),
    ("pcie_gen_max", "max PCIe generation"),
    ("pcie_width_current", "PCIe width"),
    ("pcie_width_max", "max PCIe width"),
    ("utilization_gpu_percent", "utilization"),
)


def _nvml_device(nvml: Any, index: int, handle: Any, notes: list[str]) -> GPUInfo:
    """Read every field of one NVML device, each in its own try, each converted on its own."""
    label = f"GPU {index}"

    def read(what: str, fn_name: str, *args: Any) -> Any:
        fn = getattr(nvml, fn_name, None)
        if fn is None:
            notes.append(f"{label} {what}: this nvidia-ml-py has no {fn_name}")
            return None
        return _read_field(nvml, f"{label} {what}", notes, fn, handle, *args)

    def convert(what: str, fn: Any) -> Any:
        return _convert(f"{label} {what}", notes, fn)

    name = read("name", "nvmlDeviceGetName")
    mem = read("memory", "nvmlDeviceGetMemoryInfo")
    cc = read("compute capability", "nvmlDeviceGetCudaComputeCapability")
    sm_clock = getattr(nvml, "NVML_CLOCK_SM", 1)
    mem_clock = getattr(nvml, "NVML_CLOCK_MEM", 2)
    temperature = read(
        "temperature", "nvmlDeviceGetTemperature", getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
    )
    utilization = read("utilization", "nvmlDeviceGetUtilizationRates")
    processes = read("compute processes", "nvmlDeviceGetComputeRunningProcesses")
    raw = {
        "memory_total_bytes": convert("memory", lambda: None if mem is None else mem.total),
        "memory_free_bytes": convert("free memory", lambda: None if mem is None else mem.free),
        "power_limit_w": convert(
            "power limit", lambda: _milli(read("power limit", "nvmlDeviceGetPowerManagementLimit"))
        ),
        "power_draw_w": convert(
            "power draw", lambda: _milli(read("power draw", "nvmlDeviceGetPowerUsage"))
        ),
        "temperature_c": temperature,
        "sm_clock_mhz": read("SM clock", "nvmlDeviceGetClockInfo", sm_clock),
        "max_sm_clock_mhz": read("max SM clock", "nvmlDeviceGetMaxClockInfo", sm_clock),
        "memory_clock_mhz": read("memory clock", "nvmlDeviceGetClockInfo", mem_clock),
        "pcie_gen_current": read("PCIe generation", "nvmlDeviceGetCurrPcieLinkGeneration"),
        "pcie_gen_max": read("max PCIe generation", "nvmlDeviceGetMaxPcieLinkGeneration"),
        "pcie_width_current": read("PCIe width", "nvmlDeviceGetCurrPcieLinkWidth"),
        "pcie_width_max": read("max PCIe width", "nvmlDeviceGetMaxPcieLinkWidth"),
        "utilization_gpu_percent": convert(
            "utilization", lambda: None if utilization is None else utilization.gpu
        ),
    }
    capability = convert(
        "compute capability", lambda: None if cc is None else f"{int(cc[0])}.{int(cc[1])}"
    )
    text_name = _text(name)
    if name is not None and text_name is None:
        notes.append(f"{label} name: unreadable value {name!r}")
    gpu = GPUInfo(
        index=index,
        name=text_name or f"NVIDIA GPU {index}",
        compute_capability=capability,
        source="nvml",
        throttle_reasons=throttle_reasons(nvml, handle, label, notes),
        other_processes_memory_bytes=convert(
            "compute processes",
            lambda: None if processes is None else _other_processes_memory(processes),
        ),
        **raw,
    )
    # GPUInfo keeps only plausible values: say which raw ones it dropped, and why
    for field_name, what in _FIELDS:
        if raw[field_name] is not None and getattr(gpu, field_name) is None:
            notes.append(_dropped_note(label, what, field_name, raw, gpu))
    if capability is not None and gpu.compute_capability is None:
        notes.append(f"{label} compute capability: unreadable value {capability!r}")
    return gpu


def _dropped_note(label: str, what: str, field_name: str, raw: dict[str, Any], gpu: GPUInfo) -> str:
    """Why GPUInfo dropped the raw value of ``field_name``."""
    free, total = plausible("memory_free_bytes", raw[field_name]), gpu.memory_total_bytes
    if field_name == "memory_free_bytes" and free is not None and total is not None:
        return (
            f"{label} {what}: NVML reports {free / GIB:.1f} GiB free of a "
            f"{total / GIB:.1f} GiB card, more than it has; the free figure is unknown"
        )
    return f"{label} {what}: unreadable value {raw[field_name]!r}"


def _nvml_system(nvml: Any, notes: list[str]) -> tuple[str | None, str | None]:
    """Read the driver version and the highest CUDA version it supports."""
    driver = _read_field(nvml, "driver version", notes, nvml.nvmlSystemGetDriverVersion)
    cuda = _read_field(nvml, "CUDA driver version", notes, nvml.nvmlSystemGetCudaDriverVersion)
    cuda_text = _cuda_version_from_int(cuda)
    if cuda is not None and cuda_text is None:
        notes.append(f"CUDA driver version: unreadable value {cuda!r}")
    return _text(driver), cuda_text


def _device_count(nvml: Any, notes: list[str]) -> int | None:
    """NVML's GPU count, bounded by MAX_GPUS; None when it cannot be read."""
    count = _read_field(nvml, "GPU count", notes, nvml.nvmlDeviceGetCount)
    if count is None:
        return None
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        notes.append(f"GPU count: unreadable value {count!r}")
        return None
    if count > MAX_GPUS:
        notes.append(
            f"NVML reports {count} GPUs, more than any machine holds; reading the first {MAX_GPUS}"
        )
        return MAX_GPUS
    return count


def _nvml_list(
    nvml: Any, visible: VisibleDevices, notes: list[str]
) -> tuple[list[GPUInfo], int, list[str]]:
    """Count, filter and read the NVML devices (NVML already initialised)."""
    count = _device_count(nvml, notes)
    if count is None:
        return [], 0, notes
    handles: dict[int, Any] = {}
    uuids: list[tuple[int, str | None]] = []
    for i in range(count):
        handle = _read_field(nvml, f"GPU {i} handle", notes, nvml.nvmlDeviceGetHandleByIndex, i)
        if handle is None:
            continue
        handles[i] = handle
        uuid = _read_field(nvml, f"GPU {i} UUID", notes, nvml.nvmlDeviceGetUUID, handle)
        uuids.append((i, _text(uuid)))
    chosen, select_notes = select_visible(uuids, visible)
    notes.extend(select_notes)
    if visible.note:
        notes.append(visible.note)
    driver, cuda = _nvml_system(nvml, notes)
    gpus = []
    for i in chosen:
        gpu = _nvml_device(nvml, i, handles[i], notes)
        gpu.driver_version, gpu.cuda_driver_version = driver, cuda
        gpu.uuid = dict(uuids).get(i)
        gpus.append(gpu)
    return gpus, count, notes


def _probe(visible: VisibleDevices, nvml: Any) -> tuple[list[GPUInfo] | None, int, list[str]]:
    """Initialise NVML, list the GPUs, shut NVML down; never raises."""
    # BaseException: a binding that calls sys.exit() must not end the doctor. This runs in
    # detection's worker thread, where no KeyboardInterrupt arrives.
    try:
        nvml.nvmlInit()
    except BaseException as exc:
        return None, 0, [_init_note(nvml, exc)]
    notes: list[str] = []
    try:
        return _nvml_list(nvml, visible, notes)
    except BaseException as exc:  # never let a driver oddity escape detect()
        notes.append(f"NVML failed while listing GPUs: {type(exc).__name__}: {exc}")
        return [], 0, notes
    finally:
        try:
            nvml.nvmlShutdown()
        except BaseException:
            pass


@checked
def nvml_read(
    visible: VisibleDevices,
    nvml: NVMLBinding | None = None,
    progress: dict[str, Any] | None = None,
) -> tuple[list[GPUInfo] | None, int, list[str]]:
    """Import pynvml (unless given) and list the GPUs, in this thread, without a time limit.

    ``progress["stage"]`` says how far it got ("import", then "probe"), so that whoever
    waits for it can say what did not answer. Never raises.
    """
    progress = {} if progress is None else progress
    progress["stage"] = "import"
    if nvml is None:
        nvml, why = import_nvml()
        if nvml is None:
            return None, 0, [why or "nvidia-ml-py (pynvml) could not be imported"]
    progress["stage"] = "probe"
    return _probe(visible, nvml)


@checked
def nvml_timeout_note(progress: dict[str, Any], timeout_s: PositiveFloat) -> str:
    """Say what did not answer within ``timeout_s``: the import of pynvml, or the driver."""
    if progress.get("stage") == "import":
        return (
            f"nvidia-ml-py (pynvml) did not answer within {timeout_s:g} s: `import pynvml` "
            'hangs; `python -c "import pynvml"` shows whether it ever returns'
        )
    return (
        f"NVML did not answer within {timeout_s:g} s (a hung driver?); "
        "`nvidia-smi` shows whether the driver responds"
    )
