"""gpulab.parallel: memory per GPU and bytes per step, checked against hand-derived values."""

from __future__ import annotations

import pytest

from gpulab import links, memory, models, parallel, perf, serving
from gpulab.core.errors import GpulabConfigError
from gpulab.estimate.parallel import Strategy

LLAMA_70B = models.get("Llama-3-70B")
LLAMA_7B = models.get("Llama-2-7B")
TIED_1B = models.get("Llama-3.2-1B")  # tied embeddings: the head reuses the embedding
N70 = LLAMA_70B.n_params


def test_one_gpu_data_parallel_is_chapter_2s_estimate():
    """With one GPU nothing is split: every part equals memory.estimate_training's."""
    for ckpt in (False, True):
        got = parallel.memory_per_gpu(
            LLAMA_7B,
            Strategy("DP"),
            n_gpus=1,
            global_batch=2,
            seq_len=1024,
            activation_checkpointing=ckpt,
        )
        want = memory.estimate_training(
            LLAMA_7B, batch=2, seq_len=1024, activation_checkpointing=ckpt
        )
        for part in ("weights", "gradients", "optimizer", "activations", "overhead"):
            assert getattr(got, part) == getattr(want, part), part


@pytest.mark.parametrize("spec", [LLAMA_70B, TIED_1B])
@pytest.mark.parametrize("p", [1, 2, 3, 8])
def test_pipeline_stages_hold_every_parameter_once(spec, p):
    """Stages split the layers; the first adds the embedding, the last the head (a tied model's
    last stage keeps a copy of the embedding as its head when it is not also the first)."""
    stages = parallel._stages(spec, p)
    assert sum(len(r) for r in stages) == spec.n_layers
    total = sum(
        parallel._stage_params(spec, r, i == 0, i == p - 1)[0] for i, r in enumerate(stages)
    )
    copy = spec.params_by_component()["embedding"] if spec.tie_embeddings and p > 1 else 0
    assert total == spec.n_params + copy


def test_zero_stages_shard_what_the_paper_says():
    """bf16 + AdamW: 2 + 2 + 12 bytes per parameter; ZeRO-1 shards the 12, ZeRO-2 also the
    gradients' 2, ZeRO-3 also the weights' 2 (plus two gathered units and one unit's gradient)."""
    kw = dict(n_gpus=8, global_batch=8, seq_len=2048, activation_checkpointing=True)
    dp, z1, z2, z3 = (
        parallel.memory_per_gpu(LLAMA_70B, Strategy("x", zero_stage=z), **kw) for z in range(4)
    )
    assert dp.optimizer == 12 * N70 and dp.gradients == 2 * N70 and dp.weights == 2 * N70
    assert z1.optimizer == -(-12 * N70 // 8) and z1.gradients == 2 * N70
    assert z2.gradients == -(-2 * N70 // 8) and z2.weights == 2 * N70
    unit = LLAMA_70B.params_by_component()["embedding"]  # larger than one layer (855.7M)
    assert z3.weights == -(-2 * N70 // 8) + 2 * unit * 2
    assert z3.gradients == -(-2 * N70 // 8) + unit * 2
    assert dp.activations == z1.activations == z2.activations == z3.activations
    assert dp.total > z1.total > z2.total > z3.total


def test_eight_80gb_gpus_are_not_enough_to_fully_fine_tune_70b():
    """16 bytes per parameter x 70.6B = 1.13 TB of states: more than 8 x 80 GB hold at all."""
    for s in parallel.standard_strategies(8):
        b = parallel.memory_per_gpu(LLAMA_70B, s, 8, 8, 4096, activation_checkpointing=True)
        assert b.total > 80e9, s.name
    assert 16 * N70 > 8 * 80e9


def test_tensor_parallel_splits_all_but_the_norms_and_the_activations():
    norms = LLAMA_70B.params_by_component()["norms"]
    b = parallel.memory_per_gpu(LLAMA_70B, Strategy("TP", tensor=8), 8, 8, 2048)
    assert b.weights == int(((N70 - norms) / 8 + norms) * 2)
    whole = memory.training_activation_bytes(LLAMA_70B, 8, 2048, "bf16")
    assert b.activations == int(whole / 8)


def test_first_pipeline_stage_keeps_a_whole_model_of_activations():
    """1F1B: stage 0 has p micro-batches in flight x L/p layers = L layers of one micro-batch,
    i.e. the whole model's activations for one sequence minus the loss's fp32 logits."""
    seq = 1024
    b = parallel.memory_per_gpu(LLAMA_70B, Strategy("PP", pipeline=8), 8, 16, seq)
    # the loss's tensors, which live on the last stage: bf16 logits, their fp32 copy and the fp32
    # log-softmax (2 + 4 + 4 bytes per vocabulary entry), the final RMSNorm's fp32 copy of its
    # input, normalised values and output (4 + 2 + 2 bytes per hidden unit), and the rotary cos
    # and sin (2 x head_dim in bf16 per position), counted once for the whole model
    head = seq * LLAMA_70B.vocab_size * (2 + 4 + 4) + seq * 8192 * (4 + 2 + 2) + 2 * seq * 128 * 2
    one_sequence = memory.training_activation_bytes(LLAMA_70B, 1, seq, "bf16")
    assert b.activations == one_sequence - head
    assert "stage 0" in b.notes[1]


def test_fewer_micro_batches_than_stages_fill_less_of_the_pipeline():
    many = parallel.memory_per_gpu(LLAMA_70B, Strategy("PP", pipeline=8), 8, 8, 1024)
    few = parallel.memory_per_gpu(LLAMA_70B, Strategy("PP", pipeline=8), 8, 2, 1024)
    assert few.activations < many.activations


def test_data_parallel_moves_two_gradients_per_rank_and_zero3_three():
    """Ring all-reduce: 2(n-1)/n x S per rank. ZeRO-1/2 (reduce-scatter + all-gather) move the
    same; ZeRO-3 gathers the parameters twice: 1.5 x (ZeRO paper, section 7.2)."""

    def volume(stage):
        moves = parallel.communication_per_step(
            LLAMA_70B, Strategy("x", zero_stage=stage), 8, 8, 4096
        )
        return sum(m.bytes_per_rank for m in moves)

    assert volume(0) == pytest.approx(2 * 7 / 8 * 2 * N70)
    assert volume(1) == pytest.approx(volume(0)) and volume(2) == pytest.approx(volume(0))
    assert volume(3) == pytest.approx(1.5 * volume(0))


def test_tensor_parallel_all_reduces_four_activations_per_layer():
    """Megatron-LM: 2 forward + 2 backward all-reduces of (batch, seq, hidden) per layer."""
    moves = parallel.communication_per_step(LLAMA_70B, Strategy("TP", tensor=8), 8, 8, 4096)
    assert len(moves) == 1 and moves[0].collective == "all-reduce"
    message = 8 * 4096 * 8192 * 2
    assert moves[0].nbytes == message and moves[0].calls == 4 * 80
    assert moves[0].bytes_per_rank == pytest.approx(320 * 2 * 7 / 8 * message)
    ckpt = parallel.communication_per_step(
        LLAMA_70B, Strategy("TP", tensor=8), 8, 8, 4096, activation_checkpointing=True
    )
    assert ckpt[0].calls == 6 * 80


def test_pipeline_sends_activations_forward_and_gradients_back():
    moves = parallel.communication_per_step(LLAMA_70B, Strategy("PP", pipeline=8), 8, 16, 4096)
    assert [m.collective for m in moves] == ["send/recv"]
    assert moves[0].bytes_per_rank == 2 * 16 * 4096 * 8192 * 2


def test_combined_strategy_adds_data_parallel_sync_over_its_shard():
    s = Strategy("TP=8 x DP=2", tensor=8)
    moves = parallel.communication_per_step(LLAMA_70B, s, 16, 16, 2048)
    grads = [m for m in moves if m.what == "gradients"]
    norms = LLAMA_70B.params_by_component()["norms"]
    assert grads[0].group == 2 and grads[0].nbytes == int(((N70 - norms) / 8 + norms) * 2)


def test_two_gpu_gradient_all_reduce_over_pcie_4_by_hand():
    """7B full gradients in bf16 over PCIe 4.0 x16: 2 x 6.74e9 bytes x 2(2-1)/2 / 31.5 GB/s."""
    moves = parallel.communication_per_step(LLAMA_7B, Strategy("DP"), 2, 2, 512)
    link = links.pcie(4, 16)
    want = 2 * LLAMA_7B.n_params * 1.0 / (16e9 * 128 / 130 / 8 * 16)
    assert parallel.step_communication_seconds(moves, link.bytes_per_s) == pytest.approx(want)
    assert parallel.step_communication_seconds(
        moves, link.bytes_per_s, latency_s=1e-3
    ) == pytest.approx(want + 1e-3)


def test_pcie_rates_per_direction():
    assert links.pcie(3).bytes_per_s == pytest.approx(15.754e9, rel=1e-4)
    assert links.pcie(4).bytes_per_s == pytest.approx(31.508e9, rel=1e-4)
    assert links.pcie(5).bytes_per_s == pytest.approx(63.015e9, rel=1e-4)
    assert links.pcie(4, 8).bytes_per_s == pytest.approx(links.pcie(4).bytes_per_s / 2)


def test_gpu_links_from_the_spec_table():
    assert links.nvlink("RTX 3090").bytes_per_s == 56.25e9  # 112.5 GB/s both ways
    assert links.nvlink("RTX 4090") is None
    assert links.gpu_link("RTX 4090").name == "PCIe 4.0 x16"
    assert links.gpu_link("RTX 3090", "pcie").name == "PCIe 4.0 x16"
    assert links.gpu_link("H100 SXM").bytes_per_s == 450e9
    with pytest.raises(GpulabConfigError, match="no NVLink"):
        links.gpu_link("RTX 4090", "nvlink")


def test_lora_parameters_by_hand():
    """r x (in + out) for q, k, v, o (4096 x 4096) and gate, up, down (4096 x 11008), 32 layers."""
    assert parallel.lora_params(LLAMA_7B, 16) == 32 * 16 * (4 * 8192 + 3 * (4096 + 11008))
    gqa = parallel.lora_params(LLAMA_70B, 8, ("k",))
    assert gqa == 80 * 8 * (8192 + 8 * 128)
    with pytest.raises(GpulabConfigError, match="mixture of experts"):
        parallel.lora_params(models.get("Mixtral-8x7B"))
    with pytest.raises(GpulabConfigError, match="targets"):
        parallel.lora_params(LLAMA_7B, 16, ("qkv",))


def test_layer_split_reads_at_one_cards_bandwidth():
    """Two equal cards one after the other: the single-card bound on the whole model."""
    two = serving.layer_split_tokens_per_s(LLAMA_70B, [936, 936], "q4_k_m")
    assert two == pytest.approx(perf.decode_tokens_per_s(LLAMA_70B, "q4_k_m", "bf16", 1, 4096, 936))
    mixed = serving.layer_split_tokens_per_s(LLAMA_70B, [936, 1008], "q4_k_m")
    harmonic = 2 / (1 / 936 + 1 / 1008)
    assert mixed == pytest.approx(
        perf.decode_tokens_per_s(LLAMA_70B, "q4_k_m", "bf16", 1, 4096, harmonic)
    )


def test_tensor_parallel_decode_adds_bandwidths_minus_all_reduces():
    one = serving.tensor_parallel_tokens_per_s(LLAMA_70B, 936, 1, 31.5e9, "q4_k_m")
    assert one == pytest.approx(perf.decode_tokens_per_s(LLAMA_70B, "q4_k_m", "bf16", 1, 4096, 936))
    free = serving.tensor_parallel_tokens_per_s(LLAMA_70B, 936, 2, 31.5e9, "q4_k_m")
    slow = serving.tensor_parallel_tokens_per_s(
        LLAMA_70B, 936, 2, 31.5e9, "q4_k_m", latency_s=20e-6
    )
    assert one < free < 2 * one and slow < free
    # 160 all-reduces of 16 KB cost 160 x 16384 / 31.5e9 s on top of the halved reads
    read = perf.decode_bytes_per_step(LLAMA_70B, "q4_k_m") / (2 * 936e9)
    assert 1 / free == pytest.approx(read + 160 * 8192 * 2 / 31.5e9)


def test_split_inference_divides_weights_and_cache():
    one = serving.split_inference(LLAMA_70B, 1, "q4_k_m")
    assert one.total == memory.estimate_inference(LLAMA_70B, "q4_k_m").total
    two = serving.split_inference(LLAMA_70B, 2, "q4_k_m")
    assert two.weights == -(-one.weights // 2) and two.activations == one.activations
    # An RTX 4090's tensors: 24,564 MiB reported, less a 0.5 GiB context and a 5% slack
    card = (24564 * 2**20 - 2**29) / 1.05
    # int4 (group 128): more than one card, less than two
    assert card < serving.split_inference(LLAMA_70B, 1, "int4").total
    assert serving.split_inference(LLAMA_70B, 2, "int4").total < card
    # Q4_K_M on two cards: llama.cpp's 512-token prefill chunks shrink the activations only
    chunked = serving.split_inference(LLAMA_70B, 2, "q4_k_m", prefill_chunk=512)
    assert chunked.total < two.total < card
    assert (chunked.weights, chunked.kv_cache) == (two.weights, two.kv_cache)
    assert chunked.activations == memory.inference_activation_bytes(LLAMA_70B, 1, 512)


def test_bubble_fraction():
    assert parallel.bubble_fraction(8, 32) == 7 / 32
    assert parallel.bubble_fraction(1, 1) == 0


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: Strategy("x", zero_stage=4), "zero_stage"),
        (lambda: Strategy("x", tensor=0), "tensor"),
        (lambda: parallel.memory_per_gpu(LLAMA_70B, Strategy("x", tensor=3), 3, 3), "tensor=3"),
        (lambda: parallel.memory_per_gpu(LLAMA_70B, Strategy("x", tensor=8), 12, 12), "n_gpus=12"),
        (lambda: parallel.memory_per_gpu(LLAMA_70B, Strategy("DP"), 8, 12), "global_batch=12"),
        (
            lambda: parallel.memory_per_gpu(LLAMA_70B, Strategy("x", pipeline=81), 81, 81),
            "pipeline=81",
        ),
        (
            lambda: parallel.memory_per_gpu(
                LLAMA_70B, Strategy("x", pipeline=2, micro_batch=3), 2, 4
            ),
            "micro_batch=3",
        ),
        (lambda: parallel.memory_per_gpu(LLAMA_70B, "DP", 8, 8), "strategy"),
        (lambda: parallel.memory_per_gpu({}, Strategy("DP"), 8, 8), "spec"),
        (
            lambda: parallel.communication_per_step(
                LLAMA_70B, Strategy("DP"), 8, 8, precision="fp8"
            ),
            "precision",
        ),
        (lambda: links.pcie(7), "gen=7"),
        (lambda: links.pcie(4, 3), "lanes=3"),
        (lambda: links.gpu_link("RTX 4090", "infiniband"), "kind"),
        (lambda: serving.layer_split_tokens_per_s(LLAMA_70B, []), "bandwidths_gbs"),
        (lambda: serving.layer_split_tokens_per_s(LLAMA_70B, [936, 0]), r"bandwidths_gbs\[1\]"),
        (lambda: parallel.step_communication_seconds([], 0), "bus_bytes_per_s"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(GpulabConfigError, match=field):
        call()
