"""Memory of one fine-tuning step on one GPU: full, LoRA and QLoRA (appendix, issue 27).

``gpulab.memory.estimate_training`` counts a full fine-tune the way transformers and PyTorch's
AdamW run it. Single-GPU recipes such as torchtune's pull more levers, and this module counts
them, from the same activation formulas (``gpulab.activations``) and the same bytes per value:

- the base weights in the recipe's dtype, or NF4 with its scales and the embedding and output
  head kept in 16 bits (QLoRA, ``memory.weight_bytes(spec, "nf4")``);
- the trainable parameters: every weight (full), or LoRA's A and B (``parallel.lora_params``);
- their gradients, all at once, or, with the optimizer step run inside the backward pass, one
  parameter's at a time (each is stepped and freed as soon as it is made);
- the optimizer states in the parameters' dtype (AdamW) or 8 bits (bitsandbytes); paged states
  live in CUDA unified memory, which PyTorch's allocator does not count;
- what the layers keep for the backward pass (each layer's input with checkpointing, plus one
  layer rebuilt at a time), and the loss: the logits, chunked or whole, and their fp32 tensors.

A step peaks at one of three moments, and `FinetuneMemory.moment` says which: the loss (every
kept activation with the logits and the loss's tensors, or the logits' gradients and the
output head's), a layer's backward (with checkpointing the rebuilt layer joins the kept
inputs; gradients are being made) or the optimizer step (every gradient and the step's
temporaries). `allocator_peak` is what ``torch.cuda.max_memory_allocated`` would report;
`device_peak` adds the paged states. Checked against the allocator on the CPU for a toy model
(tests/unit/test_finetune.py); not modelled: torch.compile's fusions inside a layer, the
final norm's tensors, and what kernels allocate for themselves.

    from gpulab import finetune, models
    recipe = finetune.FinetuneRecipe("qlora", lora_rank=8, lora_targets=("q", "v", "o"))
    finetune.estimate_finetune(models.get("Llama-3.1-8B"), recipe).allocator_peak  # bytes
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Annotated

from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import GIB
from gpulab.core.validate import OneOf, PositiveFloat, PositiveInt, checked
from gpulab.estimate.activations import (
    OPTIMIZERS,
    Optimizer,
    OptimizerImpl,
    loss_head_bytes,
    norm_kept_bytes,
    training_activation_bytes,
)
from gpulab.estimate.memory import weight_bytes
from gpulab.estimate.parallel import LORA_TARGETS, lora_params
from gpulab.reference import models, published_memory
from gpulab.reference.formats import ACTIVATION_BYTES, ActivationDtype
from gpulab.reference.modelspec import ModelSpec
from gpulab.reference.published_memory import MemoryFigure

__all__ = [
    "LEVERS",
    "METHODS",
    "PAGED_MIN_ELEMENTS",
    "FinetuneMemory",
    "FinetuneRecipe",
    "PublishedPeak",
    "compare_published",
    "estimate_finetune",
    "lever_effects",
    "trainable_tensors",
]

METHODS = ("full", "lora", "qlora")
Method = Annotated[str, OneOf(METHODS, "fine-tuning method")]
LoraTarget = Annotated[str, OneOf(LORA_TARGETS, "LoRA target")]
# bitsandbytes pages the states of a tensor of at least this many elements and keeps smaller
# ones as ordinary tensors (bitsandbytes/optim/optimizer.py, Optimizer8bit.get_state_buffer:
# "if not self.is_paged or p.numel() < 1e5: return torch.zeros_like(...)").
PAGED_MIN_ELEMENTS = 100_000
# The whole-vocabulary loss's backward holds three fp32 vocabulary-wide tensors per token (the
# log-softmax, its gradient and the logits'), as gpulab.memory.estimate_training counts it
# (measured with MemTracker, tests/unit/test_memprobe.py); its head's backward, one.
_LOSS_BACKWARD_FP32 = 3
_HEAD_BACKWARD_FP32 = 1


@checked
@dataclass(frozen=True)
class FinetuneRecipe:
    """What a fine-tuning step holds: the method, the dtype and the memory levers it pulls."""

    method: Method  # "full": every weight trains; "lora", "qlora": adapters on bf16, NF4 weights
    dtype: ActivationDtype = "bf16"  # weights, adapters, gradients, states and activations
    optimizer: Optimizer = "adamw"  # gpulab.activations.OPTIMIZERS
    optimizer_impl: OptimizerImpl = "fused"  # AdamW's step ("auto": foreach, as on CUDA)
    optimizer_paged: bool = False  # bitsandbytes paged states: CUDA unified memory
    optimizer_in_backward: bool = False  # each parameter stepped as its gradient is made
    activation_checkpointing: bool = True  # keep each layer's input, rebuild the layer
    activation_offloading: bool = False  # the kept inputs go to host memory (needs the above)
    lora_rank: PositiveInt | None = None  # r of each adapter (LoRA and QLoRA only)
    lora_alpha: PositiveFloat | None = None  # the adapters' scale; no effect on memory
    lora_targets: tuple[LoraTarget, ...] = ()  # the adapted projections of each layer
    lora_output: bool = False  # an adapter on the output head as well
    compile: bool = False  # torch.compile: the chunked loss keeps no fp32 log-softmax
    batch: PositiveInt = 2  # sequences per step
    seq_len: PositiveInt = 2048  # tokens per sequence (a packed row: several examples)
    packed: bool = True  # examples packed into full rows; no effect on memory here
    loss_chunks: PositiveInt = 1  # 1: the whole-vocabulary loss; >1: torchtune's chunked loss
    gradient_accumulation_steps: PositiveInt = 1  # >1: gradients live through the next pass

    def __post_init__(self) -> None:
        adapters = self.method != "full"
        if adapters and (self.lora_rank is None or not self.lora_targets):
            raise GpulabConfigError(
                f"method={self.method!r} needs lora_rank and lora_targets", "lora_rank"
            )
        if not adapters and (self.lora_rank is not None or self.lora_targets or self.lora_output):
            raise GpulabConfigError(
                "method='full' trains every weight: leave lora_rank, lora_targets and "
                "lora_output unset",
                "method",
            )
        if self.optimizer_in_backward and self.gradient_accumulation_steps > 1:
            raise GpulabConfigError(
                "optimizer_in_backward steps each gradient as it is made, so it cannot "
                f"accumulate {self.gradient_accumulation_steps} micro-batches; use 1",
                "gradient_accumulation_steps",
            )
        if self.activation_offloading and not self.activation_checkpointing:
            raise GpulabConfigError(
                "activation_offloading moves the checkpointed inputs: it needs "
                "activation_checkpointing=True",
                "activation_offloading",
            )

    @property
    def tokens(self) -> int:
        """Tokens in one step: batch x seq_len."""
        return self.batch * self.seq_len


@dataclass(frozen=True)
class FinetuneMemory:
    """Bytes of each part at a step's peak moment, and the paged states beside them."""

    base_weights: int  # the model's weights: dtype, or NF4 with scales (QLoRA)
    adapters: int  # LoRA's trainable weights (0 for a full fine-tune)
    optimizer: int  # optimizer states that PyTorch's allocator holds
    gradients: int  # gradients alive at the peak moment
    activations: int  # kept for the backward pass at the peak: inputs, a rebuilt layer, rotary
    loss: int  # logits, their gradients and the loss's fp32 tensors at the peak
    temporaries: int  # the optimizer step's, or QLoRA's dequantized matrix, at the peak
    paged: int  # optimizer states in CUDA unified memory, which the allocator does not count
    moment: str  # when the peak happens: the loss, a layer's backward or the optimizer step
    moments: tuple[tuple[str, int], ...] = ()  # each moment's tensors in bytes
    notes: tuple[str, ...] = field(default=(), compare=False)

    PARTS = (
        "base_weights",
        "adapters",
        "optimizer",
        "gradients",
        "activations",
        "loss",
        "temporaries",
    )

    @property
    def allocator_peak(self) -> int:
        """Peak bytes in PyTorch's allocator: what torch.cuda.max_memory_allocated reports."""
        return sum(getattr(self, p) for p in self.PARTS)

    @property
    def device_peak(self) -> int:
        """The allocator's peak plus the paged states, were all of them resident on the GPU."""
        return self.allocator_peak + self.paged

    def gib(self) -> dict[str, float]:
        """Each part, the paged states and both peaks, in GiB."""
        parts = {p: getattr(self, p) for p in (*self.PARTS, "paged")}
        peaks = {"allocator_peak": self.allocator_peak, "device_peak": self.device_peak}
        return {k: v / GIB for k, v in (parts | peaks).items()}


def _dense(spec: ModelSpec) -> None:
    if spec.is_moe or spec.attention_type == "mla":
        raise GpulabConfigError(
            f"spec={spec.name!r}: estimate_finetune counts dense decoders with ordinary "
            "attention; use memory.estimate_training for a mixture of experts or MLA",
            "spec",
        )


def _projections(spec: ModelSpec) -> dict[str, tuple[int, int]]:
    """(inputs, outputs) of each projection of a decoder layer."""
    h, f = spec.hidden_size, spec.intermediate_size
    q, kv = spec.n_heads * spec.head_dim, spec.n_kv_heads * spec.head_dim
    shapes = {"q": (h, q), "k": (h, kv), "v": (h, kv), "o": (q, h), "up": (h, f), "down": (f, h)}
    return shapes | ({"gate": (h, f)} if spec.gated_mlp else {})


@checked
def trainable_tensors(spec: ModelSpec, recipe: FinetuneRecipe) -> tuple[int, ...]:
    """Elements of each trainable matrix: every weight matrix and norm, or LoRA's A and B."""
    _dense(spec)
    shapes = _projections(spec)
    if recipe.method == "full":
        per_layer = [i * o for i, o in shapes.values()] + [spec.hidden_size] * 2
        heads = [spec.vocab_size * spec.hidden_size] * (1 if spec.tie_embeddings else 2)
        return (*heads, *per_layer * spec.n_layers, spec.hidden_size)
    missing = [t for t in recipe.lora_targets if t not in shapes]
    if missing:
        raise GpulabConfigError(f"{spec.name} has no {missing[0]} projection", "recipe")
    r = recipe.lora_rank
    narrowest = min(min(shapes[t]) for t in recipe.lora_targets)
    if r > narrowest:  # B @ A has no higher rank than the narrower side of its matrix
        raise GpulabConfigError(
            f"lora_rank={r} exceeds {narrowest}, the narrower side of an adapted projection",
            "lora_rank",
        )
    per_layer = [n for t in recipe.lora_targets for n in (r * shapes[t][0], shapes[t][1] * r)]
    output = [r * spec.hidden_size, spec.vocab_size * r] if recipe.lora_output else []
    return (*per_layer * spec.n_layers, *output)


def _layer_params(spec: ModelSpec, recipe: FinetuneRecipe, largest: bool = False) -> int:
    """Trainable parameters of one decoder layer (or its largest tensor): matrices and norms,
    or adapters."""
    shapes = _projections(spec)
    if recipe.method == "full":
        sizes = [i * o for i, o in shapes.values()] + [spec.hidden_size] * 2
    else:
        sizes = [recipe.lora_rank * n for t in recipe.lora_targets for n in shapes[t]]
    return max(sizes) if largest else sum(sizes)


def _layer_shares(spec: ModelSpec, recipe: FinetuneRecipe) -> tuple[int, int, int]:
    """(one layer's kept tensors, one checkpointed input, the terms kept once but the loss).

    Read off gpulab.activations.training_activation_bytes, which is affine in the number of
    layers: the difference one more layer makes, with and without checkpointing.
    """
    b, s, dt = recipe.batch, recipe.seq_len, recipe.dtype

    def act(layers: int, checkpointing: bool) -> int:
        shaped = dataclasses.replace(spec, n_layers=layers)
        return training_activation_bytes(shaped, b, s, dt, checkpointing)

    layer = act(2, False) - act(1, False)
    checkpoint_input = act(2, True) - act(1, True)
    once = act(1, False) - layer - loss_head_bytes(spec, recipe.tokens, dt)
    return layer, checkpoint_input, once


def _loss_terms(spec: ModelSpec, recipe: FinetuneRecipe, head_grad: int) -> tuple[int, int]:
    """(the loss's tensors at their widest, at the output head's backward), in bytes."""
    a, tokens, vocab = ACTIVATION_BYTES[recipe.dtype], recipe.tokens, spec.vocab_size
    if recipe.loss_chunks == 1:  # the whole-vocabulary loss, as estimate_training counts it
        return (
            tokens * vocab * 4 * _LOSS_BACKWARD_FP32,
            tokens * vocab * 4 * _HEAD_BACKWARD_FP32 + head_grad,
        )
    # torchtune's CEWithChunkedOutputLoss is widest when its forward ends: every chunk's
    # logits in dtype, and, unless compiled, every chunk's fp32 log-softmax (kept for the
    # backward) and the last chunk's fp32 copy (none in fp32, where .float() copies nothing).
    # Compiled, the upcast and the loss are one kernel that keeps only its input, the logits.
    # In the backward the logits' gradients, in dtype, replace them chunk by chunk and meet
    # the output head's weight gradient.
    widest = tokens * vocab * a
    if not recipe.compile:
        chunk = -(-tokens // recipe.loss_chunks)
        widest += tokens * vocab * 4 + (chunk * vocab * 4 if a < 4 else 0)
    return widest, tokens * vocab * a + head_grad


def _step_temporaries(recipe: FinetuneRecipe, tensors: tuple[int, ...], a: int) -> int:
    """Temporaries of the optimizer step (gpulab.activations.optimizer_step_bytes' rules)."""
    if recipe.optimizer != "adamw" or recipe.optimizer_impl == "fused":
        return 0
    if recipe.optimizer_in_backward:  # one parameter at a time
        return 2 * max(tensors) * a
    if recipe.optimizer_impl in ("foreach", "auto"):  # a copy of every state at once
        return sum(tensors) * a
    return 2 * max(tensors) * a  # for-loop: a root and a quotient of the largest tensor


@checked
def estimate_finetune(spec: ModelSpec, recipe: FinetuneRecipe) -> FinetuneMemory:
    """Peak memory of one fine-tuning step of `recipe` on a dense decoder, part by part."""
    _dense(spec)
    a = ACTIVATION_BYTES[recipe.dtype]
    tensors = trainable_tensors(spec, recipe)
    full = recipe.method == "full"
    if full:
        n_trainable = spec.n_params
    else:  # the adapters, as the course's LoRA arithmetic counts them, and the head's
        n_trainable = lora_params(spec, recipe.lora_rank, recipe.lora_targets)
        n_trainable += recipe.lora_rank * (spec.hidden_size + spec.vocab_size) * recipe.lora_output
    base = weight_bytes(spec, "nf4" if recipe.method == "qlora" else recipe.dtype)
    adapters = 0 if full else n_trainable * a
    per_param = OPTIMIZERS[recipe.optimizer](a)
    states = int(n_trainable * per_param)
    small = sum(n for n in tensors if n < PAGED_MIN_ELEMENTS)
    paged = int((n_trainable - small) * per_param) if recipe.optimizer_paged else 0
    resident = base + adapters + states - paged

    # gradients: made layer by layer from the top, or one tensor's at a time when each is
    # stepped and freed as it is made (the optimizer in the backward pass)
    grads_all = n_trainable * a
    early = grads_all if recipe.gradient_accumulation_steps > 1 else 0  # earlier micro-batches
    head_grad = spec.vocab_size * spec.hidden_size * a if full else 0
    if recipe.lora_output:
        head_grad = spec.vocab_size * recipe.lora_rank * a
    loss_backward, head_backward = _loss_terms(spec, recipe, head_grad)
    if recipe.optimizer_in_backward:  # a layer's largest, while it is being stepped
        top_grads = bottom_grads = _layer_params(spec, recipe, largest=True) * a
    else:  # the head's first; at the bottom layer, all but that layer's and the embedding's
        top_grads = head_grad
        embedding = spec.vocab_size * spec.hidden_size if full and not spec.tie_embeddings else 0
        bottom_grads = grads_all - (_layer_params(spec, recipe) + embedding) * a

    # activations: every layer's kept tensors, or each layer's input and one layer rebuilt
    layer, checkpoint_input, once = _layer_shares(spec, recipe)
    if not full:  # frozen norm weights keep no normalised values; each A keeps its output
        adapted = recipe.lora_rank * len(recipe.lora_targets) - 2 * spec.hidden_size
        layer += recipe.tokens * adapted * a
    if recipe.activation_offloading:
        kept = checkpoint_input  # the layer in flight; the others wait in host memory
    elif recipe.activation_checkpointing:
        kept = spec.n_layers * checkpoint_input
    else:
        kept = spec.n_layers * layer
    bottom = checkpoint_input if recipe.activation_checkpointing else layer
    rebuilt = layer if recipe.activation_checkpointing else 0
    # a layer's backward also holds the gradients flowing through its MLP, two of the widest
    # at once (measured: tests/unit/test_finetune.py)
    rebuilt += 2 * recipe.tokens * spec.intermediate_size * a

    # temporaries: the optimizer's step; QLoRA's linear_nf4 dequantizes one matrix at a time
    step = _step_temporaries(recipe, tensors, a)
    dequantized = 0
    if recipe.method == "qlora":
        dequantized = max(i * o for i, o in _projections(spec).values()) * a
    in_backward = max(dequantized, step if recipe.optimizer_in_backward else 0)

    # the final RMSNorm's kept tensors are freed once its backward has run, before any layer's
    after_norm = once - norm_kept_bytes(spec, recipe.tokens, recipe.dtype)

    # (moment, gradients, activations, loss, temporaries) at each candidate for the peak; in
    # the backward pass activations shrink as gradients grow, so its two ends bound the rest
    candidates = [
        ("loss", early, kept + once, max(loss_backward, head_backward), 0),
        (
            "top layer's backward",
            max(early, top_grads),
            kept + rebuilt + after_norm,
            0,
            in_backward,
        ),
        (
            "bottom layer's backward",
            max(early, bottom_grads),
            bottom + rebuilt + after_norm,
            0,
            in_backward,
        ),
    ]
    if not recipe.optimizer_in_backward:  # tied embeddings: a copy of their gradient at the end
        tied_copy = head_grad if full and spec.tie_embeddings else 0
        candidates.append(("optimizer step", grads_all, 0, 0, max(step, tied_copy)))
    moments = tuple((c[0], resident + sum(c[1:])) for c in candidates)
    moment, grads, acts, loss, temporaries = max(candidates, key=lambda c: sum(c[1:]))
    notes = [
        f"{n_trainable / 1e6:.1f}M trainable parameters; {per_param:.2f} bytes of "
        f"{recipe.optimizer} state each",
    ]
    if paged:
        notes.append(
            f"{paged / GIB:.2f} GiB of paged optimizer states in CUDA unified memory: outside "
            "PyTorch's allocator, moved to host memory when the GPU runs short"
        )
    return FinetuneMemory(
        base_weights=base,
        adapters=adapters,
        optimizer=states - paged,
        gradients=grads,
        activations=acts,
        loss=loss,
        temporaries=temporaries,
        paged=paged,
        moment=moment,
        moments=moments,
        notes=tuple(notes),
    )


# ---------------------------------------------------------------- beside published figures

# Each lever a recipe may pull: its name on the page, and the settings that release it.
LEVERS = {
    "activation_checkpointing": (
        "no activation checkpointing",
        {"activation_checkpointing": False, "activation_offloading": False},
    ),
    "optimizer_in_backward": (
        "optimizer step after the backward",
        {"optimizer_in_backward": False},
    ),
    "optimizer_paged": ("paged states as ordinary tensors", {"optimizer_paged": False}),
    "compile": ("the chunked loss not compiled", {"compile": False}),
    "loss_chunks": ("the whole-vocabulary loss", {"loss_chunks": 1}),
    "method": ("bf16 base weights (LoRA)", {"method": "lora"}),
}


def _pulls(recipe: FinetuneRecipe, lever: str) -> bool:
    """Whether the recipe pulls this lever (compile matters here only to a chunked loss)."""
    if lever == "method":
        return recipe.method == "qlora"
    if lever == "compile":
        return recipe.compile and recipe.loss_chunks > 1
    if lever == "loss_chunks":
        return recipe.loss_chunks > 1
    return bool(getattr(recipe, lever))


@checked
def lever_effects(spec: ModelSpec, recipe: FinetuneRecipe) -> tuple[tuple[str, int], ...]:
    """The allocator's peak, in bytes, with each lever the recipe pulls released in turn."""
    out = []
    for lever, (label, released) in LEVERS.items():
        if _pulls(recipe, lever):
            other = dataclasses.replace(recipe, **released)
            out.append((label, estimate_finetune(spec, other).allocator_peak))
    return tuple(out)


@dataclass(frozen=True)
class PublishedPeak:
    """A published training peak beside the estimate for its model and recipe."""

    row: MemoryFigure  # the published figure, its settings and source
    recipe: FinetuneRecipe  # the row's settings as a recipe
    estimate: FinetuneMemory  # estimate_finetune for the row's model and recipe

    @property
    def published_bytes(self) -> float:
        """The published figure in bytes (GiB x 2**30)."""
        return self.row.figure * GIB

    @property
    def gap(self) -> float:
        """Estimated allocator peak over the published figure, less one (0.05: 5% above)."""
        return self.estimate.allocator_peak / self.published_bytes - 1


@checked
def compare_published(rows: tuple[MemoryFigure, ...] | None = None) -> list[PublishedPeak]:
    """Each published training peak (default: the packaged ones) beside its estimate."""
    figures = published_memory.load() if rows is None else rows
    out = []
    for row in figures:
        if row.kind != "training":
            continue
        recipe = FinetuneRecipe(**row.settings)
        out.append(
            PublishedPeak(row, recipe, estimate_finetune(models.get(row.model_spec), recipe))
        )
    return out
