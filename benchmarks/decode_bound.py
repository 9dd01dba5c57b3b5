"""How close does real decoding get to the bandwidth bound? (chapter 3)

For several small decoder sizes built with `transformers` from config dicts (random weights),
measures greedy decoding tokens/s with a KV cache on the device, and divides by the bound
`gpulab.perf.decode_tokens_per_s` computed from this device's *measured* bandwidth (a STREAM
triad on buffers larger than the caches). On a GPU it also reports the MFU of a training step.

    python benchmarks/decode_bound.py [--device auto] [--quick]
"""

from __future__ import annotations

from gpulab import (
    budget,
    generation,
    measure,
    peaks,
    perf,
    record,
    torch_models,
    units,
)
from gpulab.estimate.memory import ModelSpec
from gpulab.ui.tables import Table

SIZES = {  # hidden, layers, heads, kv heads, MLP width; vocab 32000 as in Llama-2
    "tiny (~20M)": (256, 4, 8, 2, 688),
    "small (~100M)": (768, 8, 12, 4, 2048),
    "medium (~400M)": (1024, 24, 16, 4, 2816),
}


def config_for(hidden: int, layers: int, heads: int, kv: int, ffn: int) -> dict:
    """A Llama-architecture config dict."""
    return dict(
        model_type="llama",
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        intermediate_size=ffn,
        vocab_size=32000,
        tie_word_embeddings=False,
        max_position_embeddings=4096,
    )


def measured_bandwidth(device, quick: bool) -> float:
    """Bytes/s of a triad on buffers beyond the caches (as large as the budget allows)."""
    nbytes = min(256 * 2**20 if quick else 1 << 30, budget.allowance(device) // 4)
    point = measure.bandwidth_point(device, nbytes, "triad", min_run_time=0.3)
    return point.rate


def main(argv: list[str] | None = None) -> int:
    """Measure each size and print measured vs bound."""
    args, device, report = record.start(__doc__.splitlines()[0], argv)
    bw = measured_bandwidth(device, args.quick)
    prompt, new = (64, 16) if args.quick else (256, 64)
    sizes = dict(list(SIZES.items())[:2]) if args.quick else SIZES
    rows = []
    for name, shape in sizes.items():
        cfg = config_for(*shape)
        spec = ModelSpec.from_hf_config(cfg, name)
        model = torch_models.build_model(cfg, device=device)
        result = generation.measure_decode(model, batch=1, prompt_len=prompt, new_tokens=new)
        bound = perf.decode_tokens_per_s(spec, "fp32", "fp32", 1, prompt + new // 2, bw / 1e9)
        step_bytes = perf.decode_bytes_per_step(spec, "fp32", "fp32", 1, prompt + new // 2)
        rows.append(
            {
                "model": name,
                "params": spec.n_params,
                "MB read per token": step_bytes / 1e6,
                "measured tokens/s": result.tokens_per_s,
                "bound tokens/s": bound,
                "measured / bound": result.tokens_per_s / bound,
            }
        )
        del model
    print(
        f"device {device}; measured bandwidth {units.format_rate(bw, 'B/s')} (triad, beyond "
        f"the caches); fp32 weights; batch 1, prompt {prompt}, {new} new tokens\n"
    )
    print(
        Table(
            rows,
            list(rows[0]),
            formats={
                "params": lambda v: f"{v / 1e6:.0f}M",
                "MB read per token": lambda v: f"{v:.0f}",
                "measured tokens/s": lambda v: f"{v:.1f}",
                "bound tokens/s": lambda v: f"{v:.1f}",
                "measured / bound": lambda v: f"{v:.0%}",
            },
        )
    )
    if device.type == "cuda":
        cfg = config_for(*SIZES["small (~100M)"])
        spec = ModelSpec.from_hf_config(cfg)
        model = torch_models.build_model(cfg, device=device)
        train = generation.train_steps(
            model, batch=8, seq_len=512, steps=10, precision="autocast-bf16"
        )
        peak, _, label = peaks.device_peak(report, str(device), "bf16")
        if peak:
            share = perf.mfu(train.tokens_per_s, spec, peak / 1e12, training=True, seq_len=512)
            print(
                f"\ntraining step, bf16 autocast, batch 8 x 512: "
                f"{train.tokens_per_s:,.0f} tokens/s, "
                f"MFU {share:.1%} of {units.format_rate(peak)} ({label})"
            )
    figures = {"bandwidth_bytes_per_s": bw, "prompt": prompt, "new_tokens": new, "rows": rows}
    print(record.stored_message(record.store("decode_bound", figures, device, report, args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
