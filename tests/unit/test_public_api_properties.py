"""Property-based tests of the public API (hypothesis): the contract, then the invariants.

The contract, for every checked public function of ``gpulab.reference`` and
``gpulab.estimate`` (found, not listed): whatever it is given, it either raises a
``GpulabConfigError`` (a ValueError) whose ``field`` names what was wrong, or returns a
finite, sane result. Arguments are drawn from each parameter's own annotation (valid values
of every kind it allows) mixed with the values that broke earlier versions: strings where
numbers go, NaN, infinities, 10**400, booleans, lists where choices go.

The invariants say what "sane" means for the estimators: memory grows with the batch and the
context and is at least the weights, tokens/s fall as the bytes per step grow, MFU lies in
(0, 1], the largest batch that fits is the boundary of what fits.

Examples are derandomized (the same every run, so CI cannot flake); set
GPULAB_HYPOTHESIS_EXAMPLES to search more, and GPULAB_HYPOTHESIS_RANDOM=1 for new examples.
`make test` runs this file in about a minute.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import os
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpulab
from gpulab import (
    calculator,
    choose,
    cost,
    finetune,
    formats,
    levers,
    memory,
    models,
    parallel,
    perf,
    power,
    specs,
)
from gpulab.core.constraints import _Bounds
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf
from gpulab.reference.modelspec import ModelSpec

EXAMPLES = int(os.environ.get("GPULAB_HYPOTHESIS_EXAMPLES", "30"))
RANDOM = os.environ.get("GPULAB_HYPOTHESIS_RANDOM") == "1"  # a fresh search, not CI's fixed one
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not RANDOM,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# ----------------------------------------------------------------------- the functions


def _public_functions(layers=("reference", "estimate")) -> list[Callable]:
    found = []
    for layer in layers:
        for name in gpulab.LAYERS[layer]:
            module = importlib.import_module(f"gpulab.{layer}.{name}")
            for attr, obj in sorted(vars(module).items()):
                if attr.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                    continue
                if inspect.isfunction(obj):
                    found.append(obj)
    return found


FUNCTIONS = _public_functions()
CHECKED = [f for f in FUNCTIONS if getattr(f, "__gpulab_checked__", False)]


def _qualname(fn: Callable) -> str:
    return f"{fn.__module__}.{fn.__name__}"


def test_every_public_function_with_arguments_is_checked_or_lenient_for_a_reason():
    """One validation layer at the public boundary: no hand-rolled checks left uncovered."""
    unchecked = [
        _qualname(f)
        for f in FUNCTIONS
        if not getattr(f, "__gpulab_checked__", False)
        and _parameters(f)
        and not getattr(f, "__gpulab_lenient__", None)  # reads odd values on purpose: why
    ]
    assert unchecked == []
    assert len(CHECKED) >= 60  # the suite below really covers the API


# ----------------------------------------------------------------------- strategies

SPECS = [models.get(name) for name in models.names()]
TINY = ModelSpec(
    name="tiny",
    n_layers=2,
    hidden_size=64,
    n_heads=4,
    n_kv_heads=2,
    head_dim=None,
    intermediate_size=128,
    vocab_size=100,
    tie_embeddings=True,
)
TINY_MOE = ModelSpec(
    name="tiny-moe",
    n_layers=3,
    hidden_size=64,
    n_heads=4,
    n_kv_heads=4,
    head_dim=None,
    intermediate_size=128,
    vocab_size=100,
    tie_embeddings=False,
    n_routed_experts=4,
    experts_per_token=2,
    moe_intermediate_size=32,
    first_dense_layers=1,
    n_shared_experts=1,
)
GPU_NAMES = list(specs.load_gpus())
# What a calculator's form fields may hold (valid text first), by field.
FORM_TEXT = {
    "model": ["Llama-3-8B", "Llama-3-70B", "DeepSeek-R1"],
    "weights": ["int4", "bf16"],
    "kv_cache": ["bf16", "fp8"],
    "context": ["4096", "131072", "1e9", "0", "-2"],
    "users": ["1", "30", "2.5"],
    "gpu": ["RTX 4090", "H200", "Apple M3 Max", "RTX 4060"],
    "memory_gb": ["", "8", "24", "0", "-1", "1e30"],
    "hardware_price": ["15000", "0"],
    "power_load_w": ["350", "0"],
    "power_idle_w": ["50", "9999"],
    "electricity_per_kwh": ["0.6"],
    "hours_per_day": ["10", "25"],
    "utilisation": ["1", "0.5", "0"],
    "years": ["3"],
    "price_per_hour": ["2.8"],
    "monthly_fee": ["0", "-1"],
    "tokens_per_s": ["50", "0"],
    "currency": ["CNY", "USD", "EUR"],
}
# The values that broke earlier versions (fuzzing found them): none is valid for any number.
JUNK = [
    None,
    "x",
    "0.05",
    "False",
    float("nan"),
    float("inf"),
    -float("inf"),
    -1,
    0,
    10**400,
    True,
    [1],
    ["bf16"],
    {},
    1.5e308,
    object(),
]


def _parameters(fn: Callable) -> list[inspect.Parameter]:
    return [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _annotation(fn: Callable, param: inspect.Parameter) -> Any:
    """The parameter's annotation, evaluated in the function's module; Any if it cannot be."""
    ann = param.annotation
    if ann is inspect.Parameter.empty:
        return Any
    if isinstance(ann, str):
        try:
            return eval(ann, inspect.unwrap(fn).__globals__, {})  # noqa: S307 - our own modules
        except Exception:
            return Any
    return ann


def _number(kind: type, rules: list) -> st.SearchStrategy:
    low, high, low_open, high_open = -1e6, 1e6, False, False
    for rule in rules:
        if isinstance(rule, _Bounds):
            if rule.low is not None:
                low, low_open = rule.low, rule.low_open
            if rule.high is not None:
                high, high_open = rule.high, rule.high_open
    if kind is int:
        lo = int(low) + (1 if low_open and low == int(low) else 0)
        hi = int(min(high, 1e6)) - (1 if high_open and high == int(high) else 0)
        small = st.integers(lo, max(lo, min(hi, lo + 64)))
        return st.one_of(small, st.integers(lo, max(lo, hi)))
    floats = st.floats(
        low,
        min(high, 1e6),
        allow_nan=False,
        allow_infinity=False,
        exclude_min=low_open,
        exclude_max=high_open,
    )
    # mostly values of a sensible size, sometimes the smallest the validation layer accepts
    return st.one_of(
        floats.filter(lambda x: x == 0 or abs(x) >= 1e-9),
        st.just(1e-12).filter(lambda x: low < x < high or (x == low and not low_open)),
    )


FACTORIES: dict[type, st.SearchStrategy] = {}


def _valid(fn: Callable, name: str, ann: Any) -> st.SearchStrategy | None:
    """Values of every kind `ann` allows (None when the suite cannot make one)."""
    origin = typing.get_origin(ann)
    if name in ("inputs", "inputs_json"):  # a static calculator's form, as text
        forms = st.one_of(
            *(
                st.fixed_dictionaries(
                    {f: st.sampled_from(FORM_TEXT[f] + ["", "x", "nan"]) for f in fields}
                )
                for fields in (calculator.MEMORY_FIELDS, calculator.COST_FIELDS)
            )
        )
        return forms.map(json.dumps) if name == "inputs_json" else forms
    if ann is Any and name == "dtype":  # a dtype name, a byte count, or a torch dtype
        import torch

        return st.sampled_from(
            ["fp32", "bf16", "fp16", "int8", 2, 4, torch.float32, torch.bfloat16]
        )
    if origin is Annotated:
        base, *extras = typing.get_args(ann)
        choices = [e for e in extras if isinstance(e, OneOf)]
        if choices:
            return st.sampled_from(choices[0].choices())
        if base in (int, float):
            return _number(base, list(extras))
        return _valid(fn, name, base)
    if origin in (typing.Union, __import__("types").UnionType):
        arms = [_valid(fn, name, a) for a in typing.get_args(ann) if a is not type(None)]
        arms = [a for a in arms if a is not None]
        if type(None) in typing.get_args(ann):
            arms.append(st.none())
        return st.one_of(arms) if arms else None
    if origin in (list, tuple, Sequence):
        args = [a for a in typing.get_args(ann) if a is not Ellipsis]
        item = _valid(fn, name, args[0]) if len(args) == 1 else None
        if item is None:
            return None
        return st.lists(item, min_size=1, max_size=4)
    if ann is bool:
        return st.booleans()
    if ann is int:
        return st.integers(0, 1024)
    if ann is float:
        return st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
    if ann is str:
        if (
            name in ("gpu", "name")
            and fn.__module__ != "gpulab.reference.specs"
            or fn.__name__ in ("get_gpu", "build_for_gpu")
        ):
            return st.sampled_from(GPU_NAMES + ["RTX4090", "GTX 9999"])
        if name == "model":
            return st.sampled_from(models.names() + ["llama3-8b"])
        if name == "device":
            return st.sampled_from(["cuda", "cpu", "mps"])
        return st.sampled_from(["12.4", "12.6", "Core i9-13900K", "x"])
    if ann in FACTORIES:
        return FACTORIES[ann]
    if ann is specs.GPUSpec:
        return st.sampled_from(list(specs.load_gpus().values()))
    if ann is Mapping or origin in (dict, Mapping):
        return None
    return None


def _draw_arguments(fn: Callable, data: st.DataObject) -> dict[str, Any] | None:
    kwargs = {}
    for param in _parameters(fn):
        if param.name.startswith("_"):
            continue
        required = param.default is inspect.Parameter.empty
        if not required and not data.draw(st.booleans(), label=f"pass {param.name}"):
            continue
        valid = _valid(fn, param.name, _annotation(fn, param))
        if valid is None:
            if required:
                return None
            continue
        junk = data.draw(st.integers(0, 9), label="junk?") == 0
        kwargs[param.name] = data.draw(st.sampled_from(JUNK) if junk else valid, label=param.name)
    return kwargs


def _f(low: float, high: float) -> st.SearchStrategy:
    """Floats in [low, high] without the subnormal crumbs the validation layer refuses."""
    return st.floats(low, high, allow_nan=False).map(lambda x: 0.0 if abs(x) < 1e-9 else x)


FACTORIES.update(
    {
        ModelSpec: st.sampled_from(SPECS + [TINY, TINY_MOE]),
        memory.Breakdown: st.builds(
            lambda w, k: memory.Breakdown(weights=w, kv_cache=k),
            st.integers(0, 10**12),
            st.integers(0, 10**11),
        ),
        parallel.Strategy: st.sampled_from(
            parallel.standard_strategies(8) + [parallel.Strategy("TPxPP", tensor=2, pipeline=2)]
        ),
        choose.Workload: st.builds(
            choose.Workload,
            st.sampled_from(models.names()),
            st.sampled_from(["bf16", "int4", "q4_k_m"]),
            st.integers(1, 32768),
            st.integers(1, 32),
        ),
        cost.LocalSetup: st.builds(
            cost.LocalSetup, _f(0, 1e5), _f(100, 2000), _f(0, 2), _f(0.5, 24)
        ),
        cost.CloudRate: st.builds(cost.CloudRate, _f(0, 100)),
        power.Build: st.builds(power.Build, _f(50, 1000), st.integers(1, 8)),
        finetune.FinetuneRecipe: st.one_of(
            st.builds(
                finetune.FinetuneRecipe,
                st.just("full"),
                st.sampled_from(["bf16", "fp32"]),
                st.sampled_from(["adamw", "adamw8bit", "sgd"]),
                st.sampled_from(["fused", "foreach", "for-loop", "auto"]),
                st.booleans(),
                st.booleans(),
                batch=st.integers(1, 8),
                seq_len=st.integers(1, 8192),
                loss_chunks=st.integers(1, 16),
                compile=st.booleans(),
            ),
            st.builds(
                finetune.FinetuneRecipe,
                st.sampled_from(["lora", "qlora"]),
                lora_rank=st.integers(1, 64),
                lora_targets=st.sets(st.sampled_from(parallel.LORA_TARGETS), min_size=1).map(tuple),
                lora_output=st.booleans(),
                activation_checkpointing=st.booleans(),
                batch=st.integers(1, 8),
                seq_len=st.integers(1, 8192),
                loss_chunks=st.integers(1, 16),
            ),
        ),
        levers.Lever: st.builds(
            levers.Lever,
            st.just("lever"),
            st.integers(1, 16),
            st.integers(1, 8),
            st.sampled_from(list(formats.TRAINING_PRECISIONS)),
            st.booleans(),
        ),
        parallel.Transfer: st.builds(
            parallel.Transfer,
            st.sampled_from(["all-reduce", "all-gather"]),
            st.just("gradients"),
            st.integers(1, 10**10),
            st.integers(1, 10),
            st.integers(1, 16),
            st.just("test"),
        ),
    }
)


# ----------------------------------------------------------------------- sane results


def _sane(value: Any, path: str = "result", depth: int = 0) -> None:
    """Every number reachable from the result is finite; nothing absurdly nested."""
    assert depth < 8, path
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, float):
        assert math.isfinite(value), f"{path} = {value}"
        return
    if isinstance(value, int):
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            _sane(v, f"{path}[{k!r}]", depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _sane(v, f"{path}[{i}]", depth + 1)
        return
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            _sane(getattr(value, f.name), f"{path}.{f.name}", depth + 1)


def _allowed_fields(fn: Callable, kwargs: dict[str, Any]) -> set[str]:
    """A message may name a parameter, or a field of a dataclass argument (a Strategy's tensor)."""
    names = {p.name for p in _parameters(fn)}
    if isinstance(kwargs.get("field"), str):  # resolve_gpu names the field its caller gives
        names.add(kwargs["field"])
    for value in kwargs.values():
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names |= {f.name for f in dataclasses.fields(value)}
    return names


@pytest.mark.parametrize("fn", CHECKED, ids=_qualname)
def test_contract_a_clear_error_naming_the_field_or_a_sane_result(fn):
    """Whatever the arguments, a GpulabConfigError naming the field, or a finite result."""

    @SETTINGS
    @given(st.data())
    def run(data):
        kwargs = _draw_arguments(fn, data)
        if kwargs is None:  # a new function the suite cannot call yet: say so, do not skip it
            pytest.fail(f"no strategy for a required argument of {_qualname(fn)}: add one")
        try:
            result = fn(**kwargs)
        except GpulabConfigError as err:
            field = (err.field or "").split("[")[0]
            assert field in _allowed_fields(fn, kwargs), (str(err), kwargs)
            assert 0 < len(str(err)) < 1500 and "\n" not in str(err), str(err)
            return
        _sane(result)

    run()


# ----------------------------------------------------------------------- invariants

spec_st = st.sampled_from(SPECS + [TINY, TINY_MOE])
weights_st = st.sampled_from(list(formats.WEIGHT_FORMATS))
kv_st = st.sampled_from(list(formats.KV_FORMATS))
batch_st = st.integers(1, 64)
seq_st = st.integers(1, 131072)


@SETTINGS
@given(spec_st, weights_st, kv_st, batch_st, seq_st, st.integers(1, 8), st.integers(1, 4096))
def test_inference_memory_grows_with_batch_and_context_and_covers_the_weights(
    spec, weights, kv, batch, seq, more_batch, more_seq
):
    b = memory.estimate_inference(spec, weights, kv, batch, seq)
    assert b.total >= b.weights == memory.weight_bytes(spec, weights) > 0
    assert min(b.as_dict().values()) >= 0
    bigger = memory.estimate_inference(spec, weights, kv, batch + more_batch, seq + more_seq)
    assert bigger.total >= b.total and bigger.kv_cache > b.kv_cache


@SETTINGS
@given(
    spec_st,
    st.sampled_from(list(formats.TRAINING_PRECISIONS)),
    st.sampled_from(list(memory.OPTIMIZERS)),
    st.integers(1, 16),
    st.integers(1, 8192),
    st.booleans(),
)
def test_training_memory_grows_with_batch_and_its_peak_lies_within_the_total(
    spec, precision, optimizer, batch, seq, ckpt
):
    b = memory.estimate_training(spec, precision, optimizer, batch, seq, ckpt)
    # the peak may pass the total only by what is alive for a moment: the tied embedding's
    # gradient copy, the optimizer step's temporaries, the loss backward's vocab-wide fp32
    # gradients (4 bytes per token and vocabulary entry) and the last layer's MLP backward's
    # (2 MLP widths and one hidden width per token, at most 4 bytes each)
    recipe = formats.TRAINING_PRECISIONS[precision]
    parts = spec.params_by_component()
    tied_copy = parts["embedding"] * recipe["gradients"] if spec.tie_embeddings else 0
    step = memory.optimizer_step_bytes(
        spec, optimizer, state_bytes=4 if recipe["master"] else recipe["gradients"]
    )
    loss = batch * seq * spec.vocab_size * 4
    mlp = batch * seq * (2 * spec.intermediate_size + spec.hidden_size) * 4
    assert b.weights <= b.peak <= b.total + tied_copy + step + loss + mlp
    bigger = memory.estimate_training(spec, precision, optimizer, batch + 1, seq, ckpt)
    assert bigger.total > b.total and bigger.activations > b.activations
    if not ckpt:
        with_ckpt = memory.estimate_training(spec, precision, optimizer, batch, seq, True)
        assert with_ckpt.activations <= b.activations


@SETTINGS
@given(spec_st, weights_st, kv_st, batch_st, seq_st, st.floats(1, 10_000))
def test_tokens_per_second_fall_as_the_bytes_per_step_grow(spec, weights, kv, batch, seq, bw):
    fast = perf.decode_tokens_per_s(spec, weights, kv, batch, seq, bw)
    longer = perf.decode_tokens_per_s(spec, weights, kv, batch, seq * 2, bw)
    step, longer_step = (
        perf.decode_bytes_per_step(spec, weights, kv, batch, s) for s in (seq, seq * 2)
    )
    assert longer_step > step and longer < fast
    assert fast == pytest.approx(batch * bw * 1e9 / step)
    assert perf.decode_tokens_per_s(spec, weights, kv, batch, seq, bw * 2) == pytest.approx(
        2 * fast
    )


@SETTINGS
@given(spec_st, st.floats(1e-3, 1e12), st.floats(1, 5000), st.booleans())
def test_mfu_is_a_fraction_or_an_error_naming_the_rate(spec, tokens_per_s, peak, training):
    try:
        share = perf.mfu(tokens_per_s, spec, peak, training)
    except GpulabConfigError as err:
        assert err.field == "achieved_tokens_per_s" and "%" in str(err)
        per_token = perf.forward_flops(spec, 1) * (3 if training else 1)
        # refused only above the rated peak plus a boosting card's headroom
        assert tokens_per_s * per_token > perf.BOOST_HEADROOM * peak * 1e12
        return
    assert 0 < share <= perf.BOOST_HEADROOM


@SETTINGS
@given(
    spec_st,
    st.sampled_from(["int4", "q4_k_m", "bf16"]),
    st.floats(1e8, 1e12),
    st.integers(1, 32768),
)
def test_largest_batch_is_the_boundary_of_what_fits(spec, weights, budget, seq):
    largest = memory.largest_batch(spec, budget, seq_len=seq, weights=weights, limit=4096)

    def total(b):
        return memory.estimate_inference(spec, weights, batch=b, seq_len=seq).total

    if largest == 0:
        assert total(1) > budget
    else:
        assert total(largest) <= budget
        assert largest == 4096 or total(largest + 1) > budget


@SETTINGS
@given(spec_st, st.floats(1e9, 2e11), st.floats(1, 2))
def test_more_vram_never_holds_fewer_layers(spec, vram, factor):
    fewer = memory.gpu_layers_that_fit(spec, vram)
    more = memory.gpu_layers_that_fit(spec, vram * factor)
    assert 0 <= fewer <= more <= spec.n_layers + 1


@SETTINGS
@given(
    st.sampled_from(models.names()),
    st.sampled_from(["int4", "bf16"]),
    st.integers(512, 32768),
    st.integers(1, 8),
)
def test_every_recommended_candidate_fits(model, fmt, context, users):
    workload = choose.Workload(model, fmt, context, users)
    for candidate in choose.recommend(workload, max_count=4):
        assert candidate.fits and candidate.memory_needed_bytes <= candidate.memory_available_bytes


@SETTINGS
@given(FACTORIES[cost.LocalSetup], FACTORIES[cost.CloudRate])
def test_break_even_is_where_the_cumulative_costs_cross(setup, rate):
    months = cost.break_even_months(setup, rate)
    curve = cost.cost_over_time(setup, rate, 120)
    if months is None:
        assert all(c <= loc + 1e-6 for c, loc in zip(curve.cloud, curve.local, strict=True))
    elif months < 119:
        before, after = math.floor(months), math.ceil(months) + 1
        assert curve.local[before] >= curve.cloud[before] - 1e-6
        assert curve.local[after] <= curve.cloud[after] + 1e-6


# ----------------------------------------------------------------------- the cases found by fuzzing


LLAMA = models.get("Llama-3-8B")


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: memory.estimate_inference(LLAMA, allocator_slack="0.05"), "allocator_slack"),
        (
            lambda: memory.estimate_training(LLAMA, activation_checkpointing="False"),
            "activation_checkpointing",
        ),
        (lambda: memory.estimate_inference(LLAMA, weights=["bf16"]), "weights"),
        (lambda: memory.estimate_inference("Llama-3-8B"), "spec"),
        (lambda: memory.largest_batch(LLAMA, float("nan")), "budget_bytes"),
        (lambda: memory.gpu_layers_that_fit(LLAMA, float("nan")), "vram_bytes"),
        (lambda: memory.kv_cache_bytes(LLAMA, 10**400), "seq_len"),
        (lambda: perf.mfu(1e9, LLAMA, 100), "achieved_tokens_per_s"),
        (lambda: specs.get_gpu("RTX4090x"), "name"),
        (
            lambda: ModelSpec.from_hf_config(
                {**models.CATALOGUE["Llama-3.2-1B"].config, "tie_word_embeddings": "false"}
            ),
            "tie_word_embeddings",
        ),
        (lambda: choose.recommend(choose.Workload("Llama-3-8B"), max_count=10**6), "max_count"),
        # arguments handed on through **kwargs are checked as the caller's, size limits included
        (lambda: memory.largest_batch(LLAMA, 1e9, context_bytes=10**400), "context_bytes"),
        (lambda: power.build_for_gpu("RTX 4090", cpu_power_w=1e300), "cpu_power_w"),
    ],
)
def test_each_case_fuzzing_found_gives_a_clear_error(call, field):
    with pytest.raises(GpulabConfigError) as info:
        call()
    assert info.value.field == field, str(info.value)
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)


def test_a_near_miss_gets_a_suggestion():
    with pytest.raises(GpulabConfigError, match="did you mean 'RTX 4090'"):
        specs.get_gpu("RTX4090")
    with pytest.raises(GpulabConfigError, match="did you mean 'q4_k_m'"):
        memory.weight_bytes(LLAMA, "Q4KM")


# ----------------------------------------------------------------------- detection

ODD_VALUES = [
    None,
    "N/A",
    b"\xff\xfe",
    float("nan"),
    float("inf"),
    -1,
    0,
    2**32 - 1,
    10**400,
    True,
    [],
    (),
    (-1, -1),
    ("8", "9"),
    1.5,
    "8.9",
    object(),
]
NVML_FIELDS = [
    "name",
    "uuid",
    "memory",
    "cc",
    "power_limit_mw",
    "power_mw",
    "temperature",
    "sm_clock",
    "max_sm_clock",
    "mem_clock",
    "pcie_gen",
    "pcie_gen_max",
    "pcie_width",
    "pcie_width_max",
    "utilization",
    "clocks_event_reasons",
    "processes",
]


@SETTINGS
@given(
    st.dictionaries(st.sampled_from(NVML_FIELDS), st.sampled_from(ODD_VALUES), max_size=6),
    st.sampled_from([None, "550.54.14", b"\xff", 3, float("nan")]),
    st.sampled_from([12040, None, "N/A", -5, 10**9]),
)
def test_detection_and_the_doctor_survive_whatever_nvml_returns(odd, driver, cuda):
    """Any mix of odd NVML values: the GPU stays in the report, the doctor runs, JSON is strict."""
    import json as json_

    from gpulab import doctor, hardware
    from tests.unit.test_hardware import UUID0, FakeNVML, fake_torch, full_gpu

    class Odd(FakeNVML):
        def nvmlDeviceGetName(self, h):
            return self._get("name", h)

    gpu = full_gpu("NVIDIA GeForce RTX 4090", UUID0) | odd
    report = hardware.detect(
        environ={}, nvml=Odd([gpu], driver=driver, cuda=cuda), torch_module=fake_torch()
    )
    assert len(report.gpus) == 1 and report.gpus_present == 1
    findings = doctor.diagnose(report)
    assert "no-gpu" not in {f.code for f in findings}
    text = doctor.render_json(report, findings)

    def refuse(constant):
        raise AssertionError(f"not strict JSON: {constant}")

    json_.loads(text, parse_constant=refuse)
    assert str(report) and report._repr_html_()


def test_values_the_library_derives_may_exceed_the_input_limits():
    """Inputs within the limits can give an exabyte of activations: a sane (finite) answer."""
    b = memory.estimate_training(models.get("DeepSeek-R1"), batch=10**6, seq_len=10**6)
    assert b.activations > 1e18 and math.isfinite(float(b.total))
