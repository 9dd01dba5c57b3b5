"""What the installed torch was built for and which devices it can use (chapter 1, the doctor).

Every probe goes through ``call``, which turns an exception into a default and a warning
into a note, so a torch without a driver, a fake torch in a test or a broken install all
give a report rather than a traceback.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from gpulab.core.validate import PositiveFloat, checked, lenient
from gpulab.machine.nvml import MAX_GPUS
from gpulab.machine.report import GPUInfo, TorchInfo

__all__ = [
    "TorchModule",
    "backend_of",
    "call",
    "import_torch_traced",
    "torch_gpus",
    "torch_info",
    "torch_read",
    "torch_timeout_info",
]


@runtime_checkable
class TorchModule(Protocol):
    """What the probes read first of torch: the torch module, or a test's fake of it.

    Everything else (``torch.backends.mps``, ``torch.xpu``, the device calls) is looked up
    when it is needed, and a missing or broken part is a note, not an error.
    """

    cuda: Any  # torch.cuda
    version: Any  # torch.version


def import_torch_traced() -> tuple[Any | None, str | None, str | None]:
    """Import torch: (torch, None, None); (None, None, None) where it is not installed.

    Otherwise (None, why the import failed, the module that broke it when that is not torch
    itself). A broken install (a missing libcudnn, a wheel for another Python) raises OSError,
    RuntimeError or worse at import time; that becomes the reason, never a traceback.

    torch.cuda imports pynvml and catches only ImportError, so a pynvml that raises anything
    else (or calls sys.exit) makes `import torch` fail; the traceback says so.
    """
    try:
        import torch
    except ImportError as exc:
        if getattr(exc, "name", None) == "torch":
            return None, None, None
        return None, f"{type(exc).__name__}: {exc}", _raised_in(exc)
    except KeyboardInterrupt:  # the reader's Ctrl-C is not a broken install
        raise
    except BaseException as exc:  # SystemExit included: it must not end the doctor
        return None, f"{type(exc).__name__}: {exc}", _raised_in(exc)
    return torch, None, None


_TORCH_DEPENDENCIES = ("pynvml",)  # modules torch imports whose failure is not torch's fault


def _raised_in(exc: BaseException) -> str | None:
    """The module of ``_TORCH_DEPENDENCIES`` whose code raised ``exc`` (or its cause), if any."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        tb = error.__traceback__
        while tb is not None:
            module = str(tb.tb_frame.f_globals.get("__name__", "")).split(".")[0]
            if module in _TORCH_DEPENDENCIES:
                return module
            tb = tb.tb_next
        error = error.__cause__ or error.__context__
    return None


@checked
def torch_read(
    torch: TorchModule | None = None,
    progress: dict[str, Any] | None = None,
) -> tuple[Any | None, TorchInfo, list[str]]:
    """Import torch (unless given) and describe it, in this thread, without a time limit.

    ``progress`` records how far it got ("stage": "import", then "probe", and "torch" once
    imported), so that whoever waits for it can say what did not answer. Never raises.
    """
    progress = {} if progress is None else progress
    progress["stage"] = "import"
    why = broken_by = None
    if torch is None:
        torch, why, broken_by = import_torch_traced()
    progress.update(stage="probe", torch=torch)
    info, notes = _torch_info(torch, why, broken_by)
    # What an import gave is not a caller's argument: a torch folder left behind by an
    # uninstall imports as an empty package, which is described above ("could not be
    # queried") and then has no GPUs to list, rather than being refused by a check.
    return (torch if _looks_like_torch(torch) else None), info, notes


def _looks_like_torch(module: Any) -> bool:
    """True when ``module`` has what TorchModule names (torch.cuda and torch.version)."""
    try:
        return isinstance(module, TorchModule)
    except Exception:  # an attribute lookup that raises something odd
        return False


@checked
def torch_timeout_info(
    progress: dict[str, Any], timeout_s: PositiveFloat, pynvml_hung: bool = False
) -> tuple[TorchInfo, str]:
    """The TorchInfo and the note for a torch that did not answer within ``timeout_s``."""
    torch = progress.get("torch")
    if progress.get("stage") == "probe" and torch is not None:
        hung = "torch.cuda.is_available() or another device probe"
        try:
            version: str | None = str(torch.__version__)
        except Exception:  # an odd torch (or a fake) without one
            version = None
        info = TorchInfo(installed=True, version=version, build="unknown")
    else:
        hung = "`import torch`"
        info = TorchInfo(
            installed=False, build="unknown", broken_by="pynvml" if pynvml_hung else None
        )
    info.did_not_answer = f"{hung} did not answer within {timeout_s:g} s"
    why = (
        "it imports pynvml, whose import hangs too"
        if info.broken_by
        else "a hung NVIDIA driver or a slow disk is the usual cause"
    )
    note = (
        f"torch did not answer within {timeout_s:g} s ({hung} hangs; {why}), so its build "
        "and devices are unknown"
    )
    return info, note


@lenient("calls whatever torch exposes as a probe; any failure gives the default")
def call(fn: Callable[[], Any], default: Any, notes: list[str] | None = None) -> Any:
    """Call a torch probe; collect its warnings as notes and return ``default`` on failure."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
        except Exception as exc:
            result = default
            if notes is not None:
                notes.append(f"torch: {exc}")
    if notes is not None:
        for w in caught:
            text = str(w.message).strip().splitlines()[0] if str(w.message).strip() else ""
            if text and f"torch: {text}" not in notes:
                notes.append(f"torch: {text}")
    return result


def _torch_build(torch: Any, mps_built: bool, xpu_available: bool) -> str:
    """Name what this torch wheel was built for."""
    if getattr(torch.version, "hip", None):
        return "rocm"
    if getattr(torch.version, "cuda", None):
        return "cuda"
    if mps_built:
        return "mps"
    if xpu_available or getattr(torch.version, "xpu", None):
        return "xpu"
    return "cpu-only"


@checked
def torch_info(
    torch: TorchModule | None = None, import_error: str | None = None, broken_by: str | None = None
) -> tuple[TorchInfo, list[str]]:
    """Describe the torch build; never raises. ``broken_by``: the module that broke its import."""
    return _torch_info(torch, import_error, broken_by)


def _torch_info(
    torch: Any, import_error: str | None, broken_by: str | None
) -> tuple[TorchInfo, list[str]]:
    """torch_info's body, for a torch of any shape (what an import gave)."""
    if torch is None and import_error is None:
        torch, import_error, broken_by = import_torch_traced()
    if torch is None:
        if import_error and broken_by:
            note = (
                f"torch fails to import because {broken_by}, which it imports, is broken "
                f"({import_error}), so only the CPU can be used until {broken_by} is fixed"
            )
        elif import_error:
            note = (
                f"torch is installed but fails to import ({import_error}), so only the CPU "
                "can be used until it is reinstalled"
            )
        else:
            note = "torch is not installed, so only the CPU can be used (pip install torch)"
        return TorchInfo(
            installed=False, build="not installed", import_error=import_error, broken_by=broken_by
        ), [note]
    notes: list[str] = []
    try:
        return _describe(torch, notes), notes
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # an odd torch (or a fake, or sys.exit) must not break detect()
        notes.append(f"torch could not be queried: {type(exc).__name__}: {exc}")
        return TorchInfo(installed=True, version=str(getattr(torch, "__version__", "?"))), notes


def _describe(torch: Any, notes: list[str]) -> TorchInfo:
    """The TorchInfo of an imported torch; each probe through ``call``."""
    cuda_available = bool(call(torch.cuda.is_available, False, notes))
    mps = getattr(torch.backends, "mps", None)
    mps_built = bool(call(mps.is_built, False)) if mps is not None else False
    mps_available = bool(call(mps.is_available, False)) if mps is not None else False
    xpu = getattr(torch, "xpu", None)
    xpu_available = bool(call(xpu.is_available, False)) if xpu is not None else False
    info = TorchInfo(
        installed=True,
        version=str(getattr(torch, "__version__", "?")),
        cuda_version=getattr(torch.version, "cuda", None),
        hip_version=getattr(torch.version, "hip", None),
        cuda_available=cuda_available,
        mps_built=mps_built,
        mps_available=mps_available,
        xpu_available=xpu_available,
        # names only ("sm_90"): the doctor's rule reads each as text
        arch_list=[a for a in list(call(torch.cuda.get_arch_list, []) or []) if isinstance(a, str)],
    )
    info.build = _torch_build(torch, mps_built, xpu_available)
    info.device_count = _torch_device_count(torch, info)
    notes.extend(_torch_notes(info))
    return info


def _torch_device_count(torch: Any, info: TorchInfo) -> int:
    """How many devices of the best backend torch can use (bounded, like NVML's count)."""
    if info.cuda_available:
        count = call(torch.cuda.device_count, 0)
    elif info.xpu_available:
        count = call(torch.xpu.device_count, 0)
    else:
        return 1 if info.mps_available else 0
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return 0
    return min(count, MAX_GPUS)


def _torch_notes(info: TorchInfo) -> list[str]:
    """Sentences that explain why torch cannot use an accelerator."""
    if info.build == "cpu-only":
        return [f"torch {info.version} is a CPU-only build"]
    if info.build in ("cuda", "rocm") and not info.cuda_available:
        return [f"torch {info.version} is a {info.build.upper()} build, but it sees no usable GPU"]
    if info.build == "mps" and not info.mps_available:
        return ["torch was built with MPS, but MPS is not available (needs macOS on Apple silicon)"]
    return []


@checked
def backend_of(info: TorchInfo) -> str:
    """The best backend torch can use now."""
    if info.cuda_available:
        return "rocm" if info.hip_version else "cuda"
    if info.mps_available:
        return "mps"
    if info.xpu_available:
        return "xpu"
    return "cpu"


@checked
def torch_gpus(torch: TorchModule | None, info: TorchInfo, notes: list[str]) -> list[GPUInfo]:
    """List GPUs through torch, for ROCm and for NVIDIA machines without NVML."""
    if torch is None:
        return []
    if info.cuda_available:
        return [_torch_cuda_device(torch, i, notes) for i in range(info.device_count)]
    if info.mps_available:
        total = call(lambda: torch.mps.recommended_max_memory(), None)
        return [GPUInfo(index=0, name="Apple GPU (MPS)", memory_total_bytes=total, source="torch")]
    return []


def _torch_cuda_device(torch: Any, index: int, notes: list[str]) -> GPUInfo:
    """One CUDA/ROCm device as torch describes it."""
    props = call(lambda: torch.cuda.get_device_properties(index), None, notes)
    if props is None:
        return GPUInfo(index=index, name=f"GPU {index}", source="torch")
    free = call(lambda: torch.cuda.mem_get_info(index), None, notes)
    try:
        return GPUInfo(
            index=index,
            name=str(props.name),
            memory_total_bytes=props.total_memory,
            memory_free_bytes=free[0] if free is not None else None,
            compute_capability=f"{props.major}.{props.minor}",
            source="torch",
        )
    except Exception as exc:  # properties of an unexpected shape: keep the GPU, fields unknown
        notes.append(f"GPU {index}: torch's device properties could not be read ({exc})")
        return GPUInfo(index=index, name=f"GPU {index}", source="torch")
