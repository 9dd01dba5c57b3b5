"""Chapter 6's picture, drawn at build time from gpulab's data (book/06_choosing_hardware.md).

- ``ch06-scenario-memory``: the memory of the hardware guide's scenarios (one user of a 7B chat
  model, a company's 5 and 30 users, a full fine-tune of an 8B model), stacked by part (weights,
  KV cache, activations, gradients and optimizer states, the step's transients, the runtime's
  share), against the memory the driver reports for each card the guide names.

The function takes no argument and returns a matplotlib Figure; the numbers are
``gpulab.choose``'s, as the page's figures are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpulab.core.units import GB
from gpulab.estimate import choose
from gpulab.estimate.choose import Workload
from gpulab.reference import specs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PICTURES", "SCENARIOS", "scenario_memory", "scenario_stacks"]

# The hardware guide's scenarios (seed 003, section 5) and the cards it names for each, as the
# chapter notebook states them; the fourth scenario, renting, has no memory of its own.
SCENARIOS: dict[str, tuple[Workload, tuple[str, ...]]] = {
    "personal study: 1 user, Qwen2.5-7B Q4_K_M, 8K": (
        Workload("Qwen2.5-7B", "q4_k_m", 8192),
        ("RTX 4060 Ti 16GB", "RTX 5070 Ti", "RTX 4090"),
    ),
    "company: 5 users, Qwen2.5-7B int8, 8K": (
        Workload("Qwen2.5-7B", "int8", 8192, concurrent_users=5, prefill_batch=1),
        ("A10", "RTX 5090"),
    ),
    "company: 30 users, Qwen2.5-7B int8, 8K": (
        Workload("Qwen2.5-7B", "int8", 8192, concurrent_users=30, prefill_batch=1),
        ("A10", "RTX 5090"),
    ),
    "fine-tuning: Llama-3-8B, full, bf16 + AdamW": (
        Workload("Llama-3-8B", "bf16", 2048, 4, task="fine-tuning", activation_checkpointing=True),
        ("A100 40GB SXM", "A100 80GB SXM", "H100 SXM"),
    ),
}
# The stacked parts, bottom to top, with their colours (gpulab.plots' for the tensor parts).
PARTS = {
    "weights": "#1b9e77",
    "KV cache": "#d95f02",
    "activations": "#7570b3",
    "gradients + optimizer states": "#66a61e",
    "step transients": "#e6ab02",
    "CUDA context + allocator reserve": "#999999",
}


def scenario_stacks() -> dict[str, tuple[dict[str, float], dict[str, float]]]:
    """By scenario: (GB of each part, GB the driver reports for each named card). The tensors'
    parts are choose.evaluate's; the runtime's share is what a card takes on top of them
    (specs.CUDA_CONTEXT_BYTES and the allocator's reserve, specs.ALLOCATOR_SLACK), so a stack
    fits a card exactly when its tensors fit the card's model_memory_bytes."""
    out = {}
    for label, (workload, cards) in SCENARIOS.items():
        judged = choose.evaluate(workload, cards[0])
        b = judged.breakdown
        tensors = judged.memory_needed_bytes  # the peak: every part live at the worst moment
        runtime = tensors * specs.ALLOCATOR_SLACK + specs.CUDA_CONTEXT_BYTES
        parts = {
            "weights": b.weights,
            "KV cache": b.kv_cache,
            "activations": b.activations,
            "gradients + optimizer states": b.gradients + b.optimizer,
            "step transients": max(tensors - b.total, 0),
            "CUDA context + allocator reserve": runtime,
        }
        capacities = {c: specs.get_gpu(c).memory_bytes / GB for c in cards}
        out[label] = ({k: v / GB for k, v in parts.items()}, capacities)
    return out


def scenario_memory() -> Figure:
    """Each scenario's memory, stacked by part, against the reported memory of its cards."""
    import matplotlib.pyplot as plt

    stacks = scenario_stacks()
    fig, axes = plt.subplots(len(stacks), 1, figsize=(7.5, 1.5 * len(stacks) + 1.2))
    styles = ("--", ":", "-.")
    for ax, (label, (parts, cards)) in zip(axes, stacks.items(), strict=True):
        left = 0.0
        for part, value in parts.items():
            if value:
                ax.barh([0], [value], left=left, color=PARTS[part], label=part, height=0.6)
                left += value
        for (card, capacity), style in zip(cards.items(), styles, strict=False):
            ax.axvline(capacity, color="black", linestyle=style, linewidth=1.2, label=card)
        ax.set_yticks([])
        ax.set_xlim(0, 1.15 * max(left, *cards.values()))
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("memory (GB)")
        handles, names = ax.get_legend_handles_labels()
        lines = [(h, n) for h, n in zip(handles, names, strict=True) if n in cards]
        ax.legend(
            *zip(*lines, strict=True),
            loc="upper left",
            bbox_to_anchor=(1.01, 1.05),
            fontsize=7,
            frameon=False,
            title="cards (reported)",
            title_fontsize=7,
        )
    # one legend for the parts, under the panels: every panel colours them alike
    handles = {n: h for ax in axes for h, n in zip(*ax.get_legend_handles_labels(), strict=True)}
    shown = [p for p in PARTS if p in handles]
    fig.legend(
        [handles[p] for p in shown], shown, loc="lower center", ncol=3, fontsize=7, frameon=False
    )
    fig.suptitle("The guide's scenarios: what each needs against the cards it names")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


PICTURES: dict[str, Callable[[], Figure]] = {"ch06-scenario-memory": scenario_memory}
