"""Number formats and precision recipes: the bytes each value takes, with sources (chapter 2).

One vocabulary for the whole library. Weight formats (``WEIGHT_FORMATS``: "bf16", "int4",
"q4_k_m", ...) say how a checkpoint stores weights; KV-cache and activation formats say how
many bytes one cached or transient value takes; training recipes (``TRAINING_PRECISIONS``)
say which precision weights, gradients and optimizer states are kept in. The recipes that a
PyTorch loop runs through ``torch.autocast`` are ``AUTOCAST_PRECISIONS``: "fp32" (no
autocast), "autocast-bf16" and "autocast-fp16". The memory estimator
(``gpulab.memory``), the measured training steps (``gpulab.generation``) and chapter 5's lab
(``gpulab.training_loops``) all use these names; ``gpulab.precision.autocast`` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, checked

__all__ = [
    "ACTIVATION_BYTES",
    "AUTOCAST_PRECISIONS",
    "DTYPE_BYTES",
    "KV_FORMATS",
    "PUBLISHED_FILES",
    "TRAINING_PRECISIONS",
    "WEIGHT_FORMATS",
    "ActivationDtype",
    "AutocastPrecision",
    "KVFormat",
    "TrainingPrecision",
    "WeightFormat",
    "WeightFormatName",
    "bits_per_weight",
    "published_file",
    "weight_format",
]


@dataclass(frozen=True)
class WeightFormat:
    """How a format stores weights: bits per value plus the scales it needs per group."""

    name: str
    bits: int  # bits per quantized value
    group_size: int | None  # weights sharing one scale; None: per tensor (scale negligible)
    scale_bits: float  # bits of scale (and zero point, min, super-block scales) per group
    source: str
    # True: the decoder's matrices are quantized, the embedding, output head and norms stay in
    # 16 bits (Hugging Face loaders: bitsandbytes, GPTQ, AWQ). False: every tensor is stored in
    # the format (full precision, and GGUF files whose published bits/weight cover the file).
    keeps_embeddings_16bit: bool = False
    published_bpw: float | None = None  # a mixed format's measured bits/weight over a model

    @property
    def bits_per_weight(self) -> float:
        """Effective bits per weight: value bits + scale bits / group size (or a published mix)."""
        if self.published_bpw is not None:
            return self.published_bpw
        return self.bits + (self.scale_bits / self.group_size if self.group_size else 0.0)


WEIGHT_FORMATS: dict[str, WeightFormat] = {
    f.name: f
    for f in [
        WeightFormat("fp32", 32, None, 0, "IEEE 754 single precision"),
        WeightFormat("fp16", 16, None, 0, "IEEE 754 half precision"),
        WeightFormat("bf16", 16, None, 0, "bfloat16: 8 exponent bits, 7 mantissa bits"),
        WeightFormat(
            "fp8",
            8,
            128 * 128,
            32,
            "FP8 E4M3 with one fp32 scale per 128x128 block "
            "(DeepSeek-V3 technical report, section 3.3)",
            keeps_embeddings_16bit=True,
        ),
        WeightFormat(
            "int8",
            8,
            4096,
            16,
            "int8 with one fp16 scale per output channel "
            "(LLM.int8-style per-row scaling; a 4096-wide row assumed)",
            keeps_embeddings_16bit=True,
        ),
        WeightFormat(
            "int4",
            4,
            128,
            16,
            "int4 with one fp16 scale per group of 128 weights "
            "(symmetric; the GPTQ/AWQ default group size)",
            keeps_embeddings_16bit=True,
        ),
        WeightFormat(
            "int4-asym",
            4,
            128,
            20,
            "int4, group 128, fp16 scale + 4-bit zero point (GPTQ/AWQ asymmetric packing)",
            keeps_embeddings_16bit=True,
        ),
        WeightFormat(
            "nf4",
            4,
            64,
            8 + 32 / 256,
            "bitsandbytes NF4 with double quantization: an "
            "8-bit scale per 64 weights + an fp32 scale per 256 scales = 4.127 bits/weight "
            "(Dettmers et al., QLoRA, 2023, section 3)",
            keeps_embeddings_16bit=True,
        ),
        WeightFormat(
            "q8_0",
            8,
            32,
            16,
            "GGUF Q8_0: blocks of 32 int8 values + one fp16 scale = "
            "8.5 bits/weight (llama.cpp ggml-common.h, block_q8_0)",
        ),
        WeightFormat(
            "q4_0",
            4,
            32,
            16,
            "GGUF Q4_0: blocks of 32 4-bit values + one fp16 scale = "
            "4.5 bits/weight (llama.cpp ggml-common.h, block_q4_0)",
        ),
        WeightFormat(
            "q4_k_m",
            4,
            256,
            0,
            "GGUF Q4_K_M: mostly Q4_K super-blocks with some tensors "
            "in Q6_K; 4.84 bits/weight over Llama-2-7B (llama.cpp tools/quantize README, "
            "'Bits per Weight' table)",
            published_bpw=4.84,
        ),
    ]
}

# Published quantized files whose size a format's bits per weight only approximate:
# (catalogue model, format) -> (bytes of the file as published, where the figure is). A GGUF
# k-quant mix gives some tensors more bits by their kind and layer, so its bits per weight depend
# on the model: Q4_K_M's 4.84 is measured over the dense Llama-2-7B.
PUBLISHED_FILES: dict[tuple[str, str], tuple[float, str]] = {
    ("Mixtral-8x7B", "q4_k_m"): (
        26.44e9,
        "https://huggingface.co/TheBloke/Mixtral-8x7B-v0.1-GGUF, README 'Provided files' table: "
        "mixtral-8x7b-v0.1.Q4_K_M.gguf, 26.44 GB",
    ),
}

KV_FORMATS = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
# Activations are held in the compute precision.
ACTIVATION_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


# Bytes per parameter for (weights, gradients) in each recipe, and the optimizer's master copy.
TRAINING_PRECISIONS = {
    # everything in fp32
    "fp32": {"weights": 4, "gradients": 4, "master": 0, "activations": "fp32"},
    # bf16 weights and gradients, fp32 master weights kept by the optimizer
    # (mixed precision as in the ZeRO paper: 2 + 2 + 12 bytes per parameter with Adam)
    "bf16-mixed": {"weights": 2, "gradients": 2, "master": 4, "activations": "bf16"},
    # torch.autocast: fp32 weights and gradients, bf16 matmuls, plus the bf16 copies of the
    # weights that autocast caches for the forward and backward passes
    "autocast-bf16": {"weights": 4 + 2, "gradients": 4, "master": 0, "activations": "bf16"},
    # the same with float16 (and a GradScaler, which keeps no per-parameter state)
    "autocast-fp16": {"weights": 4 + 2, "gradients": 4, "master": 0, "activations": "fp16"},
    # pure bf16: weights, gradients and optimizer states all bf16
    "bf16": {"weights": 2, "gradients": 2, "master": 0, "activations": "bf16"},
}
# The recipes a PyTorch training loop runs with torch.autocast (gpulab.precision.autocast).
AUTOCAST_PRECISIONS = ("fp32", "autocast-bf16", "autocast-fp16")
# Bytes per element of the dtypes the library counts in.
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}

# Names as annotations: @checked functions reject anything else with a "did you mean".
WeightFormatName = Annotated[str, OneOf(WEIGHT_FORMATS, "weight format", ignore_case=True)]
KVFormat = Annotated[str, OneOf(KV_FORMATS, "KV-cache format")]
ActivationDtype = Annotated[str, OneOf(ACTIVATION_BYTES, "activation dtype")]
TrainingPrecision = Annotated[str, OneOf(TRAINING_PRECISIONS, "training precision")]
AutocastPrecision = Annotated[str, OneOf(AUTOCAST_PRECISIONS, "autocast precision")]


@checked
def weight_format(name: WeightFormatName) -> WeightFormat:
    """The WeightFormat called `name` (case-insensitive)."""
    return WEIGHT_FORMATS[name.lower()]


@checked
def bits_per_weight(fmt: WeightFormatName) -> float:
    """Effective bits per weight of a named format, scales included (int4 -> 4.125)."""
    return WEIGHT_FORMATS[fmt.lower()].bits_per_weight


@checked
def published_file(model: str, fmt: WeightFormatName) -> tuple[float, str]:
    """(bytes, source) of a published file of `model` in `fmt`, from PUBLISHED_FILES."""
    key = (model, fmt.lower())
    if key not in PUBLISHED_FILES:
        known = ", ".join(f"{m} in {f}" for m, f in PUBLISHED_FILES)
        raise GpulabConfigError(f"model={model!r}, fmt={fmt!r}: no published file; known: {known}")
    return PUBLISHED_FILES[key]
