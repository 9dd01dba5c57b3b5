"""How close is gpulab.memory to the memory real models take? (chapter 2)

For several small real architectures (multi-head, grouped-query and mixture-of-experts;
tied and untied embeddings; sizes 10x apart) built with `transformers` from config dicts
(random weights, nothing downloaded), runs one inference prefill and one training step on
the device, measures memory per part (PyTorch's MemTracker; on a GPU also the allocator's
peak), and prints predicted vs measured with the error. Goal: every error within 10%.
Where `accelerate` is installed it prints accelerate's size estimate beside ours.

    python benchmarks/memory_accuracy.py [--device auto] [--quick]
"""

from __future__ import annotations

import argparse

import torch

from gpulab import hardware, memprobe, record, torch_models
from gpulab.estimate.memory import ModelSpec, estimate_inference, estimate_training
from gpulab.ui.tables import Table

GOAL = 10.0
MIB = 2**20

CONFIGS = {
    "llama GQA, untied": dict(model_type="llama", hidden_size=256, intermediate_size=688,
                              num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                              vocab_size=4000, tie_word_embeddings=False),
    "llama MHA, tied": dict(model_type="llama", hidden_size=512, intermediate_size=1376,
                            num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=8,
                            vocab_size=8000, tie_word_embeddings=True),
    "qwen2 GQA, qkv bias": dict(model_type="qwen2", hidden_size=384, intermediate_size=1024,
                                num_hidden_layers=4, num_attention_heads=6, num_key_value_heads=2,
                                vocab_size=6000, tie_word_embeddings=True),
    "phi3 MHA, fused qkv": dict(model_type="phi3", hidden_size=384, intermediate_size=1024,
                                num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=6,
                                vocab_size=5000, tie_word_embeddings=False, pad_token_id=0),
    "mixtral MoE, 4 experts top-2": dict(model_type="mixtral", hidden_size=256, intermediate_size=512,
                                         num_hidden_layers=2, num_attention_heads=8,
                                         num_key_value_heads=2, num_local_experts=4,
                                         num_experts_per_tok=2, vocab_size=4000),
    "llama GQA, 10x larger": dict(model_type="llama", hidden_size=768, intermediate_size=2048,
                                  num_hidden_layers=6, num_attention_heads=12, num_key_value_heads=4,
                                  vocab_size=16000, tie_word_embeddings=False),
}


def accelerate_estimate(config: dict) -> int | None:
    """accelerate's total size of the model's parameters in fp32, on empty weights; None if absent."""
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
    infer_pred = estimate_inference(spec, weights="fp32", kv_cache="fp32", batch=batch,
                                    seq_len=seq_len, activations="fp32", device=dev)
    infer_meas = memprobe.measure_inference(torch_models.build_model(config, device=device), batch, seq_len)
    train_pred = estimate_training(spec, precision="fp32", optimizer="adamw", batch=batch,
                                   seq_len=seq_len, device=dev)
    train_meas = memprobe.measure_training(torch_models.build_model(config, device=device), batch, seq_len)
    out = []
    for mode, pred, meas in (("inference", infer_pred, infer_meas), ("training", train_pred, train_meas)):
        for row in memprobe.compare(pred, meas):
            out.append({"model": name, "params": spec.n_params, "mode": mode} | row)
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure every configuration and print the table and the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    record.add_arguments(parser)
    args = parser.parse_args(argv)
    device = hardware.pick_device(args.device)
    report = hardware.detect()
    batch, seq_len = (2, 128) if args.quick else (4, 256)
    rows = []
    for name, config in CONFIGS.items():
        rows += rows_for(name, config, device, batch, seq_len)
        torch.cuda.empty_cache() if device.type == "cuda" else None
    print(f"device {device}; fp32 weights, KV cache and activations; batch {batch}, "
          f"sequence {seq_len}; AdamW for training\n")
    fmt = {"predicted": lambda v: f"{v / MIB:.2f} MiB", "measured": lambda v: f"{v / MIB:.2f} MiB",
           "params": lambda v: f"{v / 1e6:.2f}M",
           "error %": lambda v: "-" if v is None else f"{v:+.1f}%"}
    print(Table(rows, ["model", "params", "mode", "part", "predicted", "measured", "error %"], formats=fmt))
    parts = [r for r in rows if r["error %"] is not None and r["part"] != "peak (tensors)"]
    totals = [r for r in rows if r["part"] == "peak (tensors)"]
    worst = max(parts, key=lambda r: abs(r["error %"]))
    print(f"\nparts within {GOAL:.0f}%: {sum(abs(r['error %']) <= GOAL for r in parts)} of {len(parts)}; "
          f"worst: {worst['model']}, {worst['mode']}, {worst['part']} {worst['error %']:+.1f}%")
    print(f"peaks within {GOAL:.0f}% of the measured peak: "
          f"{sum(abs(r['error %']) <= GOAL for r in totals)} of {len(totals)} "
          "(Breakdown.peak; Breakdown.total, the sum of every part, is the upper bound)")
    acc = [(name, accelerate_estimate(cfg), ModelSpec.from_hf_config(cfg).n_params * 4)
           for name, cfg in CONFIGS.items()]
    if acc[0][1] is not None:
        print()
        print(Table([{"model": n, "accelerate": a, "gpulab": g} for n, a, g in acc],
                    ["model", "accelerate", "gpulab"],
                    formats={"accelerate": lambda v: f"{v / MIB:.2f} MiB",
                             "gpulab": lambda v: f"{v / MIB:.2f} MiB"},
                    title="fp32 weights: accelerate's calculate_maximum_sizes (empty weights) vs gpulab"))
    figures = {"batch": batch, "seq_len": seq_len, "rows": rows}
    print(record.stored_message(record.store("memory_accuracy", figures, device, report, args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
