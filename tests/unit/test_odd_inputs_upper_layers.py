"""Odd inputs at the upper layers (issue 25): a value that passes the check works.

NumPy numbers and fractions are handed on as plain Python numbers by ``@checked``; a
measurement of NaN, a hidden parameter name, a step count that would fill the memory and a
command that does not exist are refused or fixed at the boundary.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from fractions import Fraction as Ratio
from pathlib import Path

import numpy as np
import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import PositiveFloat, PositiveInt, checked

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------- item 12: the layer


@checked
def _takes(
    count: PositiveInt,
    size: PositiveFloat,
    maybe: int | None = None,
    either: int | float = 0,
    many: tuple[PositiveFloat, ...] = (),
):
    return count, size, maybe, either, many


def test_checked_hands_on_numpy_integers_as_plain_ints():
    """An int parameter given np.int64 receives a builtin int, positionally or by keyword."""
    count, _, maybe, either, _ = _takes(np.int64(3), 1.0, maybe=np.int32(-2), either=np.uint8(7))
    assert (type(count), count) == (int, 3)
    assert (type(maybe), maybe) == (int, -2)
    assert (type(either), either) == (int, 7)


def test_checked_hands_on_non_builtin_reals_as_plain_floats():
    """A float parameter given a NumPy float or a Fraction receives a builtin float."""
    _, size, _, either, _ = _takes(1, np.float32(0.5), either=np.float64(2.5))
    assert (type(size), size) == (float, 0.5)
    assert (type(either), either) == (float, 2.5)
    _, size, *_ = _takes(1, Ratio(3, 4))
    assert (type(size), size) == (float, 0.75)
    _, size, *_ = _takes(1, size=np.int64(4))  # an integer stays an integer, as a builtin one does
    assert (type(size), size) == (int, 4)


def test_checked_leaves_builtin_numbers_as_they_are():
    """A builtin int given to a float parameter stays an int, so labels print '850', not '850.0'."""
    count, size, maybe, either, _ = _takes(3, 850, maybe=None, either=2)
    assert (type(count), type(size), maybe, type(either)) == (int, int, None, int)
    size_in = 0.1
    assert _takes(1, size_in)[1] is size_in


def test_checked_normalises_the_elements_of_a_tuple():
    """Each element of a tuple[float, ...] is handed on as a plain number, the tuple a tuple."""
    many = _takes(1, 1.0, many=(np.float64(1.5), Ratio(1, 2), 3))[4]
    assert type(many) is tuple and [type(x) for x in many] == [float, float, int]
    assert many == (1.5, 0.5, 3)


def test_checked_still_refuses_what_it_refused():
    """The normalisation comes after the checks: a NaN or a bool is still an error naming it."""
    with pytest.raises(GpulabConfigError) as err:
        _takes(1, np.float64("nan"))
    assert err.value.field == "size"
    with pytest.raises(GpulabConfigError) as err:
        _takes(np.bool_(True), 1.0)
    assert err.value.field == "count"


@checked
@dataclass(frozen=True)
class _Config:
    steps: PositiveInt = 1
    rate: PositiveFloat = 1.0


def test_checked_dataclass_fields_are_normalised():
    """A frozen @checked dataclass stores plain numbers for NumPy and Fraction arguments."""
    config = _Config(np.int64(5), Ratio(1, 4))
    assert (type(config.steps), config.steps) == (int, 5)
    assert (type(config.rate), config.rate) == (float, 0.25)


# ------------------------------------------------------------------------- item 12: the functions


def test_random_qkv_takes_a_numpy_seed():
    """random_qkv(seed=np.int64(3)) gives the tensors seed=3 gives (torch wants a plain int)."""
    import torch

    from gpulab.bench import attention

    got = attention.random_qkv(1, 2, 4, 8, seed=np.int64(3))
    want = attention.random_qkv(1, 2, 4, 8, seed=3)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_make_checkpoint_takes_a_numpy_seed_and_size():
    """make_checkpoint accepts NumPy integers for its size and seed, as it does plain ints."""
    import torch

    from gpulab.bench import loading

    got = loading.make_checkpoint(np.int64(4096), tensors=np.int64(2), seed=np.int64(3))
    want = loading.make_checkpoint(4096, tensors=2, seed=3)
    assert list(got) == ["layer0.weight", "layer1.weight"] == list(want)
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=0, atol=0)


def test_check_psu_takes_a_fraction_and_numpy_watts():
    """check_psu(b, Fraction(850)) works and reads as check_psu(b, 850) does."""
    from gpulab.estimate.power import Build, check_psu

    build = Build(gpu_power_w=300, cpu_power_w=100)
    want = check_psu(build, 850)
    for odd in (Ratio(850), np.float64(850), np.int64(850)):
        got = check_psu(build, odd)
        assert got.ok == want.ok and got.reasons == want.reasons, odd
        assert "850 W rating" in got.reasons[0]


# ------------------------------------------------------------------------- item 10: compare


@pytest.mark.parametrize(
    "bad", [math.nan, math.inf, -math.inf, np.float64("nan"), "12", None, True]
)
def test_compare_refuses_a_measurement_that_is_not_a_finite_number(bad):
    """compare(10, nan) is an error naming `measured`, not 'error +nan% ... off by infx'."""
    from gpulab.ui import predict

    with pytest.raises(GpulabConfigError) as err:
        predict.compare(10, bad, "x")
    assert err.value.field == "measured"
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "guess, value",
    [
        (np.int64(10), 10.0),
        (np.float64(2.5), 2.5),
        (np.float32(0.5), 0.5),
        (Ratio(5, 2), 2.5),
        (7, 7.0),
    ],
)
def test_compare_accepts_any_real_number_as_a_guess(guess, value):
    """NumPy integers and floats and a Fraction are guesses like any number."""
    from gpulab.ui import predict

    shown = predict.compare(guess, 5, "x")
    assert shown.prediction == value and type(shown.prediction) is float
    assert shown.factor_off == pytest.approx(max(value, 5) / min(value, 5))


@pytest.mark.parametrize("bad", [True, False, np.bool_(True), math.nan, np.float64("inf"), "3"])
def test_compare_refuses_a_bool_or_non_finite_guess_naming_the_variable(bad):
    """True is not a guess of 1; the error names the reader's variable."""
    from gpulab.ui import predict

    with pytest.raises(GpulabConfigError) as err:
        predict.compare(bad, 5.0, "x", variable="my_ms")
    assert err.value.field == "my_ms"
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------------- item 11: memory_expected


@pytest.mark.parametrize(
    "field, bad", [("users", 0), ("users", -1), ("context", 0), ("users", 1.5)]
)
def test_memory_expected_names_its_own_parameters(field, bad):
    """memory_expected(users=0) names `users`, not gpulab.memory's `batch`."""
    from tests import calculator_oracle as oracle

    args = {
        "model": "Llama-3.1-8B",
        "weights": "bf16",
        "context": 4096,
        "users": 1,
        "gpu": "RTX 4090",
    } | {field: bad}
    with pytest.raises(GpulabConfigError) as err:
        oracle.memory_expected(**args)
    assert err.value.field == field
    assert field in str(err.value)


# ------------------------------------------------------------------------- item 15: steps


def _in_small_process(code: str) -> subprocess.CompletedProcess:
    """Run `code` in a child limited to 2 GB of address space and 60 s, so a regression
    that builds the whole order fails fast instead of eating the machine's memory."""
    prologue = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
    """)
    env = {
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "src"),
    }
    return subprocess.run(
        [sys.executable, "-c", prologue + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


@pytest.mark.parametrize("steps", [2**63, 10**12, 10**7])
def test_sampling_order_refuses_a_huge_step_count_before_any_work(steps):
    """sampling_order(Task(), 2**63) is an error naming `steps`, not 2.9 GB in 7 s."""
    result = _in_small_process(f"""
        from gpulab.core.errors import GpulabConfigError
        from gpulab.course.slowloop import Task, sampling_order
        try:
            sampling_order(Task(), {steps})
        except GpulabConfigError as err:
            print("FIELD", err.field)
            print("MESSAGE", err)
        else:
            print("NO ERROR")
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "FIELD steps" in result.stdout, result.stdout
    assert result.stdout.count("\n") == 2  # the message is one line


def test_sampling_order_refuses_zero_steps_and_keeps_a_real_run():
    """steps=0 is refused naming it (it failed inside numpy); the lab's sizes still work."""
    from gpulab.course.slowloop import Task, sampling_order

    with pytest.raises(GpulabConfigError) as err:
        sampling_order(Task(), 0)
    assert err.value.field == "steps"
    assert len(sampling_order(Task(), 60)) == 60 * 128  # the lab's longest run, on a GPU
    assert len(sampling_order(Task(batch=1, dataset_size=10), np.int64(3))) == 3


# ------------------------------------------------------------------------- item 18: the command


def test_the_out_of_date_hint_names_a_command_that_runs(tmp_path, capsys):
    """A stale learner copy's hint names `python tools/checks/nbcheck.py --fix`, which exists."""
    from tools.authoring import learner_generator

    labs_dir = tmp_path / "labs"
    labs_dir.mkdir()
    (labs_dir / "learner").mkdir()
    (labs_dir / "learner" / "01_gone_lab.ipynb").write_text("{}", encoding="utf-8")  # an orphan
    assert learner_generator.main(["--check", str(labs_dir)]) == 1
    out = capsys.readouterr().out
    assert "python tools/checks/nbcheck.py --fix" in out and "gpulab.labs`" not in out
    assert learner_generator.REGENERATE == "python tools/checks/nbcheck.py --fix"
    script, option = learner_generator.REGENERATE.split()[1:]
    result = subprocess.run(
        [sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert option in result.stdout


def test_no_text_names_the_missing_module():
    """`python -m gpulab.labs` does not exist; no docstring, hint or guide names it."""
    texts = [
        ROOT / "CONTRIBUTING.md",
        ROOT / "README.md",
        *sorted((ROOT / "src" / "gpulab").rglob("*.py")),
        *sorted((ROOT / "tools").rglob("*.py")),
    ]
    naming = [str(p.relative_to(ROOT)) for p in texts if "-m gpulab.labs" in p.read_text("utf-8")]
    assert naming == []


# ------------------------------------------------------------------------- issue 30: bench


def test_random_qkv_takes_a_numpy_seed_as_the_same_int():
    """random_qkv(..., seed=np.int64(3)) failed inside torch ("an integer is required"); it now
    gives exactly what seed=3 gives, which is torch's own generator seeded with 3."""
    import torch

    from gpulab.bench import attention

    shape = (1, 2, 4, 8)
    numpy_seeded = attention.random_qkv(*shape, seed=np.int64(3))
    plain = attention.random_qkv(*shape, seed=3)
    gen = torch.Generator().manual_seed(3)  # the oracle: three draws from torch's generator
    expected = [torch.randn(*shape, generator=gen) for _ in range(3)]
    for got, same, want in zip(numpy_seeded, plain, expected, strict=True):
        assert torch.equal(got, same) and torch.equal(got, want)
    positional = attention.random_qkv(np.int64(1), np.int32(2), np.int16(4), np.uint8(8))
    assert positional[0].shape == shape


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"seed": np.float64(3.0)}, "seed"),
        ({"seed": "3"}, "seed"),
        ({"heads": np.int64(0)}, "heads"),
        ({"device": 0.5}, "device"),
    ],
)
def test_random_qkv_refuses_a_bad_value_in_one_line_naming_it(kwargs, field):
    """What random_qkv cannot take is refused at the boundary, one line naming the parameter."""
    from gpulab.bench import attention

    args = {"batch": 1, "heads": 2, "seq": 4, "head_dim": 8, **kwargs}
    with pytest.raises(GpulabConfigError) as err:
        attention.random_qkv(**args)
    assert err.value.field == field
    assert "\n" not in str(err.value) and field in str(err.value)


def test_bench_functions_give_the_same_result_for_numpy_numbers():
    """NumPy integers and floats work wherever a bench function takes an int or a float, and
    give what plain Python numbers give (checked against arithmetic done here)."""
    import torch

    from gpulab.bench import quantize, triton_support, workloads

    assert triton_support.cdiv(np.int64(10), np.int32(4)) == triton_support.cdiv(10, 4) == 3
    assert workloads.time_to_embed(np.int64(1000), np.float32(50.0)) == pytest.approx(20.0)
    assert workloads.time_to_embed(np.int64(1000), np.float64(50.0)) == workloads.time_to_embed(
        1000, 50.0
    )
    w = torch.randn(8, 256, generator=torch.Generator().manual_seed(0))
    numpy_args = quantize.quantize_per_group(w, np.int64(4), np.int32(64))
    plain = quantize.quantize_per_group(w, 4, 64)
    assert torch.equal(numpy_args.q, plain.q) and torch.equal(numpy_args.scale, plain.scale)
    assert (numpy_args.bits, numpy_args.group_size) == (4, 64)
    assert type(numpy_args.bits) is int and type(numpy_args.group_size) is int
    # 8 x 256 codes at 4 bits, 8 x 4 scales at 16 bits
    assert quantize.stored_bytes(numpy_args, np.int64(16)) == 8 * 256 // 2 + 8 * 4 * 2
