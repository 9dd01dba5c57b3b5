"""How close is gpulab.memory to the memory real models take? (chapter 2)

For several small real architectures (multi-head, grouped-query and mixture-of-experts;
tied and untied embeddings; sizes 10x apart) built with `transformers` from config dicts
(random weights, nothing downloaded), runs one inference prefill and one training step on
the device, measures memory per part (PyTorch's MemTracker; on a GPU also the allocator's
peak), and prints predicted vs measured with the error. Goal: every error within 10%.
Where `accelerate` is installed it prints accelerate's size estimate beside ours.

A second table measures whole settings three ways, as issue 14 asked: a prefill with
`logits_to_keep=1`, a plain forward pass with every position's logits, and a steady-state
AdamW step (the second), each with SDPA and with eager attention. Each row has the
prediction before and after the activation model was reworked ("before": gpulab at commit
416b304 with the runtime's share taken off the estimates, i.e. tensors only), PyTorch's
MemTracker used directly (its global peak, model and optimizer passed to track_external),
the course's own probe (gpulab.memprobe, which is MemTracker with per-category maxima) and
the allocator's own count (torch.profiler's memory events on the CPU, max_memory_allocated
on a GPU), an instrument that does not go through MemTracker. Errors are against MemTracker.

    python benchmarks/memory_accuracy.py [--device auto] [--quick]
"""

from __future__ import annotations

import torch

from gpulab import memprobe, record, torch_models
from gpulab.estimate.memory import ModelSpec, estimate_inference, estimate_training
from gpulab.ui.tables import Table

GOAL = 10.0
MIB = 2**20

CONFIGS = {
    "llama GQA, untied": dict(
        model_type="llama",
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        vocab_size=4000,
        tie_word_embeddings=False,
    ),
    "llama MHA, tied": dict(
        model_type="llama",
        hidden_size=512,
        intermediate_size=1376,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=8,
        vocab_size=8000,
        tie_word_embeddings=True,
    ),
    "qwen2 GQA, qkv bias": dict(
        model_type="qwen2",
        hidden_size=384,
        intermediate_size=1024,
        num_hidden_layers=4,
        num_attention_heads=6,
        num_key_value_heads=2,
        vocab_size=6000,
        tie_word_embeddings=True,
    ),
    "phi3 MHA, fused qkv": dict(
        model_type="phi3",
        hidden_size=384,
        intermediate_size=1024,
        num_hidden_layers=3,
        num_attention_heads=6,
        num_key_value_heads=6,
        vocab_size=5000,
        tie_word_embeddings=False,
        pad_token_id=0,
    ),
    "mixtral MoE, 4 experts top-2": dict(
        model_type="mixtral",
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        vocab_size=4000,
    ),
    "llama GQA, 10x larger": dict(
        model_type="llama",
        hidden_size=768,
        intermediate_size=2048,
        num_hidden_layers=6,
        num_attention_heads=12,
        num_key_value_heads=4,
        vocab_size=16000,
        tie_word_embeddings=False,
    ),
}


# Models whose MLP has one fused gate_up matrix (inference_activation_bytes' fused_mlp).
FUSED_MLP = {"phi3"}
SETTINGS = {
    "prefill": "prefill, logits_to_keep=1",
    "forward": "forward, all logits",
    "train": "AdamW step (2nd)",
}


def accelerate_estimate(config: dict) -> int | None:
    """accelerate's total size of the model's fp32 parameters, on empty weights; None if absent."""
    try:
        from accelerate import init_empty_weights
        from accelerate.utils import calculate_maximum_sizes
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError:
        return None
    cfg = dict(config)
    hf = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    with init_empty_weights():
        model = AutoModelForCausalLM.from_config(hf)
    total, _ = calculate_maximum_sizes(model)
    return int(total)


def rows_for(name: str, config: dict, device, batch: int, seq_len: int) -> list[dict]:
    """Predicted vs measured rows for one configuration, inference and training."""
    spec = ModelSpec.from_hf_config(config, name)
    dev = device.type
    infer_pred = estimate_inference(
        spec,
        weights="fp32",
        kv_cache="fp32",
        batch=batch,
        seq_len=seq_len,
        activations="fp32",
        device=dev,
        fused_mlp=config["model_type"] in FUSED_MLP,
    )
    infer_meas = memprobe.measure_inference(
        torch_models.build_model(config, device=device), batch, seq_len
    )
    train_pred = estimate_training(
        spec, precision="fp32", optimizer="adamw", batch=batch, seq_len=seq_len, device=dev
    )
    train_meas = memprobe.measure_training(
        torch_models.build_model(config, device=device), batch, seq_len
    )
    out = []
    for mode, pred, meas in (
        ("inference", infer_pred, infer_meas),
        ("training", train_pred, train_meas),
    ):
        for row in memprobe.compare(pred, meas):
            out.append({"model": name, "params": spec.n_params, "mode": mode} | row)
    return out


# ---------------------------------------------------------------- the second measurement path


def before_prediction(spec: ModelSpec, setting: str, batch: int, seq_len: int) -> int:
    """Peak tensors (fp32) as gpulab predicted them at commit 416b304, tensors only.

    A frozen copy of that version's activation formulas, kept to report the change: inference
    added one layer's widest point (2h + 4 ffn per token) and the logits in fp32; training kept
    9h + 2 kv + 2 head_dim + 4 ffn per layer and token and peaked at the larger of (every
    activation + the head's gradient) and (every gradient, + a copy when tied).
    """
    a, tokens, h = 4, batch * seq_len, spec.hidden_size
    kv_width = spec.n_kv_heads * spec.head_dim
    ffn_width = (
        (spec.experts_per_token + spec.n_shared_experts) * spec.moe_intermediate_size
        if spec.is_moe
        else spec.intermediate_size
    )
    ffn = (4 if spec.gated_mlp else 2) * ffn_width
    weights = spec.n_params * a
    if setting != "train":
        dispatch = 4 * h if spec.is_moe else 0
        rows = batch if setting == "prefill" else tokens
        act = tokens * (2 * h + ffn + dispatch) * a + rows * spec.vocab_size * 4
        kv = 2 * spec.n_layers * kv_width * tokens * a
        return weights + kv + act
    moe = 2 * spec.experts_per_token * h + 2 * spec.n_routed_experts if spec.is_moe else 0
    per_layer = (
        tokens * (9 * h + 2 * kv_width + 2 * spec.head_dim + ffn + moe) * a
        + tokens * spec.n_heads * 4
    )
    act = spec.n_layers * per_layer + tokens * spec.vocab_size * 8
    parts = spec.params_by_component()
    head_grad = (parts["lm_head"] or parts["embedding"]) * a
    grads, states = weights, 2 * weights
    return (
        weights + states + max(act + head_grad, grads + (head_grad if spec.tie_embeddings else 0))
    )


def after_prediction(
    spec: ModelSpec,
    setting: str,
    batch: int,
    seq_len: int,
    attention: str,
    device: str,
    fused_mlp: bool,
) -> int:
    """Peak tensors (fp32) as gpulab predicts them now."""
    if setting == "train":
        return estimate_training(
            spec,
            precision="fp32",
            optimizer="adamw",
            batch=batch,
            seq_len=seq_len,
            attention=attention,
            device=device,
        ).peak
    return estimate_inference(
        spec,
        weights="fp32",
        kv_cache="fp32",
        batch=batch,
        seq_len=seq_len,
        activations="fp32",
        logits="last" if setting == "prefill" else "all",
        attention=attention,
        fused_mlp=fused_mlp,
        device=device,
    ).total


def _workload(config: dict, setting: str, attention: str, device, batch: int, seq_len: int):
    """A fresh model, its optimizer (training) and the call to measure, once warmed up."""
    model = torch_models.build_model(config, device=device, attn_implementation=attention)
    ids = torch.randint(0, config["vocab_size"], (batch, seq_len), device=device)
    if setting == "train":
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step():
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        step()  # the first step creates the optimizer's states
        return model, opt, step

    def forward():
        with torch.inference_mode():
            model(input_ids=ids, use_cache=True, logits_to_keep=1 if setting == "prefill" else 0)

    return model, None, forward


def memtracker_peak(fn, *track) -> int:
    """MemTracker as its documentation uses it: track_external, then the global peak's Total."""
    from torch.distributed._tools.mem_tracker import MemTracker

    tracker = MemTracker()
    tracker.track_external(*track)
    with tracker:
        fn()
    return max(snap["Total"] for snap in tracker.get_tracker_snapshot("peak").values())


def setting_row(
    name: str, config: dict, setting: str, attention: str, device, batch: int, seq_len: int
) -> dict:
    """One configuration in one setting: predictions before and after, three measurements."""
    spec = ModelSpec.from_hf_config(config, name)
    fused = config["model_type"] in FUSED_MLP
    model, opt, fn = _workload(config, setting, attention, device, batch, seq_len)
    track = (model,) if opt is None else (model, opt)
    mt = memtracker_peak(fn, *track)
    alloc = memprobe.allocator_peak_bytes(fn, device, *track)
    probe_model = torch_models.build_model(config, device=device, attn_implementation=attention)
    probe = (
        memprobe.measure_training(probe_model, batch, seq_len)
        if setting == "train"
        else memprobe.measure_inference(
            probe_model, batch, seq_len, logits="last" if setting == "prefill" else "all"
        )
    ).peak
    before = before_prediction(spec, setting, batch, seq_len)
    after = after_prediction(spec, setting, batch, seq_len, attention, device.type, fused)
    return {
        "model": name,
        "setting": SETTINGS[setting],
        "attention": attention,
        "before": before,
        "after": after,
        "MemTracker": mt,
        "probe": probe,
        "allocator": alloc,
        "error before %": 100.0 * (before - mt) / mt,
        "error %": 100.0 * (after - mt) / mt,
        "alloc vs MT %": 100.0 * (alloc - mt) / mt,
    }


def setting_rows(device, batch: int, seq_len: int, quick: bool) -> list[dict]:
    """Every configuration in every setting with SDPA; eager for the dense ones (one, quick)."""
    rows = []
    for name, config in CONFIGS.items():
        eager = name == "llama GQA, untied" if quick else config["model_type"] != "mixtral"
        for attention in ("sdpa", "eager") if eager else ("sdpa",):
            for setting in SETTINGS:
                rows.append(setting_row(name, config, setting, attention, device, batch, seq_len))
        torch.cuda.empty_cache() if device.type == "cuda" else None
    return rows


def print_settings(rows: list[dict]) -> None:
    """The second table and its summary."""
    mib = lambda v: f"{v / MIB:.2f}"  # noqa: E731
    pct = lambda v: f"{v:+.1f}%"  # noqa: E731
    print(
        Table(
            rows,
            [
                "model",
                "setting",
                "attention",
                "before",
                "after",
                "MemTracker",
                "probe",
                "allocator",
                "error before %",
                "error %",
                "alloc vs MT %",
            ],
            headers={
                "before": "predicted before MiB",
                "after": "predicted MiB",
                "MemTracker": "MemTracker MiB",
                "probe": "probe MiB",
                "allocator": "allocator MiB",
                "error before %": "err before",
                "error %": "err after",
                "alloc vs MT %": "alloc vs MT",
            },
            formats={
                "before": mib,
                "after": mib,
                "MemTracker": mib,
                "probe": mib,
                "allocator": mib,
                "error before %": pct,
                "error %": pct,
                "alloc vs MT %": pct,
            },
            title="Peak tensors by setting (fp32): predicted vs three measurements",
        )
    )
    worst_b = max(rows, key=lambda r: abs(r["error before %"]))
    worst_a = max(rows, key=lambda r: abs(r["error %"]))
    print(
        f"within {GOAL:.0f}% of MemTracker: before "
        f"{sum(abs(r['error before %']) <= GOAL for r in rows)} "
        f"of {len(rows)} (worst {worst_b['error before %']:+.1f}%: {worst_b['model']}, "
        f"{worst_b['setting']}, {worst_b['attention']}); after "
        f"{sum(abs(r['error %']) <= GOAL for r in rows)} of {len(rows)} "
        f"(worst {worst_a['error %']:+.1f}%: {worst_a['model']}, {worst_a['setting']}, "
        f"{worst_a['attention']})"
    )
    gap = max(rows, key=lambda r: abs(r["alloc vs MT %"]))
    print(
        f"the allocator's count vs MemTracker: at most {gap['alloc vs MT %']:+.2f}% "
        f"({gap['model']}, {gap['setting']}, {gap['attention']}); the probe vs MemTracker: at most "
        f"{max(abs(100.0 * (r['probe'] - r['MemTracker']) / r['MemTracker']) for r in rows):.2f}%"
    )


def main(argv: list[str] | None = None) -> int:
    """Measure every configuration and print the table and the summary."""
    args, device, report = record.start(__doc__.splitlines()[0], argv)
    batch, seq_len = (2, 128) if args.quick else (4, 256)
    rows = []
    for name, config in CONFIGS.items():
        rows += rows_for(name, config, device, batch, seq_len)
        torch.cuda.empty_cache() if device.type == "cuda" else None
    print(
        f"device {device}; fp32 weights, KV cache and activations; batch {batch}, "
        f"sequence {seq_len}; AdamW for training\n"
    )
    fmt = {
        "predicted": lambda v: f"{v / MIB:.2f} MiB",
        "measured": lambda v: f"{v / MIB:.2f} MiB",
        "params": lambda v: f"{v / 1e6:.2f}M",
        "error %": lambda v: "-" if v is None else f"{v:+.1f}%",
    }
    print(
        Table(
            rows,
            ["model", "params", "mode", "part", "predicted", "measured", "error %"],
            formats=fmt,
        )
    )
    parts = [r for r in rows if r["error %"] is not None and r["part"] != "peak (tensors)"]
    totals = [r for r in rows if r["part"] == "peak (tensors)"]
    worst = max(parts, key=lambda r: abs(r["error %"]))
    print(
        f"\nparts within {GOAL:.0f}%: "
        f"{sum(abs(r['error %']) <= GOAL for r in parts)} of {len(parts)}; "
        f"worst: {worst['model']}, {worst['mode']}, {worst['part']} {worst['error %']:+.1f}%"
    )
    print(
        f"peaks within {GOAL:.0f}% of the measured peak: "
        f"{sum(abs(r['error %']) <= GOAL for r in totals)} of {len(totals)} "
        "(Breakdown.peak; Breakdown.total, the sum of every part, is not a training step's bound:"
        " the optimizer step's temporaries are in no part)"
    )
    acc = [
        (name, accelerate_estimate(cfg), ModelSpec.from_hf_config(cfg).n_params * 4)
        for name, cfg in CONFIGS.items()
    ]
    if acc[0][1] is not None:
        print()
        print(
            Table(
                [{"model": n, "accelerate": a, "gpulab": g} for n, a, g in acc],
                ["model", "accelerate", "gpulab"],
                formats={
                    "accelerate": lambda v: f"{v / MIB:.2f} MiB",
                    "gpulab": lambda v: f"{v / MIB:.2f} MiB",
                },
                title=(
                    "fp32 weights: accelerate's calculate_maximum_sizes (empty weights) vs gpulab"
                ),
            )
        )
    print()
    settings = setting_rows(device, batch, seq_len, args.quick)
    print_settings(settings)
    figures = {"batch": batch, "seq_len": seq_len, "rows": rows, "settings": settings}
    print(record.stored_message(record.store("memory_accuracy", figures, device, report, args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
