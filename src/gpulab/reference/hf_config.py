"""Reading a Hugging Face ``config.json`` into the shapes a ModelSpec holds (chapter 2).

Each supported family has a reader that takes the keys its transformers config class uses
and returns ModelSpec fields; anything else is refused with the reason, never read
approximately. A flag must be a JSON boolean: ``"tie_word_embeddings": "false"`` (a string)
is an error, not a silent ``True``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpulab.core.errors import GpulabConfigError

__all__ = ["SUPPORTED_ARCHITECTURES", "SUPPORTED_MODEL_TYPES", "config_key", "read_fields"]

# model_type -> the causal-LM class of transformers whose parameters we count.
SUPPORTED_ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "phi3": "Phi3ForCausalLM",
    "deepseek_v3": "DeepseekV3ForCausalLM",
}
SUPPORTED_MODEL_TYPES = tuple(SUPPORTED_ARCHITECTURES)

# Families people will try, and why a count from our shapes would be wrong for them.
_WHY_NOT = {
    **dict.fromkeys(("mamba", "mamba2", "falcon_mamba"),
                    "a state-space model: no attention layers and no KV cache"),
    **dict.fromkeys(("rwkv", "rwkv5", "rwkv6", "rwkv7"), "a recurrent (RWKV) model: no KV cache"),
    **dict.fromkeys(("jamba", "zamba", "zamba2", "nemotron_h", "falcon_h1", "granitemoehybrid",
                     "bamba", "lfm2"),
                    "a hybrid of state-space (Mamba) and attention layers"),
    **dict.fromkeys(("minimax", "minimax_m1", "qwen3_next", "kimi_linear"),
                    "it mixes linear-attention layers with softmax attention"),
    **dict.fromkeys(("gemma2", "gemma3", "gemma3_text", "cohere2", "gpt_oss"),
                    "it interleaves sliding-window and full-attention layers"),
    **dict.fromkeys(("t5", "mt5", "umt5", "longt5", "bart", "mbart", "pegasus", "marian",
                     "whisper", "switch_transformers"),
                    "an encoder-decoder model; only decoder-only models are modelled"),
    **dict.fromkeys(("bert", "roberta", "xlm-roberta", "distilbert", "deberta", "deberta-v2",
                     "modernbert", "electra"),
                    "an encoder-only model; only decoder-only models are modelled"),
    "deepseek_v2": "DeepSeek-V2 differs from V3 in its router and expert layout; only "
                   "DeepSeek-V3/R1 (model_type 'deepseek_v3') is modelled",
    "deepseek_v32": "DeepSeek-V3.2 adds a sparse-attention indexer that is not modelled",
    "phi3small": "Phi-3-small has block-sparse attention and a GeGLU MLP that are not modelled",
    "phimoe": "Phi-3.5-MoE is not modelled (use model_type 'mixtral' shapes only if they match)",
}




# --- config.json readers ------------------------------------------------------------------


class _Config:
    """A config.json dict with lookups that name the family and the missing key."""

    def __init__(self, cfg: Mapping[str, Any], model_type: str) -> None:
        self.cfg = cfg
        self.model_type = model_type

    def need(self, key: str) -> Any:
        """The value of a key the count cannot do without."""
        if self.cfg.get(key) is None:
            raise GpulabConfigError(
                f"the {self.model_type} config has no {key!r}, which the parameter count needs")
        return self.cfg[key]

    def get(self, key: str, default: Any = None) -> Any:
        """An optional key; a missing or null value gives the transformers default."""
        value = self.cfg.get(key)
        return default if value is None else value

    def flag(self, key: str, default: bool) -> bool:
        """An optional true/false key: a JSON boolean, or missing (the transformers default)."""
        value = self.cfg.get(key)
        if value is None:
            return default
        if value is not True and value is not False:
            raise GpulabConfigError(
                f"{key}={value!r} in the {self.model_type} config must be true or false "
                "(a JSON boolean, not a string or a number)", key)
        return value


def _model_type(cfg: Mapping[str, Any]) -> str:
    """The supported model_type of a config, or GpulabConfigError saying why not."""
    architectures = cfg.get("architectures") or []
    if isinstance(architectures, str):
        architectures = [architectures]
    model_type = cfg.get("model_type")
    if model_type is None:
        by_class = {arch: mt for mt, arch in SUPPORTED_ARCHITECTURES.items()}
        known = [by_class[a] for a in architectures if a in by_class]
        if not known:
            raise GpulabConfigError(
                "config has no 'model_type' and no supported 'architectures' entry "
                f"(got {architectures!r}); supported: "
                f"{', '.join(SUPPORTED_ARCHITECTURES.values())}")
        model_type = known[0]
    if model_type not in SUPPORTED_ARCHITECTURES:
        why = _WHY_NOT.get(model_type)
        if why is None and "text_config" in cfg:
            why = "a multimodal wrapper (its language model is under 'text_config')"
        why = why or "not one of the modelled families"
        raise GpulabConfigError(
            f"model_type={model_type!r} is not supported: {why}. "
            f"Supported model_type values: {', '.join(SUPPORTED_MODEL_TYPES)}")
    expected = SUPPORTED_ARCHITECTURES[model_type]
    others = [a for a in architectures if a != expected]
    if others:
        raise GpulabConfigError(
            f"architectures={architectures!r}: only {expected} (the causal-LM head) is counted "
            f"for model_type={model_type!r}; another head has other parameters")
    return model_type


def _dense_fields(c: _Config) -> dict[str, Any]:
    """Fields shared by the Llama-like families (llama, mistral, mixtral, qwen2, phi3)."""
    heads = c.need("num_attention_heads")
    return {
        "n_layers": c.need("num_hidden_layers"),
        "hidden_size": c.need("hidden_size"),
        "n_heads": heads,
        "n_kv_heads": c.get("num_key_value_heads", heads),
        "head_dim": c.get("head_dim"),
        "intermediate_size": c.need("intermediate_size"),
        "vocab_size": c.need("vocab_size"),
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        "max_position_embeddings": c.get("max_position_embeddings"),
    }


def _read_llama(c: _Config) -> dict[str, Any]:
    """LlamaForCausalLM: attention_bias puts biases on q, k, v and o; mlp_bias on the MLP."""
    bias = c.flag("attention_bias", False)
    return {**_dense_fields(c), "attention_bias": bias, "o_bias": bias,
            "mlp_bias": c.flag("mlp_bias", False)}


def _read_mistral(c: _Config) -> dict[str, Any]:
    """MistralForCausalLM: no biases; an optional sliding window on every layer."""
    return {**_dense_fields(c), "sliding_window": c.get("sliding_window")}


def _read_phi3(c: _Config) -> dict[str, Any]:
    """Phi3ForCausalLM: fused qkv_proj and gate_up_proj hold the same parameters as split ones."""
    return {**_dense_fields(c), "sliding_window": c.get("sliding_window")}


def _read_qwen2(c: _Config) -> dict[str, Any]:
    """Qwen2ForCausalLM: biases on q, k, v (not o); sliding windows only if switched on."""
    if c.flag("use_sliding_window", False):
        raise GpulabConfigError(
            "use_sliding_window=true: Qwen2 then mixes sliding-window and full-attention layers "
            "(from max_window_layers on), which is not modelled")
    return {**_dense_fields(c), "attention_bias": True}


def _read_mixtral(c: _Config) -> dict[str, Any]:
    """MixtralForCausalLM: every layer's MLP is num_local_experts experts of intermediate_size."""
    fields_ = _dense_fields(c)
    return {**fields_, "n_routed_experts": c.need("num_local_experts"),
            "experts_per_token": c.need("num_experts_per_tok"),
            "moe_intermediate_size": fields_["intermediate_size"],
            "sliding_window": c.get("sliding_window")}


def _read_deepseek_v3(c: _Config) -> dict[str, Any]:
    """DeepseekV3ForCausalLM (V3, R1): MLA; dense first layers, then routed + shared experts."""
    if c.get("moe_layer_freq", 1) != 1:
        raise GpulabConfigError(
            f"moe_layer_freq={c.get('moe_layer_freq')!r}: only an MoE MLP in every layer after "
            "first_k_dense_replace (moe_layer_freq=1) is modelled")
    if "q_lora_rank" not in c.cfg:
        raise GpulabConfigError(
            "the deepseek_v3 config has no 'q_lora_rank' (null means no query compression), "
            "which the parameter count needs")
    heads = c.need("num_attention_heads")
    nope, rope = c.need("qk_nope_head_dim"), c.need("qk_rope_head_dim")
    bias = c.flag("attention_bias", False)
    return {
        "n_layers": c.need("num_hidden_layers"),
        "hidden_size": c.need("hidden_size"),
        "n_heads": heads,
        "n_kv_heads": heads,  # MLA: every head gets its own K and V from the shared latent
        "head_dim": nope + rope if _is_int(nope) and _is_int(rope) else None,  # the q/k head width
        "intermediate_size": c.need("intermediate_size"),
        "vocab_size": c.need("vocab_size"),
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        "attention_bias": bias,
        "o_bias": bias,
        "n_routed_experts": c.need("n_routed_experts"),
        "n_shared_experts": c.get("n_shared_experts", 0),
        "experts_per_token": c.need("num_experts_per_tok"),
        "moe_intermediate_size": c.need("moe_intermediate_size"),
        "first_dense_layers": c.get("first_k_dense_replace", 0),
        "router_bias": True,  # e_score_correction_bias: in every V3/R1 checkpoint
        "q_lora_rank": c.cfg["q_lora_rank"],
        "kv_lora_rank": c.need("kv_lora_rank"),
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "v_head_dim": c.need("v_head_dim"),
        "max_position_embeddings": c.get("max_position_embeddings"),
        "n_mtp_layers": c.get("num_nextn_predict_layers", 0),
    }


# ModelSpec field -> the config.json key it is read from, for error messages.
_CONFIG_KEY = {
    "*": {"n_layers": "num_hidden_layers", "hidden_size": "hidden_size",
          "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
          "head_dim": "head_dim", "intermediate_size": "intermediate_size",
          "vocab_size": "vocab_size", "max_position_embeddings": "max_position_embeddings",
          "sliding_window": "sliding_window"},
    "mixtral": {"n_routed_experts": "num_local_experts", "experts_per_token": "num_experts_per_tok",
                "moe_intermediate_size": "intermediate_size"},
    "deepseek_v3": {"n_routed_experts": "n_routed_experts", "n_shared_experts": "n_shared_experts",
                    "experts_per_token": "num_experts_per_tok",
                    "moe_intermediate_size": "moe_intermediate_size",
                    "first_dense_layers": "first_k_dense_replace", "q_lora_rank": "q_lora_rank",
                    "kv_lora_rank": "kv_lora_rank", "qk_nope_head_dim": "qk_nope_head_dim",
                    "qk_rope_head_dim": "qk_rope_head_dim", "v_head_dim": "v_head_dim",
                    "head_dim": "qk_nope_head_dim + qk_rope_head_dim",
                    "n_mtp_layers": "num_nextn_predict_layers"},
}

_READERS = {
    "llama": _read_llama,
    "mistral": _read_mistral,
    "mixtral": _read_mixtral,
    "qwen2": _read_qwen2,
    "phi3": _read_phi3,
    "deepseek_v3": _read_deepseek_v3,
}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_fields(cfg: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(model_type, ModelSpec fields) of a supported config.json dict; GpulabConfigError if not."""
    if not isinstance(cfg, Mapping):
        raise GpulabConfigError(
            f"cfg must be a dict (a parsed config.json), not {type(cfg).__name__}", "cfg")
    model_type = _model_type(cfg)
    return model_type, _READERS[model_type](_Config(cfg, model_type))


def config_key(model_type: str, field_name: str | None) -> str | None:
    """The config.json key a ModelSpec field is read from, for error messages."""
    keys = {**_CONFIG_KEY["*"], **_CONFIG_KEY.get(model_type, {})}
    return keys.get(field_name or "")
