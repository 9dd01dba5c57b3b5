"""Odd inputs at the upper layers (issue 25): a value that passes the check works.

NumPy numbers and fractions are handed on as plain Python numbers by ``@checked``; a
measurement of NaN, a hidden parameter name, a step count that would fill the memory and a
command that does not exist are refused or fixed at the boundary.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction as Ratio
from pathlib import Path

import numpy as np
import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import PositiveFloat, PositiveInt, checked
from tests.helpers import cpu_report

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
def _total(values: Iterable[int]) -> int:
    return sum(values) + sum(values)  # read twice: a generator must arrive as a list


def test_checked_iterable_checks_each_element_of_any_iterable():
    """Iterable[X] takes a list, dict values or a generator (read once, handed on as a list),
    checks every element, and refuses text and non-iterables naming the field."""
    assert _total([1, 2]) == 6 and _total({"a": 1, "b": 2}.values()) == 6
    assert _total(x for x in (1, 2)) == 6
    for bad, message in (
        ([1, "2"], "values[1]='2' must be an integer"),
        ("12", "values='12' must be an iterable"),
        (12, "values=12 must be an iterable"),
    ):
        with pytest.raises(GpulabConfigError, match=re.escape(message)) as err:
            _total(bad)
        assert err.value.field.startswith("values"), bad


@checked
def _flag(on: bool) -> bool:
    return on


def test_checked_hands_on_numpy_bools_as_plain_bools():
    """A bool parameter takes NumPy's bool (np.True_, what comparisons on arrays give) as a
    builtin bool, under NumPy 1 (bool_) and NumPy 2 (bool) alike; an int is still refused."""
    assert _flag(np.bool_(True)) is True
    assert _flag(np.bool_(False)) is False
    assert _flag(np.array(3) > 2) is True
    with pytest.raises(GpulabConfigError, match="must be True or False"):
        _flag(np.int64(1))


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


# ------------------------------------------------------------------------- issue 30: machine
# The machine layer checks its arguments at its boundary (@checked): the example in it,
# render_json(report, "x"), and its neighbours are refused in one line naming the parameter.


def _machine_report():
    """A CPU-only HardwareReport built by hand (no detection, nothing read from this machine)."""
    return cpu_report()


def _refused_in_one_line(call, field: str) -> str:
    with pytest.raises(GpulabConfigError) as err:
        call()
    message = str(err.value)
    assert err.value.field == field, message
    assert "\n" not in message and message.startswith(field), message
    return message


def test_render_json_refuses_findings_that_are_not_a_list():
    """The issue's example: render_json(report, "x") is one line naming `findings`."""
    import json

    from gpulab.machine import doctor

    report = _machine_report()
    message = _refused_in_one_line(lambda: doctor.render_json(report, "x"), "findings")
    assert message == "findings='x' must be a list, not str"
    _refused_in_one_line(lambda: doctor.render_json("x", []), "report")
    _refused_in_one_line(lambda: doctor.render_text(report, [object()]), "findings[0]")
    assert json.loads(doctor.render_json(report, []))["exit_code"] == 0  # a right call still works


def test_machine_functions_refuse_odd_arguments_in_one_line():
    """pick_device(3), check_quick('maybe'), detect(nvml='x'), device_peak(report, 3)..."""
    from gpulab.machine import hardware, peaks, rules_setup, visible

    report = _machine_report()
    assert _refused_in_one_line(lambda: hardware.pick_device(3), "device") == (
        "device=3 must be a string, not int"
    )
    _refused_in_one_line(lambda: hardware.check_quick("maybe"), "quick")
    _refused_in_one_line(lambda: hardware.detect(nvml="pynvml"), "nvml")
    _refused_in_one_line(lambda: hardware.detect(torch_module="torch"), "torch_module")
    _refused_in_one_line(lambda: hardware.detect(environ=["CUDA_VISIBLE_DEVICES"]), "environ")
    _refused_in_one_line(lambda: peaks.device_peak(report, 3), "device")
    _refused_in_one_line(lambda: peaks.device_peak(report, "cpu", "fp33"), "dtype")
    _refused_in_one_line(lambda: visible.parse_visible_devices(0), "value")
    _refused_in_one_line(lambda: rules_setup.arch_list_covers("sm_90", "9.0"), "arch_list")


def test_machine_functions_take_numpy_numbers_as_plain_ones():
    """np.float64 and np.int64 give what the same plain Python numbers give."""
    from gpulab.machine import monitor, nvml, torch_probe

    progress = {"stage": "import"}
    note = nvml.nvml_timeout_note(progress, np.float64(2.5))
    assert note == nvml.nvml_timeout_note(progress, 2.5) and "within 2.5 s" in note
    assert torch_probe.torch_timeout_info({}, np.int64(60)) == torch_probe.torch_timeout_info(
        {}, 60
    )
    odd = monitor.watch(lambda: None, "cpu", interval_s=np.float64(0.02), min_seconds=np.int64(0))
    plain = monitor.watch(lambda: None, "cpu", interval_s=0.02, min_seconds=0)
    assert (odd.device, odd.note, odd.max_clock_mhz) == (plain.device, plain.note, None)


def test_budget_and_monitor_refuse_odd_arguments_in_one_line():
    """A device torch does not know, a load that is not a function: one line each."""
    from gpulab.machine import budget, monitor

    message = _refused_in_one_line(lambda: budget.free_bytes("banana"), "device")
    assert "not a device torch knows" in message
    _refused_in_one_line(lambda: budget.free_bytes(None), "device")
    _refused_in_one_line(lambda: monitor.watch(42), "load")
    _refused_in_one_line(
        lambda: monitor.watch(lambda: None, interval_s=np.float64(0)), "interval_s"
    )
    assert budget.fits("cpu", np.float64(0.0)) is budget.fits("cpu", 0.0) is True


# ------------------------------------------------------------------------- issue 30: ui and course
# The example in these layers, class_weights(labels, 0) (an IndexError deep in its loop
# before), and other bad values there, each refused in one line naming the parameter; NumPy
# numbers are accepted where a Python number is, with the same result.


@pytest.mark.parametrize(
    "labels, classes, field",
    [
        ([0, 0, 1, 2, 2, 2], 0, "classes"),  # the example
        ([0, 0, 1, 2, 2, 2], 2, "classes"),  # labels 0 to 2 need three classes: two are too few
        ([0, -1, 1], 3, "labels"),  # a negative label would count as the last class
        ([0.0, 1.0], 3, "labels"),  # not class ids
        ("list", 3, "labels"),  # a list, not an array
    ],
    ids=["classes=0", "too-few-classes", "negative-label", "float-labels", "a-list"],
)
def test_class_weights_refuses_what_it_cannot_count_naming_the_parameter(labels, classes, field):
    """The issue's class_weights(labels, 0), and its neighbours, each refused in one line."""
    from gpulab.course.slowloop import class_weights

    given = [0, 1] if labels == "list" else np.array(labels)
    with pytest.raises(GpulabConfigError) as err:
        class_weights(given, classes)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_class_weights_counts_as_before_with_numpy_or_python_classes():
    """Balanced weights n / (classes x count), counted by hand: 6 labels, counts 2, 1, 3, 0."""
    from gpulab.course.slowloop import class_weights

    labels = np.array([0, 0, 1, 2, 2, 2])
    by_hand = [6 / (4 * 2), 6 / (4 * 1), 6 / (4 * 3), 0.0]
    assert class_weights(labels, 4) == by_hand
    assert class_weights(labels, np.int64(4)) == by_hand
    assert class_weights(labels.astype(np.uint8), np.int32(4)) == by_hand


@pytest.mark.parametrize(
    "module, function, kwargs, field",
    [
        ("gpulab.course.figures", "format_figure", {"value": True}, "value"),
        (
            "gpulab.course.figures",
            "chapter_figures",
            {"notebook": "notebooks/99.ipynb"},
            "notebook",
        ),
        ("gpulab.course.figures_ch01", "tensor_fmas_per_clock", {"name": "L4"}, "name"),
        (
            "gpulab.course.figures_ch01",
            "ddr5_bandwidth_gbs",
            {"channels": 0, "mts": 4800},
            "channels",
        ),
        ("gpulab.course.textdata", "split_ids", {"ids": [1, 2, 3], "held_out": 1.0}, "held_out"),
        ("gpulab.course.textdata", "load_corpus", {"max_chars": 0}, "max_chars"),
        ("gpulab.course.slowloop", "loader_options", {"workers": -1}, "workers"),
        ("gpulab.course.slowloop", "recommended_workers", {"device": 3}, "device"),
        ("gpulab.course.slowloop_grading", "tolerance_for", {"precision": "bf16"}, "precision"),
        ("gpulab.course.derivations", "compute", {"name": "nope"}, "name"),
        ("gpulab.ui.calculators", "cost_calculator_html", {"currency": "EUR"}, "currency"),
        ("gpulab.ui.calculators", "memory_calculator_html", {"context": "8k"}, "context"),
        ("gpulab.ui.cli", "parse_memory", {"text": None}, "text"),
        ("gpulab.ui.listing", "show", {"obj": 42}, "obj"),
    ],
)
def test_ui_and_course_refuse_a_bad_value_in_one_line_naming_it(module, function, kwargs, field):
    """What used to fail deep inside (a TypeError, a KeyError, a torch error) is refused first."""
    import importlib

    fn = getattr(importlib.import_module(module), function)
    with pytest.raises(GpulabConfigError) as err:
        fn(**kwargs)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_ui_and_course_take_numpy_numbers_as_python_ones():
    """NumPy integers and floats give what the same Python numbers give, checked by hand."""
    from gpulab.course import derivations, figures_ch01, slowloop
    from gpulab.ui import calculators

    # two 64-bit channels (8 bytes each) at 4800 MT/s: 2 x 8 x 4800 / 1000 GB/s
    assert figures_ch01.ddr5_bandwidth_gbs(np.int64(2), np.int32(4800)) == 2 * 8 * 4800 / 1e3
    # 7 billion 16-bit weights: 7e9 x 2 bytes = 14 GB
    assert derivations.nominal_weight_gb(np.float64(7e9), "bf16") == pytest.approx(14.0)
    assert derivations.nominal_weight_gb(np.int64(7_000_000_000), "bf16") == pytest.approx(14.0)
    options = slowloop.loader_options(np.int64(2))
    assert options == slowloop.loader_options(2) and type(options["num_workers"]) is int
    assert calculators.memory_calculator_html(
        context=np.int64(4096), users=np.int32(2), memory_gb=np.float64(12.0)
    ) == calculators.memory_calculator_html(context=4096, users=2, memory_gb=12.0)


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
