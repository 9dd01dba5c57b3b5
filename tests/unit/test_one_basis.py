"""One basis per quantity (issue 27): each kind of figure the pages compare comes from one
function of gpulab.estimate.basis, and a name means what the function gives for its case.

The check itself is tools/checks/one_basis.py; these tests run it on the book's figures and code,
show that it fails on the drifts it was written against, and check the basis functions against
hand derivations.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.estimate import basis
from tools.checks import one_basis


def test_every_figure_of_a_kind_comes_from_its_one_function():
    """The chapters' figures: no kind computed twice, no name that disagrees with its value,
    no quantity named twice."""
    assert one_basis.figure_problems(one_basis.chapters()) == []


def test_the_chapters_and_the_fact_check_call_the_basis():
    """No module of gpulab.course computes a kind with the functions under the basis."""
    assert one_basis.code_problems(one_basis.ROOT / "src" / "gpulab" / "course") == []


# ---------------------------------------------------------------- the check can fail


def test_a_kind_computed_by_a_second_function_is_named():
    """Chapter 4 at 92e49f3 divided by every weight's bytes, not the bytes a token reads."""
    figures = {"figures_ch04": {"llama7_fp16_rtx4090_bound_tok_s": 1008 / 13.476831232}}
    problems = one_basis.figure_problems(figures)
    assert any("computed outside" in p and "second function" in p for p in problems)
    assert any("74.7" in p and "76.2757" in p for p in problems), problems


def test_a_name_whose_value_is_another_case_is_named():
    """Chapter 7's 70B read at a 4K cache under a name that says an empty cache (38.74 against
    37.40 GB): the drift the issue found, now flagged as a name that says another case."""
    four_k = basis.read_gb("Llama-3-70B", "int4", context=4096)
    problems = one_basis.figure_problems({"figures_ch07": {"llama70_int4_read_gb": four_k}})
    assert len(problems) == 1
    assert "38.7412" in problems[0] and "context=1" in problems[0]


def test_one_quantity_under_two_names_is_named():
    """Two names, one function, one set of arguments: one quantity named twice."""
    bound = basis.bound_tok_s("Llama-3-70B", "q4_k_m", "RTX 4090", context=4096)
    figures = {
        "figures_ch02": {"llama70_q4km_rtx4090_4k_bound_tok_s": bound},
        "figures_ch02b": {"offload_full_tok_s": copy.copy(bound)},
    }
    problems = one_basis.figure_problems(figures)
    assert problems == [
        "one quantity, 2 names: llama70_q4km_rtx4090_4k_bound_tok_s, offload_full_tok_s are all "
        "bound_tok_s(model='Llama-3-70B', fmt='q4_k_m', device='RTX 4090', context=4096, "
        "batch=1)"
    ]


def test_a_name_of_one_kind_holding_another_is_named():
    read = basis.read_gb("Llama-2-7B", "fp16")
    problems = one_basis.figure_problems({"c": {"llama7_fp16_rtx4090_bound_tok_s": read}})
    assert any("names a decode bound and holds a bytes read per token" in p for p in problems)


def test_a_course_module_calling_under_the_basis_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(one_basis, "ROOT", tmp_path)
    (tmp_path / "figs.py").write_text(
        "from gpulab.estimate import perf\n"
        "x = perf.decode_tokens_per_s(spec, 'int4', 'bf16', 1, 1, 1008)\n"
        "y = cpu.peak_fp32_flops('turbo')\n"
    )
    problems = one_basis.code_problems(tmp_path)
    assert problems == [
        "figs.py:2: a decode bound computed by decode_tokens_per_s, not by gpulab.estimate.basis",
        "figs.py:3: a CPU peak computed by peak_fp32_flops, not by gpulab.estimate.basis",
    ]


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    "name, kind, case",
    [
        (
            "llama70_q4km_rtx4090_4k_bound_tok_s",
            "decode bound",
            {"model": "llama70", "fmt": "q4km", "device": "rtx4090", "ctx": "4"},
        ),
        ("laptop_fp16_bound_lo", "decode bound", {}),
        ("llama7_fp16_1k_read_gb", "bytes read per token", {"model": "llama7", "fmt": "fp16"}),
        ("r1_q4km_gb", "model size", {"model": "r1", "fmt": "q4km"}),
        ("llama70_int4_offload_tok_s", "offloaded decode bound", {"model": "llama70"}),
        ("llama7_full_finetune_gb", "full fine-tune memory", {"model": "llama7"}),
        ("cpu_allcore_tflops", "CPU peak", {"clocks": "allcore"}),
        ("rtx4090_bf16_tflops", None, None),
        ("llama70_q4km_need_gb", None, None),
    ],
)
def test_a_name_says_its_kind_and_its_case(name, kind, case):
    said = one_basis.kind_of(name)
    if kind is None:
        assert said is None
        return
    assert said[0] == kind
    assert case.items() <= said[1].items()


# ---------------------------------------------------------------- the basis, by hand


def test_bytes_read_and_bound_of_llama2_7b_by_hand():
    """Llama-2-7B: 6,738,415,616 parameters, an untied 32,000 x 4,096 embedding of which a token
    reads one row, and an FP16 KV cache of 2 x 32 layers x 4,096 x 2 bytes per token."""
    params, embedding, hidden = 6_738_415_616, 32_000 * 4096, 4096
    weights_read = (params - embedding + hidden) * 2
    kv_per_token = 2 * 32 * 4096 * 2
    assert basis.read_gb("Llama-2-7B", "fp16") == pytest.approx((weights_read + kv_per_token) / 1e9)
    at_1k = (weights_read + 1024 * kv_per_token) / 1e9
    assert basis.read_gb("Llama-2-7B", "fp16", context=1024) == pytest.approx(at_1k)
    assert basis.bound_tok_s("Llama-2-7B", "fp16", "RTX 4090", context=1024) == pytest.approx(
        1008 / at_1k
    )
    # a CPU's RAM: the i9-13900K's dual-channel DDR5-5600, 2 x 8 bytes x 5,600 MT/s
    assert basis.bound_tok_s("Llama-2-7B", "fp16", "Core i9-13900K") == pytest.approx(
        89.6 / ((weights_read + kv_per_token) / 1e9)
    )
    assert basis.bound_tok_s("Llama-2-7B", "fp16", 51.2) == pytest.approx(
        51.2 / ((weights_read + kv_per_token) / 1e9)
    )


def test_a_batch_reads_the_weights_once_and_every_cache():
    one = basis.read_gb("Llama-3-8B", "bf16", context=2048)
    eight = basis.read_gb("Llama-3-8B", "bf16", context=2048, batch=8)
    kv = 2 * 32 * 8 * 128 * 2 * 2048 / 1e9  # K and V, layers, KV heads, head dim, bf16, tokens
    row = 4096 * 2 / 1e9  # and each sequence looks up its own row of the embedding
    assert eight - one == pytest.approx(7 * (kv + row))
    assert basis.bound_tok_s("Llama-3-8B", "bf16", "H100 SXM", 2048, 8) == pytest.approx(
        8 * 3350 / eight
    )


def test_sizes_finetune_and_cpu_peak_by_hand():
    assert basis.weights_gb("Llama-2-7B", "fp16") == pytest.approx(6_738_415_616 * 2 / 1e9)
    # bf16 weights and gradients, FP32 master copy and two AdamW moments: 16 bytes a parameter
    assert basis.full_finetune_gb("Llama-2-7B") == pytest.approx(6_738_415_616 * 16 / 1e9)
    # 8 P-cores x 32 FLOP/cycle and 16 E-cores x 16 (AVX2: 8 lanes x 2 FMA units x 2, and one
    # FMA unit): at the few-core turbo P 5.8, E 4.3 GHz; at the all-core turbo P 5.5, E 4.3 GHz
    # (data/cpu_specs.json, with their sources)
    turbo, all_core = (8 * 32 * 5.8 + 16 * 16 * 4.3) / 1e3, (8 * 32 * 5.5 + 16 * 16 * 4.3) / 1e3
    assert basis.cpu_peak_tflops(clocks="turbo") == pytest.approx(turbo)
    assert basis.cpu_peak_tflops() == pytest.approx(all_core)


def test_offloaded_bound_is_the_bound_when_every_layer_fits():
    every = 80 + 1  # Llama-3-70B's layers and its output head
    full = basis.offload_tok_s("Llama-3-70B", "q4_k_m", "RTX 4090", 4096, gpu_layers=every)
    bound = basis.bound_tok_s("Llama-3-70B", "q4_k_m", "RTX 4090", context=4096)
    assert full == pytest.approx(bound, rel=1e-12)
    assert basis.layers_that_fit("Llama-3-70B", "q4_k_m", "RTX 4090") < 80
    assert basis.offload_tok_s("Llama-3-70B", "q4_k_m") < bound / 4


def test_a_quantity_keeps_what_made_it_and_computes_as_a_float():
    q = basis.bound_tok_s("Llama-2-7B", "q4_k_m", "RTX 4090")
    assert q.kind == "decode bound" and q.function == basis.KINDS["decode bound"]
    assert dict(q.args) == {
        "model": "Llama-2-7B",
        "fmt": "q4_k_m",
        "device": "RTX 4090",
        "context": basis.EMPTY_CACHE,
        "batch": 1,
    }
    assert repr(q) == repr(float(q)) and f"{q:.1f}" == f"{float(q):.1f}"
    assert type(q * 2) is float  # arithmetic gives a plain float: a new quantity, unnamed
    for twin in (copy.deepcopy(q), pickle.loads(pickle.dumps(q))):
        assert twin.call == q.call and twin == q
    assert set(basis.KINDS) == {
        "model size",
        "bytes read per token",
        "decode bound",
        "offloaded decode bound",
        "full fine-tune memory",
        "CPU peak",
    }


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: basis.bound_tok_s("Llama-2-7B", "fp17", "RTX 4090"), "fmt"),
        (lambda: basis.read_gb("Llama-2-7B", "fp16", context=0), "context"),
        (lambda: basis.cpu_peak_tflops(clocks="max"), "clocks"),
        (lambda: basis.weights_gb("Llama-9-7B", "fp16"), "model"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(GpulabConfigError) as err:
        call()
    assert field in str(err.value)
