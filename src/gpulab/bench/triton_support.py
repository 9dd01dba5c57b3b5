"""Running Triton kernels on any machine (chapter 4's lab, "write your own GPU kernel").

On a CUDA (or ROCm) GPU Triton compiles each ``@triton.jit`` kernel for the GPU. Anywhere else
its interpreter runs the same kernel on CPU tensors, one program at a time, in numpy: the
results are what the kernel computes (up to rounding), the speed is Python's. The interpreter
is switched on by the environment variable ``TRITON_INTERPRET=1``, which Triton 3.x reads each
time ``@triton.jit`` defines a kernel (with ``os.getenv`` in early 3.x releases, through
``triton.knobs`` in recent ones, 3.9 included): it must be set before the kernels are defined;
when ``triton`` itself was imported does not matter.
``setup`` sets it (or clears it on a GPU) and must be called before any kernel is defined.

A learner's kernel is still a stub (``raise NotImplementedError(...)``) until it is written.
Triton cannot compile a ``raise``, and its interpreter wraps every exception in its own error;
``jit`` therefore turns a stub into an object that raises ``NotImplementedError`` when launched,
so that ``gpulab.labs.check`` reports "is not written yet" on a GPU and on a CPU alike.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import NonNegativeInt, PositiveInt, checked

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = ["INTERPRET_VAR", "NOT_INSTALLED", "TritonStatus", "cdiv", "jit", "setup"]

INTERPRET_VAR = "TRITON_INTERPRET"
NOT_INSTALLED = (
    "Triton is not installed: `pip install -e '.[kernels]'`; on macOS Triton has no wheels, "
    "this lab's kernels cannot run there"
)


@dataclass(frozen=True)
class TritonStatus:
    """Whether Triton kernels can run here, and how (what `setup` found)."""

    available: bool  # `import triton` works
    interpreter: bool  # True: Triton's interpreter on the CPU; False: compiled for the GPU
    reason: str  # one sentence for the reader
    device: str | None = (
        None  # where the kernels' tensors must live: "cuda:0", "cpu"; None if unavailable
    )

    def __str__(self) -> str:
        return self.reason


def _torch_device(device: Any):
    """A torch.device from a string or torch.device; GpulabConfigError otherwise."""
    import torch

    if isinstance(device, torch.device):
        return device
    if isinstance(device, str):
        try:
            return torch.device(device.strip())
        except RuntimeError:
            pass
    raise GpulabConfigError(
        f"device={device!r} is not a torch device; pass the device the notebook runs on, "
        "e.g. hardware.pick_device(device), 'cuda' or 'cpu'.",
        "device",
    )


def _gpu_name(torch: Any, device: Any) -> str:
    """The GPU's name, or the device string when it cannot be read."""
    try:
        return torch.cuda.get_device_name(device)
    except Exception:
        return str(device)


@checked
def setup(device: torch.device | str) -> TritonStatus:
    """Pick Triton's compiler on CUDA, its interpreter elsewhere; call before defining kernels."""
    import torch

    dev = _torch_device(device)
    compiled = dev.type == "cuda" and bool(torch.cuda.is_available())
    imported_before = "triton" in sys.modules and os.environ.get(INTERPRET_VAR) != "1"
    if compiled:
        os.environ.pop(INTERPRET_VAR, None)  # a left-over "1" would interpret on the GPU machine
    else:
        os.environ[INTERPRET_VAR] = "1"  # before `import triton`, and before any @triton.jit
    try:
        triton = importlib.import_module("triton")
    except ImportError:
        return TritonStatus(False, not compiled, NOT_INSTALLED + ".", None)
    knobs = getattr(
        triton, "knobs", None
    )  # recent Triton: a value set in Python wins over the variable
    runtime = getattr(knobs, "runtime", None)
    if runtime is not None and bool(getattr(runtime, "interpret", not compiled)) == compiled:
        runtime.interpret = not compiled
    version = getattr(triton, "__version__", "?")
    if compiled:
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        where = f"cuda:{index}"
        reason = (
            f"Triton {version} compiles these kernels for the GPU "
            f"({_gpu_name(torch, index)}, {where})."
        )
        return TritonStatus(True, False, reason, where)
    why = (
        "no CUDA GPU is in use"
        if dev.type in ("cpu", "cuda")
        else f"Triton does not compile for {dev.type} here"
    )
    reason = (
        f"Triton {version} runs these kernels in its interpreter on the CPU "
        f"({INTERPRET_VAR}=1; {why}): it checks what they compute, not how fast."
    )
    if imported_before:
        reason += (
            f" Triton was imported before setup() without {INTERPRET_VAR}: a kernel "
            "defined before this call is compiled, not interpreted; run its cell again."
        )
    return TritonStatus(True, True, reason, "cpu")


@checked
def cdiv(a: NonNegativeInt, b: PositiveInt) -> int:
    """Ceiling division: how many blocks of b cover a elements (the grid size of a kernel)."""
    return -(-a // b)


# ---------------------------------------------------------------- kernels that are still stubs


def _stub_hint(fn: Callable) -> str | None:
    """The message of a `raise NotImplementedError(...)` in fn's body; None if fn has none."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs:
        return None
    for stmt in defs[0].body:
        if not isinstance(stmt, ast.Raise) or stmt.exc is None:
            continue
        call = stmt.exc if isinstance(stmt.exc, ast.Call) else None
        name = call.func if call is not None else stmt.exc
        if isinstance(name, ast.Name) and name.id == "NotImplementedError":
            first = call.args[0] if call is not None and call.args else None
            is_text = isinstance(first, ast.Constant) and isinstance(first.value, str)
            return first.value if is_text else ""
    return None


class _Unwritten:
    """Stands in for a kernel whose body is a stub: launching it raises NotImplementedError."""

    def __init__(self, name: str, hint: str):
        self.__name__ = name
        self.hint = hint

    def __getitem__(self, grid: Any) -> Callable:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(self.hint or f"write the body of the kernel `{self.__name__}`")

    def __repr__(self) -> str:
        return f"<kernel {self.__name__}: not written yet>"


@checked
def jit(fn: Callable | None = None, **kwargs: Any) -> Any:
    """`triton.jit`, but a kernel whose body is still a stub raises NotImplementedError when run."""
    if fn is None:
        return lambda f: jit(f, **kwargs)
    hint = _stub_hint(fn)
    if hint is not None:
        return _Unwritten(fn.__name__, hint)
    import triton

    return triton.jit(fn, **kwargs)
