"""The architecture of a decoder-only transformer, and its exact parameter count (chapter 2).

A :class:`ModelSpec` holds the shapes that decide a model's memory: layers, widths, heads,
key/value heads, experts, vocabulary. From them it counts every parameter of the
architecture exactly (embedding, attention, MLP or experts, norms, output head) and the
elements the KV cache stores per token. The counts are checked in the tests against the
model classes of ``transformers`` built on the meta device (no memory, nothing downloaded).

``ModelSpec.from_hf_config(cfg)`` reads a Hugging Face ``config.json`` (as a dict) of the
Llama 3/3.1/3.2, Mistral, Mixtral, Qwen2/Qwen2.5, Phi-3 and DeepSeek-V3/R1 families. Anything
else is refused with the reason, never counted approximately. The public path is
``from gpulab.memory import ModelSpec``; ``gpulab.models`` holds named real configs.

One layer, in shapes (h = hidden_size, d = head_dim, I = intermediate_size)::

    attention (MHA/GQA/MQA)   q: h x n_heads*d   k, v: h x n_kv_heads*d   o: n_heads*d x h
    attention (MLA)           q_a: h x q_lora   q_b: q_lora x n_heads*(nope+rope)
                              kv_a: h x (kv_lora+rope)   kv_b: kv_lora x n_heads*(nope+v)
                              o: n_heads*v x h   (+ the two small norms on q_lora and kv_lora)
    gated MLP (SwiGLU)        gate, up: h x I   down: I x h
    MoE layer                 router: h x experts, each expert a gated MLP of width
                              moe_intermediate_size, shared experts always on
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpulab.errors import GpulabConfigError

__all__ = ["NORMS", "SUPPORTED_ARCHITECTURES", "SUPPORTED_MODEL_TYPES", "ModelSpec"]

NORMS = ("rmsnorm", "layernorm")

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


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _positive(name: str, value: object) -> None:
    if not _is_int(value) or value < 1:
        raise GpulabConfigError(f"{name}={value!r} must be a positive integer")


def _non_negative(name: str, value: object) -> None:
    if not _is_int(value) or value < 0:
        raise GpulabConfigError(f"{name}={value!r} must be an integer >= 0")


@dataclass(frozen=True)
class ModelSpec:
    """The shapes of a decoder-only transformer that decide its parameters and KV cache."""

    name: str
    n_layers: int  # decoder layers (DeepSeek-V3: 61, without the multi-token-prediction module)
    hidden_size: int  # h: the width of the residual stream
    n_heads: int  # query heads
    n_kv_heads: int  # == n_heads for multi-head attention; fewer for GQA; 1 for MQA
    head_dim: int | None  # explicit head_dim from the config; None derives hidden_size // n_heads
    intermediate_size: int  # dense MLP width (Mixtral: the width of each expert as well)
    vocab_size: int
    tie_embeddings: bool  # the output head reuses the embedding matrix
    gated_mlp: bool = True  # SwiGLU/GeGLU: gate, up, down (3 matrices); else up, down (2)
    attention_bias: bool = False  # biases on q, k, v (Qwen2: true); MLA: on q_a and kv_a
    o_bias: bool = False  # bias on the output projection (Llama with attention_bias: true)
    mlp_bias: bool = False  # biases on the MLP and expert projections
    norm: str = "rmsnorm"  # "rmsnorm" (a weight vector) or "layernorm" (weight + bias)
    # mixture of experts (0 = dense)
    n_routed_experts: int = 0  # experts a router chooses from, per MoE layer
    n_shared_experts: int = 0  # experts every token goes through (DeepSeek: 1)
    experts_per_token: int = 0  # routed experts chosen per token (Mixtral: 2, DeepSeek-V3: 8)
    moe_intermediate_size: int = 0  # width of one expert (Mixtral: = intermediate_size)
    first_dense_layers: int = 0  # DeepSeek's first_k_dense_replace: leading layers with a dense MLP
    # DeepSeek-V3's e_score_correction_bias: n_routed_experts values per MoE layer
    router_bias: bool = False
    # multi-head latent attention (DeepSeek-V2/V3); None for ordinary attention
    q_lora_rank: int | None = None  # None: q is one h x n_heads*(nope+rope) matrix
    kv_lora_rank: int | None = None  # width of the compressed KV latent that is cached
    qk_nope_head_dim: int | None = None  # per-head query/key width without rotary embedding
    qk_rope_head_dim: int | None = None  # per-head query/key width with rotary (key part shared)
    v_head_dim: int | None = None  # per-head value width
    max_position_embeddings: int | None = None  # longest context the config declares
    sliding_window: int | None = None  # every layer sees this many tokens (Mistral v0.1: 4096)
    n_mtp_layers: int = 0  # multi-token-prediction modules in the checkpoint; NOT counted
    source: str = ""  # where the shapes come from (a config.json URL)

    def __post_init__(self) -> None:
        """Validate every field; derive head_dim when it is None."""
        for field_name in ("n_layers", "hidden_size", "n_heads", "n_kv_heads",
                           "intermediate_size", "vocab_size"):
            _positive(field_name, getattr(self, field_name))
        if self.head_dim is None:
            if self.hidden_size % self.n_heads:
                raise GpulabConfigError(
                    f"n_heads={self.n_heads} does not divide hidden_size={self.hidden_size}; "
                    "give head_dim explicitly or use a head count that divides the width")
            object.__setattr__(self, "head_dim", self.hidden_size // self.n_heads)
        _positive("head_dim", self.head_dim)
        if self.n_heads % self.n_kv_heads:
            raise GpulabConfigError(
                f"n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads} "
                "(each key/value head serves a whole group of query heads)")
        if self.norm not in NORMS:
            raise GpulabConfigError(f"norm={self.norm!r} is not one of {NORMS}")
        for field_name in ("tie_embeddings", "gated_mlp", "attention_bias", "o_bias", "mlp_bias",
                           "router_bias"):
            if not isinstance(getattr(self, field_name), bool):
                raise GpulabConfigError(
                    f"{field_name}={getattr(self, field_name)!r} must be True or False")
        self._check_moe()
        self._check_mla()
        for field_name in ("max_position_embeddings", "sliding_window"):
            if getattr(self, field_name) is not None:
                _positive(field_name, getattr(self, field_name))
        _non_negative("n_mtp_layers", self.n_mtp_layers)

    def _check_moe(self) -> None:
        for field_name in ("n_routed_experts", "n_shared_experts", "experts_per_token",
                           "moe_intermediate_size", "first_dense_layers"):
            _non_negative(field_name, getattr(self, field_name))
        if self.n_routed_experts == 0:
            for field_name in ("n_shared_experts", "experts_per_token", "first_dense_layers"):
                if getattr(self, field_name):
                    raise GpulabConfigError(
                        f"{field_name}={getattr(self, field_name)} needs n_routed_experts >= 1 "
                        "(0 means a dense model)")
            if self.router_bias:
                raise GpulabConfigError("router_bias=True needs n_routed_experts >= 1")
            return
        if not 1 <= self.experts_per_token <= self.n_routed_experts:
            raise GpulabConfigError(
                f"experts_per_token={self.experts_per_token} must be between 1 and "
                f"n_routed_experts={self.n_routed_experts}")
        _positive("moe_intermediate_size", self.moe_intermediate_size)
        if self.first_dense_layers > self.n_layers:
            raise GpulabConfigError(
                f"first_dense_layers={self.first_dense_layers} must be <= n_layers={self.n_layers}")

    def _check_mla(self) -> None:
        mla = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
        if self.kv_lora_rank is None:
            given = [f for f in (*mla, "q_lora_rank") if getattr(self, f) is not None]
            if given:
                raise GpulabConfigError(
                    f"{', '.join(given)} set without kv_lora_rank: multi-head latent attention "
                    f"needs all of {', '.join(mla)} (q_lora_rank optional)")
            return
        for field_name in mla:
            _positive(field_name, getattr(self, field_name))
        if self.q_lora_rank is not None:
            _positive("q_lora_rank", self.q_lora_rank)

    # --- what kind of model ---------------------------------------------------------------

    @property
    def attention_type(self) -> str:
        """'mla' (latent KV), 'mha' (a KV head per query head), 'mqa' (one KV head) or 'gqa'."""
        if self.kv_lora_rank is not None:
            return "mla"
        if self.n_kv_heads == self.n_heads:
            return "mha"
        return "mqa" if self.n_kv_heads == 1 else "gqa"

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model (routed experts in some layers)."""
        return self.n_routed_experts > 0

    @property
    def n_moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts."""
        return self.n_layers - self.first_dense_layers if self.is_moe else 0

    @property
    def n_dense_layers(self) -> int:
        """Layers with an ordinary (dense) MLP."""
        return self.n_layers - self.n_moe_layers

    # --- parameters of the parts -----------------------------------------------------------

    def _norm(self, width: int) -> int:
        """Parameters of one norm over ``width`` features."""
        return width if self.norm == "rmsnorm" else 2 * width

    def _mlp(self, width: int) -> int:
        """Parameters of one MLP (dense, expert or fused shared experts) of inner ``width``."""
        h = self.hidden_size
        if self.gated_mlp:  # gate, up: (h, width); down: (width, h)
            return 3 * h * width + ((2 * width + h) if self.mlp_bias else 0)
        return 2 * h * width + ((width + h) if self.mlp_bias else 0)

    @property
    def attention_params(self) -> int:
        """Parameters of one layer's attention block (MLA: with its two inner norms)."""
        h, heads = self.hidden_size, self.n_heads
        if self.kv_lora_rank is None:
            d, kv = self.head_dim, self.n_kv_heads
            q_kv = h * heads * d + 2 * h * kv * d  # q: (h, heads*d); k, v: (h, kv*d)
            if self.attention_bias:
                q_kv += heads * d + 2 * kv * d
            out = heads * d * h + (h if self.o_bias else 0)  # o: (heads*d, h)
            return q_kv + out
        nope, rope, v = self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        if self.q_lora_rank is None:
            q = h * heads * (nope + rope)  # q_proj: (h, heads*(nope+rope)), never a bias
        else:
            r = self.q_lora_rank  # q_a: (h, r), norm on r, q_b: (r, heads*(nope+rope))
            q = h * r + (r if self.attention_bias else 0) + self._norm(r)
            q += r * heads * (nope + rope)
        c = self.kv_lora_rank  # kv_a: (h, c+rope), norm on c, kv_b: (c, heads*(nope+v))
        kv_part = h * (c + rope) + ((c + rope) if self.attention_bias else 0)
        kv_part += self._norm(c) + c * heads * (nope + v)
        out = heads * v * h + (h if self.o_bias else 0)  # o: (heads*v, h)
        return q + kv_part + out

    @property
    def dense_mlp_params(self) -> int:
        """Parameters of one dense MLP of width intermediate_size."""
        return self._mlp(self.intermediate_size)

    @property
    def expert_params(self) -> int:
        """Parameters of one routed expert (an MLP of width moe_intermediate_size); 0 if dense."""
        return self._mlp(self.moe_intermediate_size) if self.is_moe else 0

    @property
    def router_params(self) -> int:
        """Parameters of one MoE layer's router: (experts, h), plus the correction bias if any."""
        if not self.is_moe:
            return 0
        e = self.n_routed_experts
        return e * self.hidden_size + (e if self.router_bias else 0)

    @property
    def moe_mlp_params(self) -> int:
        """Parameters of one MoE layer's MLP: routed experts, shared experts, router."""
        if not self.is_moe:
            return 0
        # Shared experts run as one MLP of n_shared x the expert width (DeepSeek, transformers).
        shared = self._mlp(self.n_shared_experts * self.moe_intermediate_size) \
            if self.n_shared_experts else 0
        return self.n_routed_experts * self.expert_params + shared + self.router_params

    def _check_layer(self, i: int) -> None:
        if not _is_int(i) or not 0 <= i < self.n_layers:
            raise GpulabConfigError(f"layer={i!r} must be an integer in 0..{self.n_layers - 1}")

    def is_moe_layer(self, i: int) -> bool:
        """True when decoder layer ``i`` (0-based) has a mixture-of-experts MLP."""
        self._check_layer(i)
        return self.is_moe and i >= self.first_dense_layers

    def layer_params(self, i: int) -> int:
        """Parameters of decoder layer ``i`` (0-based): attention, MLP or experts, two norms."""
        mlp = self.moe_mlp_params if self.is_moe_layer(i) else self.dense_mlp_params
        return self.attention_params + mlp + 2 * self._norm(self.hidden_size)

    def params_by_component(self) -> dict[str, int]:
        """Exact parameters per component: embedding, attention, mlp, norms, lm_head (0 if tied).

        "mlp" holds the dense MLPs, every routed and shared expert and the routers; "norms"
        holds the two norms of each layer and the final norm (MLA's inner norms are in
        "attention"). A multi-token-prediction module (``n_mtp_layers``) is not counted.
        """
        embedding = self.vocab_size * self.hidden_size  # (vocab, h)
        return {
            "embedding": embedding,
            "attention": self.n_layers * self.attention_params,
            "mlp": self.n_dense_layers * self.dense_mlp_params
            + self.n_moe_layers * self.moe_mlp_params,
            "norms": (2 * self.n_layers + 1) * self._norm(self.hidden_size),
            "lm_head": 0 if self.tie_embeddings else embedding,
        }

    @property
    def n_params(self) -> int:
        """Total parameters: the sum of params_by_component() (what the weights occupy)."""
        return sum(self.params_by_component().values())

    @property
    def n_active_params(self) -> int:
        """Parameters one token uses: all but the routed experts not chosen for it.

        Embedding and output head are counted as active (a token's row of the embedding is
        read, the whole head is multiplied); subtract ``params_by_component()["embedding"]``
        where a FLOP count wants them out. Shared experts and routers are always active.
        """
        idle = self.n_routed_experts - self.experts_per_token
        return self.n_params - self.n_moe_layers * idle * self.expert_params

    # --- KV cache --------------------------------------------------------------------------

    def kv_elements_per_token(self) -> int:
        """Elements the KV cache stores per token over all layers.

        MHA/GQA/MQA: 2 (K and V) x layers x n_kv_heads x head_dim. MLA: layers x
        (kv_lora_rank + qk_rope_head_dim), the compressed latent that vLLM and SGLang cache.
        With ``sliding_window`` set, no more than that many tokens are ever cached.
        """
        if self.kv_lora_rank is not None:
            return self.n_layers * (self.kv_lora_rank + self.qk_rope_head_dim)
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim

    def kv_elements_per_token_expanded(self) -> int:
        """Elements per token for MLA code that caches full K and V (same as above otherwise).

        MLA: layers x n_heads x (qk_nope_head_dim + qk_rope_head_dim + v_head_dim), as in a
        plain transformers/PyTorch implementation that expands the latent before caching.
        """
        if self.kv_lora_rank is None:
            return self.kv_elements_per_token()
        per_head = self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim
        return self.n_layers * self.n_heads * per_head

    # --- from a Hugging Face config.json ---------------------------------------------------

    @classmethod
    def from_hf_config(cls, cfg: Mapping[str, Any], name: str | None = None) -> ModelSpec:
        """Read a Hugging Face config.json dict of a supported family; refuse anything else.

        Supported model_type values: llama, mistral, mixtral, qwen2, phi3, deepseek_v3
        (DeepSeek-V3 and R1). Keys the count needs must be present; optional keys take the
        defaults of the transformers config class. DeepSeek-V3's multi-token-prediction
        module (``num_nextn_predict_layers``) is recorded in ``n_mtp_layers`` but not counted.
        """
        if not isinstance(cfg, Mapping):
            raise GpulabConfigError(
                f"cfg must be a dict (a parsed config.json), not {type(cfg).__name__}")
        model_type = _model_type(cfg)
        fields_ = _READERS[model_type](_Config(cfg, model_type))
        if name is None:
            name = str(cfg.get("_name_or_path") or model_type)
        try:
            return cls(name=name, **fields_)
        except GpulabConfigError as err:  # name the config.json key behind the field
            field_name = str(err).split("=", 1)[0]
            keys = {**_CONFIG_KEY["*"], **_CONFIG_KEY.get(model_type, {})}
            key = keys.get(field_name)
            hint = f" (config key {key!r})" if key else ""
            raise GpulabConfigError(f"{model_type} config: {err}{hint}") from None


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
        "tie_embeddings": bool(c.get("tie_word_embeddings", False)),
        "max_position_embeddings": c.get("max_position_embeddings"),
    }


def _read_llama(c: _Config) -> dict[str, Any]:
    """LlamaForCausalLM: attention_bias puts biases on q, k, v and o; mlp_bias on the MLP."""
    bias = bool(c.get("attention_bias", False))
    return {**_dense_fields(c), "attention_bias": bias, "o_bias": bias,
            "mlp_bias": bool(c.get("mlp_bias", False))}


def _read_mistral(c: _Config) -> dict[str, Any]:
    """MistralForCausalLM: no biases; an optional sliding window on every layer."""
    return {**_dense_fields(c), "sliding_window": c.get("sliding_window")}


def _read_phi3(c: _Config) -> dict[str, Any]:
    """Phi3ForCausalLM: fused qkv_proj and gate_up_proj hold the same parameters as split ones."""
    return {**_dense_fields(c), "sliding_window": c.get("sliding_window")}


def _read_qwen2(c: _Config) -> dict[str, Any]:
    """Qwen2ForCausalLM: biases on q, k, v (not o); sliding windows only if switched on."""
    if c.get("use_sliding_window", False):
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
    bias = bool(c.get("attention_bias", False))
    return {
        "n_layers": c.need("num_hidden_layers"),
        "hidden_size": c.need("hidden_size"),
        "n_heads": heads,
        "n_kv_heads": heads,  # MLA: every head gets its own K and V from the shared latent
        "head_dim": nope + rope if _is_int(nope) and _is_int(rope) else None,  # the q/k head width
        "intermediate_size": c.need("intermediate_size"),
        "vocab_size": c.need("vocab_size"),
        "tie_embeddings": bool(c.get("tie_word_embeddings", False)),
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
