"""ModelSpec: exact parameter counts against transformers' own model classes, and refusals.

Each family's count is compared with the real ``transformers`` model class built on the meta
device from a small config (no memory is allocated, nothing is downloaded): the sum of
``p.numel()`` must equal ``ModelSpec.n_params`` exactly, per layer and per component too.
"""

from __future__ import annotations

import dataclasses
import warnings

import pytest
import torch
import transformers

from gpulab.core.errors import GpulabConfigError
from gpulab.reference.modelspec import SUPPORTED_MODEL_TYPES, ModelSpec

_SMALL = dict(vocab_size=101, num_hidden_layers=3, bos_token_id=1, eos_token_id=2)

# name -> (config class, model class, config.json keys). Small, but each exercises what its
# family has: GQA/MQA/MHA, tied and untied heads, explicit head_dim, biases, experts, MLA.
FAMILIES = {
    "llama-gqa-untied": (
        "LlamaConfig",
        "LlamaForCausalLM",
        "llama",
        dict(
            hidden_size=64,
            intermediate_size=96,
            num_attention_heads=8,
            num_key_value_heads=2,
            tie_word_embeddings=False,
        ),
    ),
    "llama-mqa-tied-biases-head_dim": (
        "LlamaConfig",
        "LlamaForCausalLM",
        "llama",
        dict(
            hidden_size=48,
            intermediate_size=80,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=16,
            tie_word_embeddings=True,
            attention_bias=True,
            mlp_bias=True,
        ),
    ),
    "mistral-head_dim-window": (
        "MistralConfig",
        "MistralForCausalLM",
        "mistral",
        dict(
            hidden_size=64,
            intermediate_size=48,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=20,
            sliding_window=16,
        ),
    ),
    "mixtral": (
        "MixtralConfig",
        "MixtralForCausalLM",
        "mixtral",
        dict(
            hidden_size=64,
            intermediate_size=48,
            num_attention_heads=8,
            num_key_value_heads=2,
            num_local_experts=4,
            num_experts_per_tok=2,
        ),
    ),
    "qwen2-bias-tied": (
        "Qwen2Config",
        "Qwen2ForCausalLM",
        "qwen2",
        dict(
            hidden_size=64,
            intermediate_size=48,
            num_attention_heads=8,
            num_key_value_heads=2,
            tie_word_embeddings=True,
        ),
    ),
    "qwen2-bias-untied": (
        "Qwen2Config",
        "Qwen2ForCausalLM",
        "qwen2",
        dict(
            hidden_size=56,
            intermediate_size=72,
            num_attention_heads=7,
            num_key_value_heads=1,
            tie_word_embeddings=False,
            sliding_window=32,
            use_sliding_window=False,
        ),
    ),
    "phi3-mha": (
        "Phi3Config",
        "Phi3ForCausalLM",
        "phi3",
        dict(
            hidden_size=64,
            intermediate_size=48,
            num_attention_heads=4,
            num_key_value_heads=4,
            pad_token_id=0,
        ),
    ),
    "phi3-gqa": (
        "Phi3Config",
        "Phi3ForCausalLM",
        "phi3",
        dict(
            hidden_size=64,
            intermediate_size=48,
            num_attention_heads=8,
            num_key_value_heads=2,
            pad_token_id=0,
        ),
    ),
    "deepseek_v3-moe-mla-dense-first": (
        "DeepseekV3Config",
        "DeepseekV3ForCausalLM",
        "deepseek_v3",
        dict(
            hidden_size=64,
            intermediate_size=96,
            moe_intermediate_size=32,
            num_attention_heads=4,
            num_key_value_heads=4,
            n_routed_experts=8,
            n_shared_experts=2,
            num_experts_per_tok=2,
            first_k_dense_replace=1,
            q_lora_rank=24,
            kv_lora_rank=16,
            qk_nope_head_dim=8,
            qk_rope_head_dim=4,
            v_head_dim=12,
            n_group=2,
            topk_group=1,
        ),
    ),
    "deepseek_v3-no-q-lora-biases": (
        "DeepseekV3Config",
        "DeepseekV3ForCausalLM",
        "deepseek_v3",
        dict(
            hidden_size=64,
            intermediate_size=96,
            moe_intermediate_size=24,
            num_attention_heads=2,
            num_key_value_heads=2,
            n_routed_experts=4,
            n_shared_experts=1,
            num_experts_per_tok=1,
            first_k_dense_replace=2,
            q_lora_rank=None,
            kv_lora_rank=16,
            qk_nope_head_dim=8,
            qk_rope_head_dim=4,
            v_head_dim=6,
            n_group=1,
            topk_group=1,
            attention_bias=True,
        ),
    ),
}


def hf_count(module) -> int:
    """Parameters of a transformers module, plus DeepSeek-V3's router correction bias.

    transformers keeps ``e_score_correction_bias`` as a buffer, but the checkpoints store it
    as a tensor of the model, so ModelSpec counts it (router_bias=True).
    """
    params = sum(p.numel() for p in module.parameters())
    return params + sum(
        b.numel() for name, b in module.named_buffers() if name.endswith("e_score_correction_bias")
    )


def build_on_meta(config_class: str, model_class: str, keys: dict):
    """A transformers model of that family on the meta device (shapes only, no memory)."""
    config = getattr(transformers, config_class)(**_SMALL, **keys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.device("meta"):
            return getattr(transformers, model_class)(config)


def _spec_and_model(family: str):
    config_class, model_class, model_type, keys = FAMILIES[family]
    cfg = {"model_type": model_type, "architectures": [model_class], **_SMALL, **keys}
    return ModelSpec.from_hf_config(cfg), build_on_meta(config_class, model_class, keys)


@pytest.mark.parametrize("family", FAMILIES)
def test_total_matches_transformers_exactly(family):
    """n_params equals the sum of p.numel() of the transformers model, to the parameter."""
    spec, model = _spec_and_model(family)
    assert spec.n_params == hf_count(model)


@pytest.mark.parametrize("family", FAMILIES)
def test_each_layer_and_component_matches_transformers(family):
    """layer_params(i) per decoder layer, and embedding, head and norms, match one by one."""
    spec, model = _spec_and_model(family)
    for i, layer in enumerate(model.model.layers):
        assert spec.layer_params(i) == hf_count(layer), f"layer {i}"
    parts = spec.params_by_component()
    assert parts["embedding"] == model.model.embed_tokens.weight.numel()
    tied = model.lm_head.weight is model.model.embed_tokens.weight
    assert tied == spec.tie_embeddings
    assert parts["lm_head"] == (0 if tied else model.lm_head.weight.numel())
    attention = sum(hf_count(layer.self_attn) for layer in model.model.layers)
    assert parts["attention"] == attention
    norms = sum(
        hf_count(layer.input_layernorm) + hf_count(layer.post_attention_layernorm)
        for layer in model.model.layers
    ) + hf_count(model.model.norm)
    assert parts["norms"] == norms


def test_one_expert_matches_transformers():
    """expert_params is one routed expert: the fused expert tensors divided by the expert count."""
    spec, model = _spec_and_model("deepseek_v3-moe-mla-dense-first")
    experts = model.model.layers[1].mlp.experts
    assert spec.expert_params * spec.n_routed_experts == hf_count(experts)
    spec, model = _spec_and_model("mixtral")
    assert spec.expert_params * 4 == hf_count(model.model.layers[0].mlp.experts)


def test_deepseek_layers_differ_dense_then_moe():
    """DeepSeek: the first first_k_dense_replace layers are dense, the rest MoE."""
    spec, _ = _spec_and_model("deepseek_v3-moe-mla-dense-first")
    assert [spec.is_moe_layer(i) for i in range(3)] == [False, True, True]
    assert spec.layer_params(0) != spec.layer_params(1) == spec.layer_params(2)
    assert spec.n_moe_layers == 2 and spec.n_dense_layers == 1


def test_every_supported_family_is_tested_against_transformers():
    """No family is accepted without an exact-count test above."""
    assert {model_type for _, _, model_type, _ in FAMILIES.values()} == set(SUPPORTED_MODEL_TYPES)


def test_defaults_follow_the_transformers_config_classes():
    """A key left out of config.json gets the same default as transformers gives it."""
    keys = dict(hidden_size=64, intermediate_size=96, num_attention_heads=8)  # no kv heads, no tie
    spec = ModelSpec.from_hf_config({"model_type": "llama", **_SMALL, **keys})
    assert spec.n_params == hf_count(build_on_meta("LlamaConfig", "LlamaForCausalLM", keys))
    assert spec.n_kv_heads == 8 and spec.tie_embeddings is False


# --- active parameters, KV cache, attention types --------------------------------------------


def _dense(**overrides) -> ModelSpec:
    base = dict(
        name="t",
        n_layers=4,
        hidden_size=64,
        n_heads=8,
        n_kv_heads=2,
        head_dim=None,
        intermediate_size=128,
        vocab_size=1000,
        tie_embeddings=False,
    )
    return ModelSpec(**{**base, **overrides})


def test_dense_active_equals_total_and_components_sum():
    spec = _dense()
    assert spec.n_active_params == spec.n_params == sum(spec.params_by_component().values())
    assert spec.head_dim == 8 and spec.expert_params == 0 and not spec.is_moe


def test_moe_active_drops_the_unchosen_routed_experts_only():
    spec = _dense(
        n_routed_experts=8,
        experts_per_token=2,
        n_shared_experts=1,
        moe_intermediate_size=32,
        first_dense_layers=1,
        router_bias=True,
    )
    idle = 3 * (8 - 2) * spec.expert_params  # 3 MoE layers, 6 idle experts each
    assert spec.n_active_params == spec.n_params - idle
    assert spec.expert_params == 3 * 64 * 32
    assert spec.router_params == 8 * 64 + 8


def test_kv_elements_per_token_gqa_and_mla():
    spec = _dense(n_layers=80, n_heads=64, n_kv_heads=8, head_dim=128, hidden_size=8192)
    assert spec.kv_elements_per_token() == 2 * 80 * 8 * 128
    assert spec.kv_elements_per_token_expanded() == spec.kv_elements_per_token()
    mla = _dense(
        n_layers=61,
        n_heads=128,
        n_kv_heads=128,
        head_dim=192,
        kv_lora_rank=512,
        qk_nope_head_dim=128,
        qk_rope_head_dim=64,
        v_head_dim=128,
        q_lora_rank=1536,
    )
    assert mla.kv_elements_per_token() == 61 * (512 + 64)
    assert mla.kv_elements_per_token_expanded() == 61 * 128 * (128 + 64 + 128)


@pytest.mark.parametrize(("kv_heads", "kind"), [(8, "mha"), (2, "gqa"), (1, "mqa")])
def test_attention_type(kv_heads, kind):
    assert _dense(n_kv_heads=kv_heads).attention_type == kind


def test_attention_type_mla():
    spec, _ = _spec_and_model("deepseek_v3-moe-mla-dense-first")
    assert spec.attention_type == "mla" and spec.is_moe


def test_layernorm_and_ungated_mlp_are_counted():
    """LayerNorm has weight and bias; a plain MLP has two matrices (with their biases)."""
    plain = _dense(norm="layernorm", gated_mlp=False, mlp_bias=True, tie_embeddings=True)
    h, inner = 64, 128
    assert plain.dense_mlp_params == 2 * h * inner + inner + h
    assert plain.params_by_component()["norms"] == (2 * 4 + 1) * 2 * h
    assert plain.params_by_component()["lm_head"] == 0


def test_mtp_module_is_recorded_not_counted():
    cfg = {"model_type": "deepseek_v3", **_SMALL, **FAMILIES["deepseek_v3-moe-mla-dense-first"][3]}
    with_mtp = ModelSpec.from_hf_config({**cfg, "num_nextn_predict_layers": 1})
    assert with_mtp.n_mtp_layers == 1
    assert with_mtp.n_params == ModelSpec.from_hf_config(cfg).n_params


def test_name_and_architectures_only_config():
    keys = FAMILIES["mixtral"][3]
    spec = ModelSpec.from_hf_config({"architectures": ["MixtralForCausalLM"], **_SMALL, **keys})
    assert spec.name == "mixtral" and spec.is_moe
    named = ModelSpec.from_hf_config({"model_type": "mixtral", **_SMALL, **keys}, name="tiny")
    assert named.name == "tiny"


# --- invalid input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"hidden_size": 0}, "hidden_size=0"),
        ({"n_layers": -2}, "n_layers=-2"),
        ({"vocab_size": 12.5}, "vocab_size=12.5"),
        ({"intermediate_size": True}, "intermediate_size=True"),
        ({"head_dim": -8}, "head_dim=-8"),
        ({"n_heads": 6, "n_kv_heads": 6}, "n_heads=6 does not divide hidden_size=64"),
        ({"n_kv_heads": 3}, "n_kv_heads=3 must divide n_heads=8"),
        (
            {"norm": "batchnorm"},
            "norm='batchnorm' is not a known norm; use one of: rmsnorm, layernorm",
        ),
        (
            {"n_routed_experts": 4, "experts_per_token": 5, "moe_intermediate_size": 8},
            "experts_per_token=5 must be between 1 and n_routed_experts=4",
        ),
        (
            {"n_routed_experts": 4, "experts_per_token": 0, "moe_intermediate_size": 8},
            "experts_per_token=0",
        ),
        ({"n_routed_experts": 4, "experts_per_token": 2}, "moe_intermediate_size=0"),
        ({"n_routed_experts": -1}, "n_routed_experts=-1"),
        ({"n_shared_experts": 1}, "n_shared_experts=1 needs n_routed_experts"),
        ({"experts_per_token": 2}, "experts_per_token=2 needs n_routed_experts"),
        ({"router_bias": True}, "router_bias=True needs n_routed_experts"),
        (
            {
                "n_routed_experts": 4,
                "experts_per_token": 2,
                "moe_intermediate_size": 8,
                "first_dense_layers": 9,
            },
            "first_dense_layers=9 must be <= n_layers=4",
        ),
        ({"q_lora_rank": 16}, "set without kv_lora_rank"),
        ({"kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4}, "v_head_dim=None"),
        (
            {"kv_lora_rank": 0, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8},
            "kv_lora_rank=0",
        ),
        ({"tie_embeddings": "yes"}, "tie_embeddings='yes' must be True or False"),
        ({"sliding_window": 0}, "sliding_window=0"),
    ],
)
def test_invalid_spec_is_refused_naming_the_field(overrides, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")) as info:
        _dense(**overrides)
    assert isinstance(info.value, GpulabConfigError)


def test_layer_index_out_of_range():
    with pytest.raises(GpulabConfigError, match=r"layer=4 must be an integer in 0\.\.3"):
        _dense().layer_params(4)


_DROP = object()  # a key to leave out of the config


def _llama(**changes) -> dict:
    cfg = {"model_type": "llama", **_SMALL, **FAMILIES["llama-gqa-untied"][3], **changes}
    return {k: v for k, v in cfg.items() if v is not _DROP}


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (
            {"model_type": "mamba", "hidden_size": 768},
            "'mamba' is not supported: a state-space model",
        ),
        ({"model_type": "t5"}, "encoder-decoder"),
        ({"model_type": "gemma2"}, "interleaves sliding-window and full-attention layers"),
        ({"model_type": "minimax"}, "linear-attention"),
        ({"model_type": "gpt_neox"}, "'gpt_neox' is not supported: not one of the modelled"),
        ({"model_type": "llava", "text_config": {"model_type": "llama"}}, "multimodal wrapper"),
        ({"hidden_size": 64}, "no 'model_type' and no supported 'architectures'"),
        (
            {"architectures": ["GPT2LMHeadModel"]},
            "no 'model_type' and no supported 'architectures'",
        ),
        (
            _llama(architectures=["LlamaForSequenceClassification"]),
            "only LlamaForCausalLM .* is counted",
        ),
        (_llama(hidden_size=_DROP), "the llama config has no 'hidden_size'"),
        (_llama(vocab_size=None), "the llama config has no 'vocab_size'"),
        (
            _llama(num_key_value_heads=3),
            "n_kv_heads=3 must divide n_heads=8.*'num_key_value_heads'",
        ),
        (_llama(num_hidden_layers=0), "num_hidden_layers"),
        (
            {
                "model_type": "qwen2",
                **_SMALL,
                **FAMILIES["qwen2-bias-tied"][3],
                "use_sliding_window": True,
            },
            "use_sliding_window=true",
        ),
        (
            {
                "model_type": "deepseek_v3",
                **_SMALL,
                **FAMILIES["deepseek_v3-moe-mla-dense-first"][3],
                "moe_layer_freq": 2,
            },
            "moe_layer_freq=2",
        ),
        (
            {
                "model_type": "deepseek_v3",
                **_SMALL,
                **{
                    k: v
                    for k, v in FAMILIES["deepseek_v3-moe-mla-dense-first"][3].items()
                    if k != "q_lora_rank"
                },
            },
            "no 'q_lora_rank'",
        ),
        (
            {
                "model_type": "deepseek_v3",
                **_SMALL,
                **{
                    k: v
                    for k, v in FAMILIES["deepseek_v3-moe-mla-dense-first"][3].items()
                    if k != "kv_lora_rank"
                },
            },
            "no 'kv_lora_rank'",
        ),
        (
            {"model_type": "mixtral", **_SMALL, **FAMILIES["mixtral"][3], "num_experts_per_tok": 9},
            "experts_per_token=9 .*'num_experts_per_tok'",
        ),
    ],
)
def test_unsupported_or_incomplete_config_is_refused(cfg, message):
    with pytest.raises(GpulabConfigError, match=message):
        ModelSpec.from_hf_config(cfg)


def test_config_must_be_a_dict():
    with pytest.raises(GpulabConfigError, match="cfg must be a dict"):
        ModelSpec.from_hf_config("config.json")


def test_spec_is_frozen_and_hashable():
    spec = _dense()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.n_layers = 5
    assert hash(spec) == hash(_dense())
