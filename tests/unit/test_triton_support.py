"""gpulab.triton_support: compiler or interpreter, the missing-Triton path, stubs that say so."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from gpulab import triton_support
from gpulab.core.errors import GpulabConfigError
from gpulab.course.labs import check
from tests.helpers import INSTALLED_BY_MAKE, STRICT, has_module

HAS_TRITON = has_module("triton")
# Triton is the kernels extra: `make test` installs it (not on macOS, which has no wheels), so
# there its absence fails; a bare pytest without it skips these tests with the reason.
needs_triton = pytest.mark.skipif(
    not HAS_TRITON and not (STRICT and "kernels" in INSTALLED_BY_MAKE),
    reason="Triton is not installed (the kernels extra)",
)
SRC = Path(triton_support.__file__).resolve().parents[2]

# A fresh process, as a notebook kernel is: nothing sets TRITON_INTERPRET but setup().
SCRIPT = textwrap.dedent("""
    import os, sys
    import torch
    from gpulab import triton_support
    status = triton_support.setup(sys.argv[1])
    import triton
    import triton.language as tl

    @triton_support.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)

    n = 1000  # not a multiple of the block
    x = torch.randn(n, device=status.device)
    y = torch.randn(n, device=status.device)
    out = torch.empty_like(x)
    add_kernel[(triton_support.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    print(status.interpreter, os.environ.get("TRITON_INTERPRET"), type(add_kernel).__name__,
          torch.equal(out, x + y))
""")


def _run_script(device: str) -> list[str]:
    """Run SCRIPT in a fresh Python with TRITON_INTERPRET unset; its printed words."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, device], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


@pytest.fixture
def clean_env(monkeypatch):
    """TRITON_INTERPRET unset for the test, restored afterwards."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


def test_setup_on_the_cpu_sets_the_interpreter(clean_env):
    """On the CPU setup() sets TRITON_INTERPRET=1 and reports the interpreter."""
    status = triton_support.setup(torch.device("cpu"))
    assert os.environ["TRITON_INTERPRET"] == "1"
    assert status.interpreter is True
    if HAS_TRITON:
        assert status.available and status.device == "cpu"
        assert "interpreter" in status.reason and str(status) == status.reason


def test_setup_without_cuda_interprets_even_for_a_cuda_device(clean_env, monkeypatch):
    """A cuda device that torch cannot use gets the interpreter, not the compiler."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    status = triton_support.setup("cuda")
    assert status.interpreter and os.environ["TRITON_INTERPRET"] == "1"


def test_setup_without_triton_says_how_to_install_it(clean_env, monkeypatch):
    """When `import triton` fails, available is False with one sentence saying why."""
    monkeypatch.setitem(sys.modules, "triton", None)  # makes `import triton` raise ImportError
    status = triton_support.setup("cpu")
    assert status.available is False and status.device is None
    assert "Triton is not installed" in status.reason and "macOS" in status.reason
    assert "pip install -e '.[kernels]'" in status.reason


@needs_triton
def test_setup_says_when_triton_was_imported_before(clean_env):
    """Imported without the variable, Triton still interprets later kernels; setup says so."""
    import triton  # noqa: F401

    status = triton_support.setup("cpu")
    assert status.interpreter and "imported before setup()" in status.reason


@pytest.mark.parametrize("bad", ["gpu", "auto"])
def test_setup_rejects_what_is_not_a_device(bad):
    """A string that is not a torch device is a GpulabConfigError naming it."""
    with pytest.raises(GpulabConfigError, match="is not a torch device") as err:
        triton_support.setup(bad)
    assert err.value.field == "device"


@pytest.mark.parametrize("bad", [3, None, True, 1.5])
def test_setup_refuses_what_is_not_a_device_or_a_string_at_the_boundary(bad):
    """Neither a torch.device nor a string: refused by the annotation, naming the parameter."""
    with pytest.raises(GpulabConfigError, match="device must be a") as err:
        triton_support.setup(bad)
    assert err.value.field == "device"


def test_cdiv():
    """Blocks of b that cover a elements."""
    assert [triton_support.cdiv(a, 4) for a in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    for a, b in [(5, 0), (-1, 4), (2.0, 1), (3, True)]:
        with pytest.raises(GpulabConfigError):
            triton_support.cdiv(a, b)


def _stub_kernel(x_ptr, n, BLOCK):
    """A learner's kernel before it is written (as the learner copy has it)."""
    # Your code here.
    raise NotImplementedError("load, add, store with a mask")


def _bare_stub(x_ptr):
    raise NotImplementedError


def test_a_stub_kernel_raises_not_implemented_when_launched():
    """jit() turns a stub into an object that raises NotImplementedError with the hint."""
    kernel = triton_support.jit(_stub_kernel)
    assert "not written yet" in repr(kernel)
    with pytest.raises(NotImplementedError, match="load, add, store with a mask"):
        kernel[(4,)](None, 10, BLOCK=16)
    with pytest.raises(NotImplementedError, match="_bare_stub"):
        triton_support.jit(_bare_stub)[(1,)](None)


def test_a_stub_kernel_makes_check_say_not_written_yet():
    """gpulab.labs.check reports the stub as 'is not written yet', with the hint."""
    kernel = triton_support.jit()(_stub_kernel)  # the decorator with arguments works too

    def add(x):
        kernel[(1,)](x, x.numel(), BLOCK=16)
        return x

    with pytest.raises(AssertionError, match="`add` is not written yet: load, add, store"):
        check(add, lambda x: x, [torch.zeros(3)])


@needs_triton
def test_interpreter_runs_a_kernel_on_the_cpu_in_a_fresh_process():
    """As in a notebook kernel: setup('cpu'), then a kernel runs on CPU tensors, correctly."""
    interpreter, variable, kind, agrees = _run_script("cpu")
    assert (interpreter, variable, kind, agrees) == ("True", "1", "InterpretedFunction", "True")


@pytest.mark.gpu
@needs_triton
def test_compiles_on_cuda():
    """On a CUDA GPU setup('cuda') leaves the interpreter off and the kernel compiles."""
    interpreter, variable, kind, agrees = _run_script("cuda")
    assert (interpreter, variable, kind, agrees) == ("False", "None", "JITFunction", "True")
