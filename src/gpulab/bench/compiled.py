"""What torch.compile buys, measured: compile time apart from the speed-up (chapter 4).

torch.compile captures a function's graph (TorchDynamo) and hands it to Inductor, which
generates Triton kernels on a GPU and C++ with OpenMP on a CPU. Its main win on small
blocks is fusion: a chain of element-wise operations becomes one kernel that reads and
writes memory once instead of once per operation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.bench import timing
from gpulab.core.validate import PositiveFloat, checked, lenient

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = ["CompileResult", "activation_chain", "measure_compile"]


@lenient(
    "the workload torch.compile traces (inside a reader's function too): a check would be "
    "traced into the graph, where it breaks it, and timed with the kernels"
)
def activation_chain(x: torch.Tensor, bias: torch.Tensor):
    """SiLU, a bias, GELU and a scaled residual: four memory-bound passes in eager mode."""
    import torch

    y = x * torch.sigmoid(x)
    y = y + bias
    y = torch.nn.functional.gelu(y)
    return y * 0.5 + x


@dataclass(frozen=True)
class CompileResult:
    """Eager vs compiled timing of one function, and what compiling cost."""

    compile_seconds: float  # the first call: graph capture, code generation, C++/Triton build
    eager: timing.Measurement
    compiled: timing.Measurement
    max_abs_difference: float

    @property
    def speedup(self) -> float:
        """Eager time / compiled time (above 1: compiling paid off per call)."""
        return self.eager.median / self.compiled.median

    @property
    def calls_to_break_even(self) -> float | None:
        """Calls after which the time saved repays the compile time (None if nothing is saved)."""
        saved = self.eager.median - self.compiled.median
        return None if saved <= 0 else self.compile_seconds / saved


@checked
def measure_compile(fn: Callable, *args: Any, min_run_time: PositiveFloat = 0.2) -> CompileResult:
    """Compile `fn`, time its first call (the compile), then time eager and compiled calls."""
    import torch

    torch._dynamo.reset()  # a fresh compile, not one cached in this process
    compiled = torch.compile(fn)
    with torch.inference_mode():
        start = time.perf_counter()
        first = compiled(*args)
        timing.synchronize(timing.find_device(args, {}))
        compile_seconds = time.perf_counter() - start
        eager = timing.benchmark(fn, *args, min_run_time=min_run_time, label="eager")
        fast = timing.benchmark(compiled, *args, min_run_time=min_run_time, label="compiled")
        difference = (first - fn(*args)).abs().max().item()
    return CompileResult(compile_seconds, eager, fast, difference)
