"""Chapter 4's pictures, drawn at build time from the spec table and the model catalogue.

``PICTURES`` maps a picture's name to a function that draws it; the site renders each to
``_pictures/<name>.svg`` and the page shows it with a ``{figure}`` directive. The bounds come
from ``gpulab.estimate.basis``, the attention bytes from ``gpulab.bench.attention``'s count; the
article's rates are its own numbers (the fact-check's, which the ``ui`` layer may not import: a
unit test holds the two equal); this module only places them.

    from gpulab.ui import pictures_ch04
    fig = pictures_ch04.PICTURES["ch04-decode-bounds"]()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from gpulab.bench.attention import score_matrix_bytes
from gpulab.core.validate import PositiveInt, checked
from gpulab.estimate import basis
from gpulab.reference import models

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    from matplotlib.figure import Figure

__all__ = [
    "PICTURES",
    "BackendBar",
    "attention_bytes",
    "attention_memory",
    "backend_bars",
    "decode_bounds",
    "triton_grid",
    "triton_grid_for",
    "triton_lanes",
]

# The GPU tutorial's backend table for Llama-2-7B (claims 42 to 44): the card, the backend it
# names, its tokens/s (gpulab.course.claims_speed.ARTICLE_DECODE_TOK_S; test_pictures_ch04 checks)
ARTICLE_CARDS = (
    ("RTX 4090", "CUDA", 60),
    ("AMD Radeon RX 7900 XTX", "ROCm", 52),
    ("Apple M3 Ultra", "Metal", 38),
)
MODEL = "Llama-2-7B"
ATTENTION_MODEL = "Llama-2-7B"  # its heads and head width, one sequence, fp16
FP16_BYTES = 2  # bytes of one fp16 value (a definition)
SEQUENCES = tuple(2**k for k in range(9, 18))  # 512 to 131,072 tokens
# The diagram's case: a small array, so that every lane can be seen.
GRID_N, GRID_BLOCK = 40, 16


class BackendBar(NamedTuple):
    """One card of the article's table: its bounds and the article's rate, tokens/s."""

    card: str
    backend: str
    fp16_bound: float
    q4km_bound: float
    article: float


def backend_bars() -> list[BackendBar]:
    """The article's three cards: Llama-2-7B's decode bounds (basis.bound_tok_s) and its rates."""
    return [
        BackendBar(
            card,
            backend,
            float(basis.bound_tok_s(MODEL, "fp16", card)),
            float(basis.bound_tok_s(MODEL, "q4_k_m", card)),
            float(rate),
        )
        for card, backend, rate in ARTICLE_CARDS
    ]


def decode_bounds() -> Figure:
    """Each backend's decode bound beside the article's rate (ch04-decode-bounds)."""
    import matplotlib.pyplot as plt
    import numpy as np

    bars = backend_bars()
    x = np.arange(len(bars))
    width = 0.27
    fig, ax = plt.subplots(figsize=(7, 4.2))
    series = (
        ("bound, Q4_K_M", [b.q4km_bound for b in bars], "#9ecae1"),
        ("bound, FP16", [b.fp16_bound for b in bars], "#3182bd"),
        ("the article's rate", [b.article for b in bars], "#e6550d"),
    )
    for i, (label, values, color) in enumerate(series):
        drawn = ax.bar(x + (i - 1) * width, values, width, label=label, color=color)
        ax.bar_label(drawn, fmt="%.0f", fontsize=8)
    ax.set_xticks(x, [f"{b.card.removeprefix('AMD Radeon ')}\n({b.backend})" for b in bars])
    ax.set_xlabel("card (the backend the article ran)")
    ax.set_ylabel("tokens/s, one sequence")
    ax.set_title(f"{MODEL}: each card's decode bound and the article's rate")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


@checked
def attention_bytes(seq: PositiveInt) -> tuple[int, int]:
    """Bytes one layer of ATTENTION_MODEL's attention holds for one fp16 sequence of `seq`
    tokens: written out (the scores and the probabilities, two score matrices) and fused (the
    output, and one fp32 statistic per row that the backward pass keeps)."""
    spec = models.get(ATTENTION_MODEL)
    naive = 2 * score_matrix_bytes(1, spec.n_heads, seq, FP16_BYTES)
    fused = spec.n_heads * seq * (spec.head_dim * FP16_BYTES + 4)
    return naive, fused


def attention_memory() -> Figure:
    """Naive against fused attention memory, sequence against bytes, log-log
    (ch04-attention-memory)."""
    import matplotlib.pyplot as plt

    spec = models.get(ATTENTION_MODEL)
    naive, fused = zip(*(attention_bytes(s) for s in SEQUENCES), strict=True)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.loglog(SEQUENCES, naive, "o-", base=2, label="written out: scores and probabilities")
    ax.loglog(SEQUENCES, fused, "s-", base=2, label="fused (SDPA): the output and a row statistic")
    ax.set_xlabel("sequence length (tokens)")
    ax.set_ylabel("bytes per layer and sequence")
    ax.set_title(f"Attention memory, {ATTENTION_MODEL} ({spec.n_heads} heads), fp16")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


@checked
def triton_lanes(n: PositiveInt, block: PositiveInt) -> list[tuple[int, int]]:
    """Each program's (active, masked) lanes when `n` elements are cut into blocks of `block`."""
    programs = -(-n // block)
    return [(min(block, n - p * block), block - min(block, n - p * block)) for p in range(programs)]


def triton_grid() -> Figure:
    """The page's Triton grid: GRID_N elements in blocks of GRID_BLOCK (ch04-triton-grid)."""
    return triton_grid_for(GRID_N, GRID_BLOCK)


@checked
def triton_grid_for(n: PositiveInt, block: PositiveInt) -> Figure:
    """A Triton grid over an n-element array: blocks of `block` lanes, the last one masked."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    lanes = triton_lanes(n, block)
    fig, ax = plt.subplots(figsize=(7, 1.8 + 0.55 * len(lanes)))
    for pid, (active, _masked) in enumerate(lanes):
        for lane in range(block):
            offset = pid * block + lane
            on = lane < active
            ax.add_patch(
                Rectangle(
                    (offset, pid),
                    0.9,
                    0.8,
                    facecolor="#3182bd" if on else "white",
                    edgecolor="white" if on else "#999999",
                    hatch=None if on else "//",
                )
            )
        ax.text(-0.8, pid + 0.4, f"program {pid}", ha="right", va="center", fontsize=8)
    ax.axvline(n - 0.05, color="#e6550d", linestyle="--")
    ax.text(n + 0.2, -0.35, f"n = {n}", color="#e6550d", fontsize=8)
    ax.set_xlim(-8, len(lanes) * block + 1)
    ax.set_ylim(len(lanes) + 0.2, -0.6)
    ax.set_yticks([])
    ax.set_xlabel("element offset: program id × BLOCK + lane")
    ax.set_title(f"{len(lanes)} programs of BLOCK = {block} lanes over n = {n} elements")
    ax.legend(
        handles=[
            Patch(facecolor="#3182bd", label="lanes that load and store (offset < n)"),
            Patch(facecolor="white", edgecolor="#999999", hatch="//", label="masked: offset ≥ n"),
        ],
        frameon=False,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.35),
        ncol=2,
    )
    fig.tight_layout()
    return fig


PICTURES: dict[str, Callable[[], Figure]] = {
    "ch04-decode-bounds": decode_bounds,
    "ch04-attention-memory": attention_memory,
    "ch04-triton-grid": triton_grid,
}
