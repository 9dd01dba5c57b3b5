"""Odd inputs to the reference and estimate layers (issue 25, a fuzz of the public API).

Each case once raised a TypeError, an AttributeError or a RecursionError, named a parameter
the caller never passed, suggested the wrong card, wrote the whole input back, or returned
figures for a split that cannot exist. Expected: one GpulabConfigError naming the caller's
field, or (for a lenient lookup) None.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from gpulab.core import constraints
from gpulab.core.errors import GpulabConfigError
from gpulab.estimate import calculator, memory, parallel, serving
from gpulab.reference import models, published, specs
from gpulab.reference.modelspec import ModelSpec

LLAMA_1B = models.get("Llama-3.2-1B")  # 16 layers, 32 heads, 8 KV heads, 2048 wide
LLAMA_8B = models.get("Llama-3-8B")  # 32 layers, 32 heads, 8 KV heads, 4096 wide
LLAMA_1B_CONFIG = models.CATALOGUE["Llama-3.2-1B"].config
LLAMA_8B_CONFIG = models.CATALOGUE["Llama-3-8B"].config


def _paste(text: str, weights: str = "int4", mode: str = "inference"):
    return calculator.estimate_for(
        calculator.PASTE, text, mode, weights, "bf16", "bf16-mixed", "adamw", 4096, 1
    )


def _one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text and 0 < len(text) < 1000, text
    return text


# -------------------------------------------------------------------------- 3: config keys


@pytest.mark.parametrize(
    "key, value",
    [
        ("model_type", []),
        ("model_type", {"llama": 1}),
        ("model_type", 5),
        ("architectures", 5),
        ("architectures", [["LlamaForCausalLM"]]),
        ("architectures", {"LlamaForCausalLM": 1}),
        ("architectures", ["LlamaForCausalLM", 7]),
    ],
)
def test_a_config_key_of_the_wrong_kind_is_refused_naming_the_key(key, value):
    with pytest.raises(GpulabConfigError) as info:
        ModelSpec.from_hf_config({**LLAMA_1B_CONFIG, key: value})
    assert info.value.field == key
    assert key in _one_line(info.value)


@pytest.mark.parametrize("key, value", [("model_type", []), ("architectures", 5)])
def test_a_pasted_config_with_a_key_of_the_wrong_kind_names_the_key(key, value):
    with pytest.raises(GpulabConfigError) as info:
        _paste(json.dumps({**LLAMA_1B_CONFIG, key: value}))
    assert info.value.field == "config_text"
    assert key in _one_line(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' * 100_000 + "1" + "}" * 100_000,
        '{"model_type": "llama", "rope_scaling": ' + "[" * 200 + "]" * 200 + "}",
    ],
)
def test_a_pasted_text_nested_too_deep_is_not_a_config(text):
    with pytest.raises(GpulabConfigError, match="not a config") as info:
        _paste(text)
    assert info.value.field == "config_text"
    _one_line(info.value)


def test_a_pasted_number_too_long_to_read_is_an_error_naming_the_text():
    # json.loads raises a plain ValueError on an integer of more than 4300 digits
    with pytest.raises(GpulabConfigError) as info:
        _paste('{"model_type": "llama", "hidden_size": ' + "1" * 5000 + "}")
    assert info.value.field == "config_text"
    _one_line(info.value)


def test_a_pasted_config_nested_like_a_real_config_is_read():
    text = json.dumps({**LLAMA_1B_CONFIG, "rope_scaling": {"factor": 32.0, "rope_type": "llama3"}})
    spec, _ = _paste(text)
    assert spec.n_params == LLAMA_1B.n_params


# -------------------------------------------------------------------------- 8: did you mean


def _suggested(call) -> list[str]:
    """The names a refusal suggests ('did you mean 'A', 'B' or 'C'?'), [] when none."""
    with pytest.raises(GpulabConfigError) as info:
        call()
    match = re.search(r"did you mean (.*?)\?", str(info.value))
    return re.findall(r"'([^']*)'", match.group(1)) if match else []


@pytest.mark.parametrize(
    "typed, expected",
    [
        ("H100", ["H100 SXM", "H100 PCIe"]),
        ("A100", ["A100 40GB SXM", "A100 80GB SXM", "A100 80GB PCIe"]),
        ("RTX 3060", ["RTX 3060 12GB", "RTX 3060 8GB"]),
        ("B200", []),  # no B200 row under any spelling, and H200 is another card
        ("RTX 5080", []),  # nor is the RTX 5090 an RTX 5080
        ("RTX4090x", ["RTX 4090"]),  # a character added
        ("GTX 1650", ["GTX 1650 GDDR5"]),
    ],
)
def test_get_gpu_suggests_the_cards_whose_name_holds_what_was_typed(typed, expected):
    assert _suggested(lambda: specs.get_gpu(typed)) == expected


def test_two_suggestions_read_as_a_sentence():
    with pytest.raises(GpulabConfigError, match=r"did you mean 'H100 SXM' or 'H100 PCIe'\? "):
        specs.get_gpu("H100")
    with pytest.raises(
        GpulabConfigError,
        match=r"did you mean 'A100 40GB SXM', 'A100 80GB SXM' or 'A100 80GB PCIe'\?",
    ):
        specs.get_gpu("A100")


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: specs.get_gpu("RTX4090"), ["RTX 4090"]),  # the spelling differs: the same name
        (lambda: specs.get_gpu("RTX 409"), ["RTX 4090"]),  # a character dropped
        (lambda: models.get("Lama-3-8B"), ["Llama-3-8B"]),  # a character dropped
        (lambda: models.get("Llama-3-7B"), []),  # a character changed: another model
        (lambda: models.get("Mistrel-7B"), ["Mistral-7B"]),  # a letter changed in a word: a typo
        (lambda: models.get("Llama-3.2"), ["Llama-3.2-1B", "Llama-3.2-3B"]),
        (lambda: published.get("mamf-mi300x-bf61"), ["mamf-mi300x-bf16"]),  # two swapped
        (lambda: memory.weight_bytes(LLAMA_1B, "Q4KM"), ["q4_k_m"]),
        (lambda: memory.weight_bytes(LLAMA_1B, "int4a"), ["int4-asym"]),
    ],
)
def test_every_name_lookup_suggests_the_same_way(call, expected):
    assert _suggested(call) == expected


def test_did_you_mean_gives_the_first_of_the_suggestions():
    names = list(specs.load_gpus())
    assert constraints.did_you_mean("H100", names) == "H100 SXM"
    assert constraints.did_you_mean("B200", names) is None
    assert constraints.suggestions("H100", names) == ["H100 SXM", "H100 PCIe"]


def test_a_changed_letter_in_a_short_name_is_another_product():
    assert constraints.suggestions("T4", ["L4", "A10"]) == []
    assert constraints.suggestions("Mistrel", ["Mistral", "Llama"]) == ["Mistral"]


def test_a_short_text_held_by_many_names_is_no_suggestion():
    # "RTX" is in eleven names: a list of them is the list of cards, which the message has
    assert _suggested(lambda: specs.get_gpu("RTX")) == []


# -------------------------------------------------------------------------- 9: impossible splits


def test_a_layer_split_over_more_cards_than_layers_is_refused():
    with pytest.raises(
        GpulabConfigError,
        match=r"^n_gpus=1000 must be at most the model's 16 "
        r"layers",
    ) as info:
        serving.split_inference(LLAMA_1B, 1000)
    assert info.value.field == "n_gpus"
    with pytest.raises(GpulabConfigError, match="at most the model's 16 layers") as info:
        serving.layer_split_tokens_per_s(LLAMA_1B, [936.0] * 17)
    assert info.value.field == "bandwidths_gbs"
    _one_line(info.value)


def test_a_layer_split_over_as_many_cards_as_layers_is_fine():
    assert serving.split_inference(LLAMA_1B, 16).weights > 0
    one = serving.layer_split_tokens_per_s(LLAMA_1B, [936.0])
    # equal cards in turn: one card's bound on the whole model (the docstring's claim)
    assert math.isclose(serving.layer_split_tokens_per_s(LLAMA_1B, [936.0] * 16), one)


def test_a_tensor_split_that_does_not_divide_the_heads_is_refused():
    with pytest.raises(
        GpulabConfigError,
        match=r"^degree=3 must divide the model's 32 "
        r"attention heads",
    ) as info:
        serving.tensor_parallel_tokens_per_s(LLAMA_8B, 936, 3, 32e9)
    assert info.value.field == "degree"
    assert serving.tensor_parallel_tokens_per_s(LLAMA_8B, 936, 4, 32e9) > 0


def test_serving_refuses_in_the_words_of_memory_per_gpu():
    """One check: the same reason after the parameter's own name."""

    def reason(call) -> str:
        with pytest.raises(GpulabConfigError) as info:
            call()
        return str(info.value).split(" ", 1)[1]

    tp = reason(
        lambda: parallel.memory_per_gpu(
            LLAMA_8B, parallel.Strategy("TP", tensor=3), 3, global_batch=3
        )
    )
    assert tp == reason(lambda: serving.tensor_parallel_tokens_per_s(LLAMA_8B, 936, 3, 32e9))
    pp = reason(
        lambda: parallel.memory_per_gpu(
            LLAMA_1B, parallel.Strategy("PP", pipeline=17), 17, global_batch=17
        )
    )
    assert pp == reason(lambda: serving.split_inference(LLAMA_1B, 17))


def test_a_lora_rank_beyond_the_adapted_matrices_is_refused():
    with pytest.raises(GpulabConfigError, match=r"^rank=1000000 must be at most 512") as info:
        parallel.lora_params(LLAMA_1B, rank=10**6)
    assert info.value.field == "rank"
    _one_line(info.value)
    with pytest.raises(GpulabConfigError, match=r"^rank=513 must be at most 512"):
        parallel.lora_params(LLAMA_1B, rank=513)  # k and v are 2048 x 512 (8 heads of 64)
    # q alone is 2048 x 2048: rank 2048 adapts it fully, and is B (2048 x r) + A (r x 2048)
    assert parallel.lora_params(LLAMA_1B, rank=2048, targets=("q",)) == 16 * 2048 * 4096
    assert parallel.lora_params(LLAMA_1B, rank=512) > 0
    with pytest.raises(GpulabConfigError, match=r"^rank=2049 must be at most 2048"):
        parallel.lora_params(LLAMA_1B, rank=2049, targets=("q",))


# -------------------------------------------------------------------------- 11: items of containers


@pytest.mark.parametrize(
    "own",
    [
        [(5, 10)],
        [("x", math.nan)],
        [("x",)],
        ["RTX 4090"],
        [("x", "24GB")],
        [("x", -1)],
        [("x", True)],
        [("RTX 4090", 24 * 2**30), ("x", math.inf)],
    ],
)
def test_fit_verdicts_names_the_bad_entry_of_own_gpus(own):
    b = memory.estimate_inference(LLAMA_8B, "int4")
    with pytest.raises(GpulabConfigError) as info:
        calculator.fit_verdicts(b, own)
    assert info.value.field == f"own_gpus[{len(own) - 1}]"
    assert _one_line(info.value).startswith(f"own_gpus[{len(own) - 1}]")


def test_fit_verdicts_still_reads_good_entries():
    b = memory.estimate_inference(LLAMA_8B, "int4")
    lines = calculator.fit_verdicts(b, [("RTX 4090", 24 * 2**30), ["Apple M3 Max", 36e9]])
    assert lines[0].startswith("your RTX 4090 (25.8 GB") and lines[0].endswith(": fits")
    assert lines[1].startswith(
        "your Apple M3 Max (36.0 GB, 25.7 GB for tensors)"
    )  # 36e9 x 0.75 / 1.05


@pytest.mark.parametrize(
    "gpus", [{"x": 5}, {"RTX 4090": "RTX 4090"}, {"RTX 4090": specs.get_gpu("RTX 4090"), "y": None}]
)
def test_gpus_that_fit_names_gpus_for_an_entry_that_is_not_a_row(gpus):
    with pytest.raises(GpulabConfigError, match=r"^gpus\[") as info:
        memory.gpus_that_fit(1e9, gpus)
    assert info.value.field == "gpus"
    assert "GPUSpec" in _one_line(info.value)


# -------------------------------------------------------------------------- 13: long inputs

LONG = "x" * 5_000_000


@pytest.mark.parametrize(
    "call",
    [
        lambda text: specs.get_gpu(text),
        lambda text: specs.get_cpu(text),
        lambda text: specs.resolve_gpu(text, "gpu"),
        lambda text: models.get(text),
        lambda text: published.get(text),
        lambda text: memory.weight_bytes(LLAMA_1B, text),
    ],
    ids=["get_gpu", "get_cpu", "resolve_gpu", "models.get", "published.get", "OneOf"],
)
def test_a_long_name_is_cut_in_the_message_and_not_searched(call, monkeypatch):
    def short_message() -> str:
        with pytest.raises(GpulabConfigError) as info:
            call("x")
        return str(info.value)

    short = short_message()
    compared = []
    real_ratio = constraints.difflib.SequenceMatcher.ratio

    def counting_ratio(self):
        compared.append(len(self.a) + len(self.b))
        return real_ratio(self)

    monkeypatch.setattr(constraints.difflib.SequenceMatcher, "ratio", counting_ratio)
    with pytest.raises(GpulabConfigError) as info:
        call(LONG)
    message = _one_line(info.value)
    # the input is shown as show() cuts it: at most 60 characters more than a one-letter name's
    assert len(message) <= len(short) + 60
    assert "did you mean" not in message
    assert not any(n > 1000 for n in compared)  # difflib never read the long text


def test_find_gpu_does_not_tokenise_a_long_name_once_per_row(monkeypatch):
    seen = []
    real = specs._tokens
    monkeypatch.setattr(specs, "_tokens", lambda name: seen.append(len(name)) or real(name))
    assert specs.find_gpu(LONG) is None
    assert not any(n > 1000 for n in seen)


# -------------------------------------------------------------------------- 15: find_gpu is lenient


@pytest.mark.parametrize(
    "memory_bytes", ["24GB", b"24", [24], {}, object(), math.nan, math.inf, -1, 10**400]
)
def test_find_gpu_gives_none_for_a_memory_size_it_cannot_read(memory_bytes):
    assert specs.find_gpu("NVIDIA GeForce RTX 3060", memory_bytes) is None
    assert specs.find_gpu("NVIDIA GeForce RTX 4090", memory_bytes) is None


def test_find_gpu_still_tells_variants_apart_by_memory():
    assert specs.find_gpu("NVIDIA GeForce RTX 3060", 12 * 2**30).name == "RTX 3060 12GB"
    assert specs.find_gpu("NVIDIA GeForce RTX 3060", 12.0 * 2**30).name == "RTX 3060 12GB"


# -------------------------------------------------------------------------- 17: quantization_config

AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False}


@pytest.mark.parametrize(
    "quantization, asked", [(AWQ, "int4-asym"), (GPTQ, "int4"), ({**GPTQ, "bits": 8}, "int8")]
)
def test_a_config_that_declares_its_quantization_says_it_is_not_applied(quantization, asked):
    spec = ModelSpec.from_hf_config({**LLAMA_8B_CONFIG, "quantization_config": quantization})
    (note,) = spec.notes
    assert "quantization_config" in note and quantization["quant_method"] in note
    assert f"weights={asked!r}" in note
    plain = ModelSpec.from_hf_config(LLAMA_8B_CONFIG)
    assert spec == plain and hash(spec) == hash(plain)  # the note does not make another model


def test_a_config_without_quantization_has_no_note():
    assert ModelSpec.from_hf_config(LLAMA_8B_CONFIG).notes == ()


@pytest.mark.parametrize("quantization", ["awq", 4, [], {"quant_method": []}, {"bits": "4"}])
def test_an_odd_quantization_config_is_noted_not_an_error(quantization):
    spec = ModelSpec.from_hf_config({**LLAMA_8B_CONFIG, "quantization_config": quantization})
    (note,) = spec.notes
    assert "quantization_config" in note and len(note) < 400


def test_the_calculator_shows_the_note_for_a_pasted_quantized_config():
    text = json.dumps({**LLAMA_8B_CONFIG, "quantization_config": AWQ})
    spec, bf16 = _paste(text, weights="bf16")
    assert any("quantization_config" in n and "int4-asym" in n for n in bf16.notes)
    # what the note says: the weights are counted in the format asked for, bf16 here...
    assert bf16.weights == 2 * LLAMA_8B.n_params
    # ... and asking for the checkpoint's own format gives the quantized weights
    _, int4 = _paste(text, weights="int4-asym")
    assert int4.weights < bf16.weights / 2
    _, training = _paste(text, mode="training")
    assert any("quantization_config" in n for n in training.notes)
