"""The architecture of a decoder-only transformer, and its exact parameter count (chapter 2).

A :class:`ModelSpec` holds the shapes that decide a model's memory: layers, widths, heads,
key/value heads, experts, vocabulary. From them it counts every parameter of the
architecture exactly (embedding, attention, MLP or experts, norms, output head) and the
elements the KV cache stores per token. The counts are checked in the tests against the
model classes of ``transformers`` built on the meta device (no memory, nothing downloaded).

``ModelSpec.from_hf_config(cfg)`` reads a Hugging Face ``config.json`` (as a dict) of the
Llama 3/3.1/3.2, Mistral, Mixtral, Qwen2/Qwen2.5, Phi-3 and DeepSeek-V3/R1 families. Anything
else is refused with the reason, never counted approximately. The public path is
``from gpulab.estimate.memory import ModelSpec``; ``gpulab.models`` holds named real configs.

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
from dataclasses import dataclass, field
from typing import Annotated, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import NonNegativeInt, OneOf, PositiveInt, checked
from gpulab.reference.hf_config import (
    SUPPORTED_ARCHITECTURES,
    SUPPORTED_MODEL_TYPES,
    config_key,
    read_fields,
)

__all__ = ["NORMS", "SUPPORTED_ARCHITECTURES", "SUPPORTED_MODEL_TYPES", "ModelSpec"]

NORMS = ("rmsnorm", "layernorm")


@checked
@dataclass(frozen=True)
class ModelSpec:
    """The shapes of a decoder-only transformer that decide its parameters and KV cache."""

    __validation_hint__ = "get one with gpulab.models.get(name) or ModelSpec.from_hf_config(cfg)"

    name: str
    n_layers: (
        PositiveInt  # decoder layers (DeepSeek-V3: 61, without the multi-token-prediction module)
    )
    hidden_size: PositiveInt  # h: the width of the residual stream
    n_heads: PositiveInt  # query heads
    n_kv_heads: PositiveInt  # == n_heads for multi-head attention; fewer for GQA; 1 for MQA
    head_dim: (
        PositiveInt | None
    )  # explicit head_dim from the config; None derives hidden_size // n_heads
    intermediate_size: PositiveInt  # dense MLP width (Mixtral: the width of each expert as well)
    vocab_size: PositiveInt
    tie_embeddings: bool  # the output head reuses the embedding matrix
    gated_mlp: bool = True  # SwiGLU/GeGLU: gate, up, down (3 matrices); else up, down (2)
    attention_bias: bool = False  # biases on q, k, v (Qwen2: true); MLA: on q_a and kv_a
    o_bias: bool = False  # bias on the output projection (Llama with attention_bias: true)
    mlp_bias: bool = False  # biases on the MLP and expert projections
    norm: Annotated[str, OneOf(NORMS, "norm")] = (
        "rmsnorm"  # "rmsnorm" (a weight vector) or "layernorm" (weight + bias)
    )
    # mixture of experts (0 = dense)
    n_routed_experts: NonNegativeInt = 0  # experts a router chooses from, per MoE layer
    n_shared_experts: NonNegativeInt = 0  # experts every token goes through (DeepSeek: 1)
    experts_per_token: NonNegativeInt = (
        0  # routed experts chosen per token (Mixtral: 2, DeepSeek-V3: 8)
    )
    moe_intermediate_size: NonNegativeInt = 0  # width of one expert (Mixtral: = intermediate_size)
    first_dense_layers: NonNegativeInt = (
        0  # DeepSeek's first_k_dense_replace: leading layers with a dense MLP
    )
    # DeepSeek-V3's e_score_correction_bias: n_routed_experts values per MoE layer
    router_bias: bool = False
    # multi-head latent attention (DeepSeek-V2/V3); None for ordinary attention
    q_lora_rank: PositiveInt | None = None  # None: q is one h x n_heads*(nope+rope) matrix
    kv_lora_rank: PositiveInt | None = None  # width of the compressed KV latent that is cached
    qk_nope_head_dim: PositiveInt | None = None  # per-head query/key width without rotary embedding
    qk_rope_head_dim: PositiveInt | None = (
        None  # per-head query/key width with rotary (key part shared)
    )
    v_head_dim: PositiveInt | None = None  # per-head value width
    max_position_embeddings: PositiveInt | None = None  # longest context the config declares
    sliding_window: PositiveInt | None = (
        None  # every layer sees this many tokens (Mistral v0.1: 4096)
    )
    n_mtp_layers: NonNegativeInt = (
        0  # multi-token-prediction modules in the checkpoint; NOT counted
    )
    source: str = ""  # where the shapes come from (a config.json URL)
    # What the shapes leave out that an estimate should say (config.json's own quantization):
    # the estimates add them to their notes. Not part of the architecture, so not compared.
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        """Check what the field types cannot say alone; derive head_dim when it is None."""
        if self.head_dim is None:
            if self.hidden_size % self.n_heads:
                raise GpulabConfigError(
                    f"n_heads={self.n_heads} does not divide hidden_size={self.hidden_size}; "
                    "give head_dim explicitly or use a head count that divides the width"
                )
            object.__setattr__(self, "head_dim", self.hidden_size // self.n_heads)
        if self.n_heads % self.n_kv_heads:
            raise GpulabConfigError(
                f"n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads} "
                "(each key/value head serves a whole group of query heads)"
            )
        self._check_moe()
        self._check_mla()

    def _check_moe(self) -> None:
        if self.n_routed_experts == 0:
            for field_name in ("n_shared_experts", "experts_per_token", "first_dense_layers"):
                if getattr(self, field_name):
                    raise GpulabConfigError(
                        f"{field_name}={getattr(self, field_name)} needs n_routed_experts >= 1 "
                        "(0 means a dense model)"
                    )
            if self.router_bias:
                raise GpulabConfigError("router_bias=True needs n_routed_experts >= 1")
            return
        if not 1 <= self.experts_per_token <= self.n_routed_experts:
            raise GpulabConfigError(
                f"experts_per_token={self.experts_per_token} must be between 1 and "
                f"n_routed_experts={self.n_routed_experts}"
            )
        if self.moe_intermediate_size < 1:
            raise GpulabConfigError(
                f"moe_intermediate_size={self.moe_intermediate_size} must be a positive integer "
                "in a mixture of experts"
            )
        if self.first_dense_layers > self.n_layers:
            raise GpulabConfigError(
                f"first_dense_layers={self.first_dense_layers} must be <= n_layers={self.n_layers}"
            )

    def _check_mla(self) -> None:
        mla = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
        given = [f for f in (*mla, "q_lora_rank") if getattr(self, f) is not None]
        missing = [f for f in mla if getattr(self, f) is None]
        if given and self.kv_lora_rank is None:
            raise GpulabConfigError(
                f"{', '.join(given)} set without kv_lora_rank: multi-head latent attention "
                f"needs all of {', '.join(mla)} (q_lora_rank optional)",
                given[0],
            )
        if given and missing:
            raise GpulabConfigError(
                f"{missing[0]}=None: multi-head latent attention needs all of {', '.join(mla)} "
                f"(q_lora_rank optional); given: {', '.join(given)}"
            )

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
        shared = (
            self._mlp(self.n_shared_experts * self.moe_intermediate_size)
            if self.n_shared_experts
            else 0
        )
        return self.n_routed_experts * self.expert_params + shared + self.router_params

    def _check_layer(self, i: int) -> None:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.n_layers:
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
        ``sliding_window`` is not applied here or in ``memory.kv_cache_bytes``: the estimates
        count every token of the sequence, as a cache sized for the whole context does.
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
        A ``quantization_config`` (AWQ, GPTQ, fp8) is not applied: ``notes`` says so and which
        weight format to ask the estimates for.
        """
        model_type, fields_ = read_fields(cfg)
        if name is None:
            name = str(cfg.get("_name_or_path") or model_type)
        try:
            return cls(name=name, **fields_)
        except GpulabConfigError as err:  # name the config.json key behind the field
            key = config_key(model_type, err.field)
            hint = f" (config key {key!r})" if key else ""
            raise GpulabConfigError(f"{model_type} config: {err}{hint}", err.field) from None
