"""Tests for gpulab.choose: fit, speed bound, power and price of GPU candidates for a workload."""

from __future__ import annotations

import dataclasses

import pytest

from gpulab import memory, models, perf, specs
from gpulab.core.errors import GpulabConfigError
from gpulab.estimate.choose import APPLE_GPU_SHARE, Candidate, Workload, evaluate, recommend

LLAMA70_INT4_8K = Workload("Llama-3-70B", weight_format="int4", context_tokens=8192)


# --------------------------------------------------------------------------- fit


# An RTX 4090 reports 24,564 MiB (nvidia-smi, as gpu_specs.json cites it); the tensors get what
# is left after a 0.5 GiB CUDA context, less a 5% allocator slack on those tensors.
RTX_4090_TENSORS = (24564 * 2**20 - 2**29) / 1.05


def test_llama3_70b_int4_8k_needs_two_rtx_4090():
    one = evaluate(LLAMA70_INT4_8K, "RTX 4090", 1)
    two = evaluate(LLAMA70_INT4_8K, "RTX 4090", 2)
    # The need is gpulab.memory's tensors; the runtime's share is off the cards' capacity.
    spec = models.get("Llama-3-70B")
    expected = memory.estimate_inference(spec, weights="int4", batch=1, seq_len=8192).peak
    assert one.memory_needed_bytes == expected
    assert 40e9 < one.memory_needed_bytes < 50e9  # 70.6B weights at ~4.1 bits are ~40 GB alone
    assert one.memory_available_bytes == pytest.approx(RTX_4090_TENSORS, abs=1)
    assert not one.fits and one.headroom_bytes < 0
    assert two.fits and two.memory_available_bytes == pytest.approx(2 * RTX_4090_TENSORS, abs=2)
    assert [c.count for c in recommend(LLAMA70_INT4_8K, gpus=["RTX 4090"])] == [2]


def test_each_card_brings_its_own_capacity_and_its_own_runtime_context():
    """The need does not grow with the cards; each card's context is off that card, once."""
    one = evaluate(LLAMA70_INT4_8K, "RTX 3090", 1)
    three = evaluate(LLAMA70_INT4_8K, "RTX 3090", 3)
    assert three.memory_needed_bytes == one.memory_needed_bytes
    card = (24576 * 2**20 - 2**29) / 1.05  # 24,576 MiB reported by an RTX 3090
    assert three.memory_available_bytes == pytest.approx(3 * card, abs=3)
    assert three.memory_per_card_bytes == three.memory_needed_bytes // 3


def test_kv_cache_scales_with_users_and_context():
    base = evaluate(Workload("Llama-3-8B", context_tokens=4096), "RTX 4090")
    users = evaluate(Workload("Llama-3-8B", context_tokens=4096, concurrent_users=4), "RTX 4090")
    longer = evaluate(Workload("Llama-3-8B", context_tokens=8192), "RTX 4090")
    assert users.breakdown.kv_cache == 4 * base.breakdown.kv_cache
    assert longer.breakdown.kv_cache == 2 * base.breakdown.kv_cache
    # Llama-3-8B: 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 128 KiB per token
    assert base.breakdown.kv_cache == 4096 * 32 * 8 * 128 * 2 * 2


def test_prefill_batch_only_changes_activations():
    everyone = Workload("Llama-3-8B", concurrent_users=8, context_tokens=4096)
    one_at_a_time = dataclasses.replace(everyone, prefill_batch=1)
    a = evaluate(everyone, "H100 SXM").breakdown
    b = evaluate(one_at_a_time, "H100 SXM").breakdown
    assert a == memory.estimate_inference(models.get("Llama-3-8B"), batch=8, seq_len=4096)
    assert (b.weights, b.kv_cache) == (a.weights, a.kv_cache)
    assert b.activations == memory.inference_activation_bytes(models.get("Llama-3-8B"), 1, 4096)
    assert b.activations < a.activations and b.total < a.total
    # prefill_batch at or above the user count is the all-at-once estimate
    assert evaluate(dataclasses.replace(everyone, prefill_batch=8), "H100 SXM").breakdown == a


def test_a_model_spec_works_as_well_as_a_name():
    spec = models.get("Mistral-7B")
    by_spec = evaluate(Workload(spec, weight_format="q4_k_m"), "RTX 3060 12GB")
    by_name = evaluate(Workload("Mistral-7B", weight_format="q4_k_m"), "RTX 3060 12GB")
    assert by_spec.memory_needed_bytes == by_name.memory_needed_bytes
    assert by_spec.fits


def test_apple_offers_the_gpus_share_of_unified_memory_and_one_chip():
    c = evaluate(LLAMA70_INT4_8K, "Apple M3 Ultra")
    # 512 GB of unified memory is 512 GiB; the GPU may wire its share, less the slack
    assert c.memory_available_bytes == pytest.approx(512 * 2**30 * APPLE_GPU_SHARE / 1.05, abs=1)
    assert c.fits and c.power_w is None and c.price_usd is None
    assert any("unified memory" in r for r in c.reasons)
    with pytest.raises(GpulabConfigError, match="count=2"):
        evaluate(LLAMA70_INT4_8K, "Apple M3 Ultra", 2)


# --------------------------------------------------------------------------- speed, power, price


def test_decode_bound_is_perfs_and_scales_with_cards():
    spec = models.get("Llama-3-70B")
    bound = perf.decode_tokens_per_s(
        spec, "int4", "bf16", batch=1, seq_len=8192, bandwidth_gbs=1008
    )
    one = evaluate(LLAMA70_INT4_8K, "RTX 4090", 1)
    two = evaluate(LLAMA70_INT4_8K, "RTX 4090", 2)
    assert one.decode_tokens_per_s_total == pytest.approx(bound)
    # 1008 GB/s / ~42 GB read per token: about 24 tokens/s, an upper bound
    assert 20 < one.decode_tokens_per_s_per_user < 30
    assert two.decode_tokens_per_s_total == pytest.approx(2 * bound)
    assert any("tensor parallel" in r and "pipeline" in r for r in two.reasons)


def test_total_is_users_times_per_user():
    c = evaluate(Workload("Qwen2.5-7B", concurrent_users=16, context_tokens=2048), "L40S")
    assert c.decode_tokens_per_s_total == pytest.approx(16 * c.decode_tokens_per_s_per_user)
    assert c.training_tokens_per_s_bound is None


def test_power_and_price_are_per_card_times_count():
    two = evaluate(LLAMA70_INT4_8K, "RTX 4090", 2)
    assert two.power_w == 900
    assert two.price_usd == 3198 and two.price_date == "2022-10"
    h100 = evaluate(LLAMA70_INT4_8K, "H100 SXM")
    assert h100.price_usd is None and h100.price_date is None and h100.power_w == 700


def test_full_fine_tuning_of_an_8b_model_does_not_fit_one_h100():
    w = Workload("Llama-3-8B", task="fine-tuning", context_tokens=2048)
    c = evaluate(w, "H100 SXM")
    spec = models.get("Llama-3-8B")
    # bf16 mixed precision with AdamW: 2 + 2 + 4 + 8 = 16 bytes per parameter before activations
    assert c.breakdown.weights + c.breakdown.gradients + c.breakdown.optimizer == pytest.approx(
        16 * spec.n_params, abs=3
    )
    assert not c.fits and c.decode_tokens_per_s_total is None
    assert c.training_tokens_per_s_bound == pytest.approx(
        989.4e12 / perf.training_flops(spec, 1, seq_len=2048)
    )
    # on CUDA PyTorch's AdamW is "foreach": its step makes one fp32 copy of every parameter
    # (4 bytes), while the activations are gone: 16 + 4 = 20 bytes per parameter at the peak
    assert c.memory_needed_bytes == c.breakdown.peak == pytest.approx(20 * spec.n_params, abs=8)
    assert evaluate(w, "H100 SXM", 2).fits
    assert any("FSDP" in r for r in evaluate(w, "H100 SXM", 2).reasons)


# --------------------------------------------------------------------------- recommend


WORKLOADS = [
    LLAMA70_INT4_8K,
    Workload("Llama-3-8B", weight_format="q4_k_m", context_tokens=8192, concurrent_users=10),
    Workload("Mixtral-8x7B", weight_format="int8", concurrent_users=4),
    Workload("Llama-3.2-1B", task="fine-tuning", context_tokens=1024, concurrent_users=4),
    Workload("DeepSeek-R1", weight_format="int4", context_tokens=4096),
]


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.describe())
def test_recommend_returns_only_fitting_minimal_candidates_in_order(workload):
    found = recommend(workload)
    assert all(isinstance(c, Candidate) and c.fits for c in found)
    assert all(c.memory_needed_bytes <= c.memory_available_bytes for c in found)
    assert len({c.gpu for c in found}) == len(found)  # one entry per GPU model
    for c in found:
        if c.count > 1:  # the smallest count that fits
            assert not evaluate(workload, c.gpu, c.count - 1).fits
    keys = [(c.count, c.price_usd if c.price_usd is not None else float("inf")) for c in found]
    assert keys == sorted(keys)


def test_recommend_leaves_out_what_never_fits():
    # DeepSeek-R1 in int4 is ~350 GB of weights: no 24 GB card fits it in 8 or fewer.
    found = recommend(WORKLOADS[-1], gpus=["RTX 4090", "H200", "AMD Instinct MI300X"])
    assert "RTX 4090" not in {c.gpu for c in found}
    assert not evaluate(WORKLOADS[-1], "RTX 4090", 8).fits
    assert {c.gpu for c in found} == {"H200", "AMD Instinct MI300X"}


def test_recommend_with_names_as_reported_and_max_count():
    found = recommend(LLAMA70_INT4_8K, gpus=["NVIDIA GeForce RTX 4090", "RTX 4090"])
    assert [(c.gpu, c.count) for c in found] == [("RTX 4090", 2)]
    assert recommend(LLAMA70_INT4_8K, gpus=["RTX 4090"], max_count=1) == []


def test_reasons_spell_out_the_arithmetic():
    c = evaluate(LLAMA70_INT4_8K, "RTX 4090")
    text = "\n".join(c.reasons)
    assert "does not fit" in text and "short" in text and "decode bound" in text
    assert "$1,599" in text and "450 W" in text


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"model": "Llama-9-000B"}, "model="),
        ({"weight_format": "int3"}, "weight_format="),
        ({"context_tokens": 0}, "context_tokens="),
        ({"context_tokens": 4096.0}, "context_tokens="),
        ({"concurrent_users": -1}, "concurrent_users="),
        ({"task": "pretraining"}, "task="),
        ({"kv_cache": "fp4"}, "kv_cache="),
        ({"prefill_batch": 0}, "prefill_batch="),
        ({"task": "fine-tuning", "weight_format": "int4"}, "weight_format="),
    ],
)
def test_bad_workloads_name_the_field(kwargs, field):
    args = {"model": "Llama-3-8B"} | kwargs
    with pytest.raises(GpulabConfigError, match=field):
        Workload(**args)


def test_unknown_model_lists_the_catalogue():
    with pytest.raises(GpulabConfigError) as info:
        Workload("GPT-5")
    assert "Llama-3-70B" in str(info.value)


def test_bad_gpu_and_counts_name_the_field():
    w = Workload("Llama-3-8B")
    with pytest.raises(GpulabConfigError, match="gpu='GTX 9090'") as info:
        evaluate(w, "GTX 9090")
    assert "RTX 4090" in str(info.value)
    with pytest.raises(GpulabConfigError, match="count=0"):
        evaluate(w, "RTX 4090", 0)
    with pytest.raises(GpulabConfigError, match="max_count=0"):
        recommend(w, max_count=0)
    with pytest.raises(GpulabConfigError, match=r"gpus\[1\]='Voodoo 2'") as info:
        recommend(w, gpus=["RTX 4090", "Voodoo 2"])
    assert info.value.field == "gpus[1]"
    with pytest.raises(GpulabConfigError, match="workload"):
        evaluate("Llama-3-8B", "RTX 4090")


def test_every_table_row_can_be_evaluated():
    w = Workload("Llama-3.2-1B")
    for name in specs.load_gpus():
        c = evaluate(w, name)
        assert c.gpu == name and c.decode_tokens_per_s_total > 0
