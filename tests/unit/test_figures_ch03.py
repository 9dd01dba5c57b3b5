"""Chapter 3's figures (gpulab.course.figures_ch03): their form, the page's references to them,
and the most important ones against derivations by hand from published numbers.

The hand derivations take the model configs, spec-sheet figures and formula constants as typed
here, so a change in gpulab that moves a figure away from the published arithmetic fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.course import figures_ch03
from tools.checks import page_figures

PAGE = Path(page_figures.ROOT) / "book" / "03_inference_vs_training.md"
NOTEBOOK = "notebooks/03_inference_vs_training.ipynb"
RTX4090_GBS, H100_GBS, H200_GBS = 1008, 3350, 4800  # spec sheets (bus x data rate)
RTX4090_BF16, H100_BF16 = 165.2e12, 989.4e12  # dense BF16 with FP32 accumulation


@pytest.fixture(scope="module")
def fig():
    return figures_ch03.figures()


def test_fit_words_are_yes_or_no(fig):
    words = {k: v for k, v in fig.items() if k.endswith("_fits")}
    assert words and set(words.values()) <= {"yes", "no"}, words
    # sizes no card of the table can change: 70B at 4 bits on 24 GB, 7B in FP16 on 24 GB
    assert fig["llama70_int4_rtx4090_fits"] == "no"
    assert fig["llama7_fp16_rtx4090_fits"] == "yes"


def test_llama2_7b_parameters_from_its_config(fig):
    layers, hidden, ffn, vocab = 32, 4096, 11008, 32000  # meta-llama/Llama-2-7b-hf config.json
    per_layer = 4 * hidden**2 + 3 * hidden * ffn + 2 * hidden
    assert fig["llama7_params"] == layers * per_layer + 2 * vocab * hidden + hidden


def test_llama2_7b_fp16_decode_bound_on_an_rtx4090(fig):
    # every weight once in FP16, the input embedding one row, no KV cache
    params, hidden, vocab = 6_738_415_616, 4096, 32000
    read = (params - (vocab - 1) * hidden) * 2
    assert fig["llama7_fp16_read_gb"] == pytest.approx(read / 1e9, rel=1e-3)
    assert fig["llama7_fp16_rtx4090_bound_tok_s"] == pytest.approx(
        RTX4090_GBS * 1e9 / read, rel=2e-3
    )


def test_llama3_70b_int4_decode_bound_on_an_rtx4090(fig):
    # int4 group 128: 4 bits + a 16-bit scale per 128 weights; embedding and head stay 16-bit
    params, hidden, vocab = 70_553_706_496, 8192, 128256
    table = vocab * hidden
    norms = 80 * 2 * hidden + hidden
    quantized = params - 2 * table - norms
    read = quantized * (4 + 16 / 128) / 8 + (table + hidden + norms) * 2
    bound = RTX4090_GBS * 1e9 / read
    assert fig["llama70_int4_read_gb"] == pytest.approx(read / 1e9, rel=5e-3)
    assert fig["llama70_int4_rtx4090_bound_tok_s"] == pytest.approx(bound, rel=5e-3)
    assert fig["llama70_int4_h200_bound_tok_s"] == pytest.approx(H200_GBS * 1e9 / read, rel=5e-3)


def test_pretraining_time_of_a_7b_model(fig):
    # 6 FLOPs per matrix parameter per token; Llama-2-7B less its 32000 x 4096 input embedding
    matrices = 6_738_415_616 - 32000 * 4096 - (32 * 2 + 1) * 4096
    flops = 6 * matrices * 1e12
    days = flops / (0.4 * 8 * H100_BF16) / 86400
    assert fig["llama7_train_flops_e22"] == pytest.approx(flops / 1e22, rel=1e-3)
    assert fig["pretrain_days"] == pytest.approx(days, rel=1e-3)


def test_prefill_and_decode_of_llama3_8b_on_an_rtx4090(fig):
    matrices = 8_030_261_248 - 128256 * 4096 - (32 * 2 + 1) * 4096  # less embedding and norms
    attention = 4 * 32 * 4096 * 4096  # per token at a 4096-token context, 32 x 128 wide
    prefill = (2 * matrices + attention) * 4096 / RTX4090_BF16
    assert fig["prefill_rtx4090_s"] == pytest.approx(prefill, rel=2e-3)
    step = (2 * matrices + 2 * 4096) / (RTX4090_GBS * 1e9)  # every matrix, one embedding row
    assert fig["decode_rtx4090_ms"] == pytest.approx(step * 1e3, rel=2e-3)
    assert fig["ridge_4090_bf16"] == pytest.approx(RTX4090_BF16 / (RTX4090_GBS * 1e9))


def test_sequences_that_fit_beside_llama3_8b_on_an_h100(fig):
    weights = 8_030_261_248 * 2
    kv_per_token = 2 * 32 * 8 * 128 * 2  # K and V, layers, KV heads, head dim, BF16
    assert fig["llama8_kv_bytes_per_token"] == kv_per_token
    room = fig["h100_usable_gb"] * 1e9 - weights
    assert fig["h100_fit_2048"] == int(room // (kv_per_token * 2048))
    assert fig["h100_fit_8192"] == int(room // (kv_per_token * 8192))
    assert fig["h100_ridge_flop_per_byte"] == pytest.approx(H100_BF16 / (H100_GBS * 1e9))


def test_sd35_large_flops_per_image(fig):
    # MMDiT of SD 3.5 Large: 38 blocks, width 64 x 38, one weight set per modality
    depth, width = 38, 64 * 38
    image, text = (1024 // 8 // 2) ** 2, 77 + 256
    tokens = image + text
    per_token = depth * (
        2 * 12 * width**2 + 4 * tokens * width
    )  # its stream's matrices + attention
    per_image = per_token * tokens * 2 * 28  # guidance doubles the batch; 28 steps
    assert fig["sd35_image_tflop"] == pytest.approx(per_image / 1e12, rel=1e-3)
    assert fig["sd35_rtx4090_min_s"] == pytest.approx(per_image / RTX4090_BF16, rel=1e-3)
    assert fig["sd35_image_tokens"] == image and fig["sd35_patch_side"] ** 2 == image
    # the shapes account for the published 8.1B parameters
    assert fig["sd35_params_from_shapes_b"] == pytest.approx(8.1, rel=0.01)
    # the claimed 0.8 s on the GPU would need more than the peak, many times over
    assert fig["claim75_gpu_needs_x_peak"] == pytest.approx(
        per_image / 0.8 / RTX4090_BF16, rel=1e-3
    )
    assert fig["claim75_gpu_needs_x_peak"] > 1


def test_image_steps_fit_and_embedding_times(fig):
    assert fig["sd_step_s"] == pytest.approx(7.2 / 46)
    assert fig["sd_fixed_s"] == pytest.approx(0.8 - 4 * 7.2 / 46)
    assert fig["comfyui_ratio"] == pytest.approx(3.2 / 1.1)
    seconds = 50_000 * 2 * 110e6 * 512 / 100e12
    assert fig["embed_50000_gpu"] == f"{seconds:.0f} s"
    assert fig["embed_1000000_laptop"] == f"{1_000_000 * 2 * 110e6 * 512 / 0.25e12 / 3600:.0f} h"


def test_bandwidth_ratios_over_ram(fig):
    assert fig["ddr4_3200_gbs"] == pytest.approx(2 * 8 * 3200 / 1000)
    assert fig["rtx4090_vs_ddr5_ratio"] == pytest.approx(RTX4090_GBS / (2 * 8 * 5600 / 1000))
    assert fig["gtx1650_gddr6_ratio_hi"] == pytest.approx(192 / 51.2)


def test_sd35_medium_flops_per_image(fig):
    # MMDiT-X of SD 3.5 Medium: 24 blocks, width 64 x 24; blocks 0-12 add an attention over the
    # 4,096 image tokens alone (its own QKV and output, 4 w^2 weights)
    depth, width, dual = 24, 64 * 24, 13
    image, text = (1024 // 8 // 2) ** 2, 77 + 256
    tokens = image + text
    per_pass = depth * tokens * (2 * 12 * width**2 + 4 * tokens * width)
    per_pass += dual * image * (2 * 4 * width**2 + 4 * image * width)
    per_image = per_pass * 2 * 28  # diffusers' 28 guided steps
    assert fig["sd35m_image_tflop"] == pytest.approx(per_image / 1e12, rel=1e-9)
    assert fig["sd35m_rtx4090_min_s"] == pytest.approx(per_image / RTX4090_BF16, rel=1e-3)
    # the i9-13900K at its all-core turbo: 8 x 32 x 5.5 + 16 x 16 x 4.3 GFLOP/s
    assert fig["sd35m_cpu_min_s"] == pytest.approx(per_image / 2.5088e12, rel=1e-6)
    assert fig["claim75_medium_gpu_needs_x_peak"] > 1 and fig["claim75_medium_cpu_needs_x_peak"] > 1


def test_the_mmdit_flop_count_agrees_with_pytorchs_counter():
    """SD35Config.pass_flops against FlopCounterMode on diffusers' own SD3Transformer2DModel,
    small and random, with dual-attention blocks (MMDiT-X) and the math attention kernel, so
    that attention's matrix products are counted too."""
    import torch
    from diffusers import SD3Transformer2DModel
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from gpulab.course.derivations import SD35Config

    heads, head_dim, depth, dual, side, text = 4, 64, 4, 2, 32, 40
    model = SD3Transformer2DModel(
        sample_size=side,
        patch_size=2,
        in_channels=16,
        out_channels=16,
        num_layers=depth,
        attention_head_dim=head_dim,
        num_attention_heads=heads,
        joint_attention_dim=heads * head_dim,
        caption_projection_dim=heads * head_dim,
        pooled_projection_dim=64,
        pos_embed_max_size=side,
        dual_attention_layers=tuple(range(dual)),
        qk_norm="rms_norm",
    ).eval()
    inputs = dict(
        hidden_states=torch.randn(1, 16, side, side),
        encoder_hidden_states=torch.randn(1, text, heads * head_dim),
        pooled_projections=torch.randn(1, 64),
        timestep=torch.tensor([500.0]),
    )
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as count:
        model(**inputs)
    shapes = SD35Config(
        depth=depth,
        heads=heads,
        head_dim=head_dim,
        dual_attention_layers=dual,
        image_tokens=(side // 2) ** 2,
        text_tokens=text,
    )
    # the count leaves out the embeddings, the adaLN modulation and the output layer, and
    # counts the last block's text stream whole: within 2% here, less at full size
    assert sum(shapes.pass_flops()) == pytest.approx(count.get_total_flops(), rel=0.02)


def test_the_roofline_picture_places_prefill_and_decode_by_hand(fig):
    """The picture's points (gpulab.ui.pictures_ch03) and the page's intensities, against the
    FLOPs and bytes of Llama-3-8B in BF16 counted by hand from its config."""
    params, vocab, hidden = 8_030_261_248, 128256, 4096
    matrices = params - vocab * hidden - (32 * 2 + 1) * hidden  # less embedding and norms
    attention = 4 * 32 * 4096 * 4096  # per token at a 4096-token context, 32 x 128 wide
    kv = 2 * 32 * 8 * 128 * 2  # bytes per token of context: K and V, layers, KV heads, BF16
    per_token = 2 * matrices + attention
    prefill = per_token * 4096 / (params * 2 + kv * 4096)  # weights once, the prompt's cache
    # a decode step: every weight but the embedding rows no sequence looks up, and every cache
    read = {b: (params - (vocab - b) * hidden) * 2 + b * kv * 4096 for b in (1, 64)}
    decode = {b: b * per_token / read[b] for b in (1, 64)}
    assert fig["llama8_bf16_prefill_flop_per_byte"] == pytest.approx(prefill, rel=1e-9)
    assert fig["llama8_bf16_decode_flop_per_byte"] == pytest.approx(decode[1], rel=1e-9)
    assert fig["llama8_bf16_b64_decode_flop_per_byte"] == pytest.approx(decode[64], rel=1e-9)
    # on the RTX 4090's roofline: the prefill right of the ridge, both decode steps left of it
    ridge = RTX4090_BF16 / (RTX4090_GBS * 1e9)
    assert decode[1] < decode[64] < ridge < prefill


def test_the_roofline_picture_is_drawn_with_its_labels():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpulab.ui import pictures_ch03

    figure = pictures_ch03.PICTURES["ch03-roofline"]()
    ax = figure.axes[0]
    assert ax.get_title() and "FLOP" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 5 and any("prefill" in t for t in labels), labels
    assert ax.get_xscale() == ax.get_yscale() == "log"
    plt.close(figure)
