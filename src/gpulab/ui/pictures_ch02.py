"""Chapter 2's pictures, drawn at build time from gpulab's data (book/02_vram.md shows them).

- ``ch02-kv-context``: the KV cache of one sequence against the context, for Llama-3-70B
  (grouped-query attention), the same model were every query head to keep its own keys and
  values, and DeepSeek-R1 (multi-head latent attention), beside what an RTX 4090 leaves a model.
- ``ch02-offload``: Llama-3-70B's decode bound on an RTX 4090 against the share of its layers
  left in system RAM, read by the CPU from DDR5 or copied over PCIe, with the split that fits.

Each function takes no argument and returns a matplotlib Figure; the numbers are
``gpulab.memory``'s and ``gpulab.basis``'s, as the page's figures are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpulab.core.units import GB
from gpulab.estimate import basis, memory
from gpulab.reference import links, models, specs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["CONTEXTS", "PICTURES", "kv_against_context", "offload_against_layers"]

# The contexts the KV picture spans, in tokens: 1K to Llama 3.1's 128K, doubling.
CONTEXTS = tuple(1024 * 2**i for i in range(8))
# The offload picture's case: the page's worked example (book/02_vram.md, "When it does not fit").
OFFLOAD_CASE = ("Llama-3-70B", "q4_k_m", "RTX 4090")
OFFLOAD_CONTEXT = 4096
OFFLOAD_RAM = "Core i9-13900K"  # dual-channel DDR5-5600, the page's desktop


def kv_series() -> dict[str, list[float]]:
    """GB of bf16 KV cache for one sequence at each of CONTEXTS, by the series' label."""
    llama70, r1 = models.get("Llama-3-70B"), models.get("DeepSeek-R1")
    mha = llama70.n_heads / llama70.n_kv_heads  # every query head with its own keys and values
    gqa = [memory.kv_cache_bytes(llama70, s, 1, "bf16") / GB for s in CONTEXTS]
    return {
        f"Llama-3-70B, GQA ({llama70.n_kv_heads} KV heads)": gqa,
        f"Llama-3-70B were it MHA ({llama70.n_heads} KV heads)": [g * mha for g in gqa],
        "DeepSeek-R1, MLA (latent cache)": [
            memory.kv_cache_bytes(r1, s, 1, "bf16") / GB for s in CONTEXTS
        ],
    }


def kv_against_context() -> Figure:
    """The KV cache of one sequence against the context: GQA, MHA and MLA, and a card's room."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    styles = ("-", "--", "-.")
    for (label, values), style in zip(kv_series().items(), styles, strict=True):
        ax.plot(CONTEXTS, values, style, marker="o", markersize=3, label=label)
    room = specs.get_gpu("RTX 4090").model_memory_bytes / GB
    ax.axhline(room, color="black", linestyle=":", linewidth=1, label="what an RTX 4090 leaves")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(CONTEXTS, [f"{s // 1024}K" for s in CONTEXTS])
    ax.set(
        xlabel="context (tokens)",
        ylabel="KV cache, one sequence (GB, bf16)",
        title="The KV cache grows with the context",
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def offload_series() -> tuple[list[float], dict[str, list[float]], float]:
    """(share of the layers in RAM, tokens/s bound by where the rest is read, the share that
    fits) for the page's case; the output head counts as the last layer, as llama.cpp's does."""
    model, fmt, gpu = OFFLOAD_CASE
    total = models.get(model).n_layers + 1  # the decoder layers, then the output head
    pcie = links.pcie(4, 16).bytes_per_s / 1e9
    shares = [(total - n) / total for n in range(total, -1, -1)]
    curves = {
        "the rest in DDR5-5600 RAM, computed by the CPU": [
            basis.offload_tok_s(model, fmt, gpu, OFFLOAD_CONTEXT, OFFLOAD_RAM, n)
            for n in range(total, -1, -1)
        ],
        "the rest copied over PCIe 4.0 x16": [
            basis.offload_tok_s(model, fmt, gpu, OFFLOAD_CONTEXT, pcie, n)
            for n in range(total, -1, -1)
        ],
    }
    fits = (total - basis.layers_that_fit(model, fmt, gpu, OFFLOAD_CONTEXT)) / total
    return shares, curves, fits


def offload_against_layers() -> Figure:
    """Decode bound against the share of the layers offloaded to RAM, and the split that fits."""
    import matplotlib.pyplot as plt

    shares, curves, fits = offload_series()
    fig, ax = plt.subplots(figsize=(7, 4))
    for (label, values), style in zip(curves.items(), ("-", "--"), strict=True):
        ax.plot([100 * s for s in shares], values, style, label=label)
    fit_label = "as many layers on the card as fit"
    ax.axvline(100 * fits, color="black", linestyle=":", linewidth=1, label=fit_label)
    ax.set_yscale("log")
    ax.set(
        xlabel="layers left in system RAM (% of the layers and the output head)",
        ylabel="tokens/s (upper bound)",
        title="Llama-3-70B, Q4_K_M, on an RTX 4090 with a 4K context",
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


PICTURES: dict[str, Callable[[], Figure]] = {
    "ch02-kv-context": kv_against_context,
    "ch02-offload": offload_against_layers,
}
