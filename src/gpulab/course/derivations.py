"""The fact-check's registry of derivations: functions that recompute a claim's correct value.

A claim in ``data/fact_check.json`` whose derivation is ``{"computed": "<name>"}`` names a
function registered here with ``@register`` under its own name; it takes no argument and returns a
``Computed`` (the value, its unit, the headline text and the arithmetic). The functions live
in ``gpulab.claims_hardware`` (chapter 1), ``gpulab.claims_models`` (chapter 2),
``gpulab.claims_speed`` (chapter 3) and ``gpulab.claims_buying`` (chapters 4-6);
``gpulab.factcheck`` loads them all, so the registry is full whenever it is used.

Inputs that gpulab's tables do not hold are constants below, each with its source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import GB
from gpulab.core.validate import PositiveFloat, checked
from gpulab.estimate import basis
from gpulab.reference import specs
from gpulab.reference.formats import WeightFormatName, bits_per_weight

__all__ = [
    "BERT_BASE_PARAMS",
    "DDR4_3200_DUAL_GBS",
    "DDR5_4800_DUAL_GBS",
    "GTX1650_GDDR6_GBS",
    "LINEAR_BENCH_FLOP",
    "LLAMACPP_4090_LLAMA2_7B_TOK_S",
    "LLAMA_ZH_SAMPLE",
    "PRICES",
    "REGISTRY",
    "RTX4090_MIN_PSU_W",
    "SD35",
    "SD35_MEDIUM",
    "Computed",
    "Prices",
    "SD35Config",
    "compute",
    "cpu_13900k",
    "gpu",
    "nominal_weight_gb",
    "register",
    "weight_gb",
]


@dataclass(frozen=True)
class Computed:
    """A value recomputed in the page, with the arithmetic that gives it."""

    value: float  # the headline number, in `unit`
    unit: str  # "GB", "tokens/s", "x" (a ratio), ...
    text: str  # the headline as printed; must appear in the claim's rendered correct_value
    how: str  # the arithmetic, with where each input comes from
    # named values the claim's templates fill in ("{bound_tok_s:.1f} tokens/s"); "headline" is
    # always added and holds `text`, so a template can show the headline as it is printed here
    values: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        # read-only, and the headline always present, so every template can rely on it
        object.__setattr__(self, "values", MappingProxyType({**self.values, "headline": self.text}))


REGISTRY: dict[str, Callable[[], Computed]] = {}  # name -> function; filled by @register


@checked
def register(fn: Callable[[], Computed], name: str | None = None) -> Callable[[], Computed]:
    """Decorator: make a no-argument function returning Computed a derivation, under its own
    name (the name a claim's `computed` field gives), or `name` for one made in a loop."""
    name = fn.__name__ if name is None else name
    if name in REGISTRY:
        raise ValueError(f"factcheck function {name!r} registered twice")
    REGISTRY[name] = fn
    return fn


@checked
def compute(name: str) -> Computed:
    """Run the registered function `name`."""
    if name not in REGISTRY:
        raise GpulabConfigError(
            f"computed={name!r} is not a registered function; known: {', '.join(sorted(REGISTRY))}",
            "name",
        )
    return REGISTRY[name]()


# Inputs that gpulab's tables do not hold, with their sources (as cited in chapters 1-4).
DDR4_3200_DUAL_GBS = 2 * 8 * 3200 / 1e3  # 51.2: two 64-bit channels x 3200 MT/s (i7-12700H, ch. 3)
DDR5_4800_DUAL_GBS = 2 * 8 * 4800 / 1e3  # 76.8: the same at 4800 MT/s
GTX1650_GDDR6_GBS = 192.0  # 128-bit x 12 Gbps (pcpartdb, gigabyte-gtx-1650-eagle-oc-gddr6)
BERT_BASE_PARAMS = 110e6  # Devlin et al. 2018, "Total Parameters=110M"
LINEAR_BENCH_FLOP = 2 * 10000 * 4096 * 4096  # the article's nn.Linear(4096, 4096) on 10000 rows
# llama.cpp's published decode rates for Llama 2 7B on one RTX 4090, tokens/s, "Average eval speed"
# table of https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference (README, LLaMA 2 section)
LLAMACPP_4090_LLAMA2_7B_TOK_S = {"f16": 60.78, "q4_0": 149.37}
RTX4090_MIN_PSU_W = 850  # NVIDIA's power-supply requirement (sportskeeda, 2022-10-12)
# Chinese text with LLaMA's tokenizer, which Llama 2 keeps (32,000 entries, fewer than a thousand
# Chinese characters, the rest split into UTF-8 bytes): Cui, Yang and Yao 2023, "Efficient and
# Effective Text Encoding for Chinese LLaMA and Alpaca", arXiv:2304.08177, section 2.2, Table 1:
# a 28-character sentence is 35 tokens with LLaMA's tokenizer and 16 with their Chinese one.
LLAMA_ZH_SAMPLE = MappingProxyType({"characters": 28, "llama_tokens": 35, "chinese_tokens": 16})


@dataclass(frozen=True)
class Prices:
    """Published prices the article's per-token and per-card figures are checked against."""

    # DeepSeek API, deepseek-reasoner (R1), USD per 1M output tokens, price list in force until
    # 2025-09-05: https://api-docs.deepseek.com/quick_start/pricing
    deepseek_r1_output_usd_per_m: float = 2.19
    # Llama 3 70B class, USD per 1M tokens: aigateway.sh (Llama-3.1-70B output) and
    # docs.api.market (Meta-Llama-3-70B-Instruct), the low and high ends of the resellers found
    llama3_70b_usd_per_m: tuple[float, float] = (0.60, 1.20)
    # AWS Bedrock, Meta Llama 3 70B Instruct (meta.llama3-70b-instruct-v1:0), on-demand, USD per
    # 1M output tokens: "$0.0035" per 1,000 output tokens on https://aws.amazon.com/bedrock/pricing/
    # (its 2024 list, US East; the page renders its prices in the browser, so the figure is the
    # one public price tables transcribe from it, with $0.00265 per 1,000 input tokens)
    llama3_70b_bedrock_output_usd_per_m: float = 3.50
    # Alibaba's qwen2-72b-instruct, CNY per 1,000 output tokens (the family's published list,
    # as reproduced at http://win7zhijia.cc/post/44101.html); no dated Qwen2.5-72B list was found
    qwen2_72b_output_cny_per_k: float = 0.01
    # H100 per-card price range, USD: https://aiwiki.ai/wiki/nvidia_h100 ("$25,000 to $40,000")
    h100_usd: tuple[float, float] = (25_000, 40_000)
    usd_cny: float = 7.2  # CNY per USD, the 2024-2025 rate to about 2%


PRICES = Prices()


@dataclass(frozen=True)
class SD35Config:
    """A Stable Diffusion 3.5 MMDiT at 1024 x 1024, as diffusers runs it by default.

    Sources: https://huggingface.co/blog/sd3-5 (Large: "8.1 billion parameters", Large Turbo: 4
    steps); https://huggingface.co/stabilityai/stable-diffusion-3.5-medium (Medium: 2.5 billion
    parameters, MMDiT-X); each model's transformer/config.json for the shapes. Steps:
    diffusers' StableDiffusion3Pipeline calls the model 28 times with classifier-free guidance
    (its defaults, num_inference_steps=28, guidance_scale=7.0), for Large and Medium alike.
    """

    params: float = 8.1e9  # the MMDiT's published parameter count
    steps: int = 28  # diffusers' default number of steps, each with classifier-free guidance
    turbo_steps: int = 4  # Large Turbo: 4 steps, no guidance
    image_tokens: int = (1024 // 8 // 2) ** 2  # VAE downsamples 8x, 2x2 patches: 64 x 64
    text_tokens: int = 77 + 256  # CLIP context plus T5 (max_sequence_length 256)
    # The MMDiT's shapes (Esser et al. 2024, arXiv:2403.03206; transformer/config.json of
    # Large: num_layers 38, num_attention_heads 38, attention_head_dim 64): one weight set per
    # modality.
    depth: int = 38
    heads: int = 38
    head_dim: int = 64
    # MMDiT-X (Medium: dual_attention_layers 0 to 12): these blocks add a second attention over
    # the image tokens alone, with its own QKV and output weights
    dual_attention_layers: int = 0

    @property
    def width(self) -> int:
        """The hidden width of a block: heads x head_dim."""
        return self.heads * self.head_dim

    def pass_flops(self) -> tuple[float, float]:
        """(matrix, attention) FLOPs of one forward pass at 1024 x 1024.

        Each token goes through its own modality's stream (12 x width^2 weights a block: QKV,
        output, a 4x MLP), 2 FLOPs per weight; joint attention over all tokens costs
        Q K^T and scores x V, 2 x tokens^2 x width each, per block. A dual-attention block adds
        4 x width^2 weights and an attention over the image tokens. Within 1% of PyTorch's
        FlopCounterMode on diffusers' SD3Transformer2DModel (tests/unit/test_figures_ch03.py).
        """
        tokens, image = self.image_tokens + self.text_tokens, self.image_tokens
        matmul = 2 * 12 * self.width**2 * self.depth * tokens
        attention = 4 * self.depth * tokens**2 * self.width
        matmul += 2 * 4 * self.width**2 * self.dual_attention_layers * image
        attention += 4 * self.dual_attention_layers * image**2 * self.width
        return float(matmul), float(attention)


SD35 = SD35Config()  # Large
SD35_MEDIUM = SD35Config(params=2.5e9, depth=24, heads=24, head_dim=64, dual_attention_layers=13)


@checked
def gpu(name: str) -> specs.GPUSpec:
    """A spec-table row, by name."""
    return specs.get_gpu(name)


def cpu_13900k() -> specs.CPUSpec:
    """The CPU the tutorial compares GPUs with: a Core i9-13900K."""
    return specs.get_cpu("Core i9-13900K")


@checked
def weight_gb(model: str, fmt: WeightFormatName) -> float:
    """Weight bytes of a catalogue model in a format, in GB (gpulab.estimate.basis)."""
    return basis.weights_gb(model, fmt)


@checked
def nominal_weight_gb(params: PositiveFloat, fmt: WeightFormatName) -> float:
    """GB of weights for a nominal parameter count in a format (no catalogue model at that size)."""
    return params * bits_per_weight(fmt) / 8 / GB
