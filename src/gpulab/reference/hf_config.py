"""Reading a Hugging Face ``config.json`` into the shapes a ModelSpec holds (chapter 2).

Each supported family has a reader that takes the keys its transformers config class uses
and returns ModelSpec fields; anything else is refused with the reason, never read
approximately. A flag must be a JSON boolean: ``"tie_word_embeddings": "false"`` (a string)
is an error, not a silent ``True``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpulab.core.constraints import show
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked, lenient

__all__ = [
    "MAX_CONFIG_DEPTH",
    "SUPPORTED_ARCHITECTURES",
    "SUPPORTED_MODEL_TYPES",
    "config_key",
    "parse_config_text",
    "read_fields",
]

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
    **dict.fromkeys(
        ("mamba", "mamba2", "falcon_mamba"),
        "a state-space model: no attention layers and no KV cache",
    ),
    **dict.fromkeys(("rwkv", "rwkv5", "rwkv6", "rwkv7"), "a recurrent (RWKV) model: no KV cache"),
    **dict.fromkeys(
        (
            "jamba",
            "zamba",
            "zamba2",
            "nemotron_h",
            "falcon_h1",
            "granitemoehybrid",
            "bamba",
            "lfm2",
        ),
        "a hybrid of state-space (Mamba) and attention layers",
    ),
    **dict.fromkeys(
        ("minimax", "minimax_m1", "qwen3_next", "kimi_linear"),
        "it mixes linear-attention layers with softmax attention",
    ),
    **dict.fromkeys(
        ("gemma2", "gemma3", "gemma3_text", "cohere2", "gpt_oss"),
        "it interleaves sliding-window and full-attention layers",
    ),
    **dict.fromkeys(
        (
            "t5",
            "mt5",
            "umt5",
            "longt5",
            "bart",
            "mbart",
            "pegasus",
            "marian",
            "whisper",
            "switch_transformers",
        ),
        "an encoder-decoder model; only decoder-only models are modelled",
    ),
    **dict.fromkeys(
        (
            "bert",
            "roberta",
            "xlm-roberta",
            "distilbert",
            "deberta",
            "deberta-v2",
            "modernbert",
            "electra",
        ),
        "an encoder-only model; only decoder-only models are modelled",
    ),
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
                f"the {self.model_type} config has no {key!r}, which the parameter count needs"
            )
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
                "(a JSON boolean, not a string or a number)",
                key,
            )
        return value


def _architectures(cfg: Mapping[str, Any]) -> list[str]:
    """The config's 'architectures': a list of class names (one name alone is read as a list)."""
    architectures = cfg.get("architectures") or []
    if isinstance(architectures, str):
        architectures = [architectures]
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise GpulabConfigError(
            f"architectures={show(architectures)} must be a list of class names such as "
            '["LlamaForCausalLM"]',
            "architectures",
        )
    return architectures


def _model_type(cfg: Mapping[str, Any]) -> str:
    """The supported model_type of a config, or GpulabConfigError saying why not."""
    architectures = _architectures(cfg)
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise GpulabConfigError(
            f"model_type={show(model_type)} must be a string, one of: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}",
            "model_type",
        )
    if model_type is None:
        by_class = {arch: mt for mt, arch in SUPPORTED_ARCHITECTURES.items()}
        known = [by_class[a] for a in architectures if a in by_class]
        if not known:
            raise GpulabConfigError(
                "config has no 'model_type' and no supported 'architectures' entry "
                f"(got {show(architectures)}); supported: "
                f"{', '.join(SUPPORTED_ARCHITECTURES.values())}",
                "model_type",
            )
        model_type = known[0]
    if model_type not in SUPPORTED_ARCHITECTURES:
        why = _WHY_NOT.get(model_type)
        if why is None and "text_config" in cfg:
            why = "a multimodal wrapper (its language model is under 'text_config')"
        why = why or "not one of the modelled families"
        raise GpulabConfigError(
            f"model_type={show(model_type)} is not supported: {why}. "
            f"Supported model_type values: {', '.join(SUPPORTED_MODEL_TYPES)}",
            "model_type",
        )
    expected = SUPPORTED_ARCHITECTURES[model_type]
    others = [a for a in architectures if a != expected]
    if others:
        raise GpulabConfigError(
            f"architectures={show(architectures)}: only {expected} (the causal-LM head) is "
            f"counted for model_type={model_type!r}; another head has other parameters",
            "architectures",
        )
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
    return {
        **_dense_fields(c),
        "attention_bias": bias,
        "o_bias": bias,
        "mlp_bias": c.flag("mlp_bias", False),
    }


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
            "(from max_window_layers on), which is not modelled"
        )
    return {**_dense_fields(c), "attention_bias": True}


def _read_mixtral(c: _Config) -> dict[str, Any]:
    """MixtralForCausalLM: every layer's MLP is num_local_experts experts of intermediate_size."""
    fields_ = _dense_fields(c)
    return {
        **fields_,
        "n_routed_experts": c.need("num_local_experts"),
        "experts_per_token": c.need("num_experts_per_tok"),
        "moe_intermediate_size": fields_["intermediate_size"],
        "sliding_window": c.get("sliding_window"),
    }


def _read_deepseek_v3(c: _Config) -> dict[str, Any]:
    """DeepseekV3ForCausalLM (V3, R1): MLA; dense first layers, then routed + shared experts."""
    if c.get("moe_layer_freq", 1) != 1:
        raise GpulabConfigError(
            f"moe_layer_freq={c.get('moe_layer_freq')!r}: only an MoE MLP in every layer after "
            "first_k_dense_replace (moe_layer_freq=1) is modelled"
        )
    if "q_lora_rank" not in c.cfg:
        raise GpulabConfigError(
            "the deepseek_v3 config has no 'q_lora_rank' (null means no query compression), "
            "which the parameter count needs"
        )
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
    "*": {
        "n_layers": "num_hidden_layers",
        "hidden_size": "hidden_size",
        "n_heads": "num_attention_heads",
        "n_kv_heads": "num_key_value_heads",
        "head_dim": "head_dim",
        "intermediate_size": "intermediate_size",
        "vocab_size": "vocab_size",
        "max_position_embeddings": "max_position_embeddings",
        "sliding_window": "sliding_window",
    },
    "mixtral": {
        "n_routed_experts": "num_local_experts",
        "experts_per_token": "num_experts_per_tok",
        "moe_intermediate_size": "intermediate_size",
    },
    "deepseek_v3": {
        "n_routed_experts": "n_routed_experts",
        "n_shared_experts": "n_shared_experts",
        "experts_per_token": "num_experts_per_tok",
        "moe_intermediate_size": "moe_intermediate_size",
        "first_dense_layers": "first_k_dense_replace",
        "q_lora_rank": "q_lora_rank",
        "kv_lora_rank": "kv_lora_rank",
        "qk_nope_head_dim": "qk_nope_head_dim",
        "qk_rope_head_dim": "qk_rope_head_dim",
        "v_head_dim": "v_head_dim",
        "head_dim": "qk_nope_head_dim + qk_rope_head_dim",
        "n_mtp_layers": "num_nextn_predict_layers",
    },
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


@lenient("checks a whole config.json, key by key")
def read_fields(cfg: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(model_type, ModelSpec fields) of a supported config.json dict; GpulabConfigError if not."""
    if not isinstance(cfg, Mapping):
        raise GpulabConfigError(
            f"cfg must be a dict (a parsed config.json), not {type(cfg).__name__}", "cfg"
        )
    model_type = _model_type(cfg)
    fields_ = _READERS[model_type](_Config(cfg, model_type))
    return model_type, {**fields_, "notes": _quantization_notes(cfg)}


# --- what the count does not read -----------------------------------------------------------


def _own_format(q: Mapping[str, Any]) -> str | None:
    """The weight format (gpulab.formats) that stores a quantization_config's weights, if any."""
    method = q.get("quant_method")
    method = method.lower() if isinstance(method, str) else None
    bits = q.get("bits")
    if method == "fp8":
        return "fp8"
    if method == "bitsandbytes":
        if q.get("load_in_8bit") is True:
            return "int8"
        return (
            "nf4"
            if q.get("load_in_4bit") is True and q.get("bnb_4bit_quant_type") == "nf4"
            else None
        )
    if method in ("awq", "gptq") and bits in (4, 8):
        if bits == 8:
            return "int8"
        # AWQ packs a zero point unless told not to; GPTQ is symmetric unless told not to
        asymmetric = q.get("zero_point", True) is True if method == "awq" else q.get("sym") is False
        return "int4-asym" if asymmetric else "int4"
    return None


def _quantization_notes(cfg: Mapping[str, Any]) -> tuple[str, ...]:
    """A note when config.json declares its own quantization, which the estimates do not apply.

    A ModelSpec holds shapes, not a storage format: the weights are counted in the format an
    estimate is asked for (``weights=``), so a 4-bit AWQ checkpoint read as it is would be
    counted in bf16 without a word. The note says so and which format to ask for.
    """
    q = cfg.get("quantization_config")
    if q is None:
        return ()
    if isinstance(q, Mapping):
        declared = (
            ", ".join(
                f"{k} {show(q[k], 20)}" for k in ("quant_method", "bits", "group_size") if k in q
            )
            or "no quant_method"
        )
        fmt = _own_format(q)
    else:
        declared, fmt = show(q, 40), None
    ask = (
        f"ask for weights={fmt!r} to count this checkpoint as it is stored"
        if fmt
        else "ask for the weights format closest to it (gpulab.formats.WEIGHT_FORMATS)"
    )
    return (
        f"config.json's quantization_config ({declared}) is not applied: the weights are "
        f"counted in the format the estimate is asked for; {ask}",
    )


# --- pasted text ----------------------------------------------------------------------------

# A config.json nests a few levels (text_config, rope_scaling); far deeper is no config, and
# json.loads raises RecursionError near the interpreter's limit (about 1000 levels).
MAX_CONFIG_DEPTH = 32


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and dicts nest more than ``limit`` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend(
                (child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)
            )
    return False


@checked
def parse_config_text(text: str, field: str = "text") -> dict[str, Any]:
    """A pasted config.json's text as a dict; GpulabConfigError naming `field` if it is none."""
    try:
        cfg = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise GpulabConfigError(f"{field} is not valid JSON: {exc}", field) from None
    except RecursionError:
        raise GpulabConfigError(
            f"{field} is not a config: it is nested hundreds of levels "
            f"deep (a config.json has a few)",
            field,
        ) from None
    except ValueError:  # an integer of more than 4300 digits (sys.get_int_max_str_digits)
        raise GpulabConfigError(
            f"{field} is not a config: it holds a number too long to read", field
        ) from None
    if not isinstance(cfg, dict):
        raise GpulabConfigError(
            f"{field} is not a config: a config.json is a JSON object "
            f"({{...}}), not {type(cfg).__name__}",
            field,
        )
    if _deeper_than(cfg, MAX_CONFIG_DEPTH):
        raise GpulabConfigError(
            f"{field} is not a config: it is nested more than "
            f"{MAX_CONFIG_DEPTH} levels deep (a config.json has a few)",
            field,
        )
    return cfg


@lenient("a lookup for error messages")
def config_key(model_type: str, field_name: str | None) -> str | None:
    """The config.json key a ModelSpec field is read from, for error messages."""
    keys = {**_CONFIG_KEY["*"], **_CONFIG_KEY.get(model_type, {})}
    return keys.get(field_name or "")
