"""Chapter 6's candidate table: the columns a reader chooses by, read off each Candidate."""

from __future__ import annotations

import pytest

from gpulab import candidates, choose
from gpulab.core.errors import GpulabConfigError

PERSONAL = choose.Workload("Qwen2.5-7B", "q4_k_m", context_tokens=8192)
# a full fine-tune one H100 holds (Llama-3-8B's needs 160 GB: two cards)
FINE_TUNE = choose.Workload(
    "Llama-3.2-3B",
    "bf16",
    2048,
    concurrent_users=4,
    task="fine-tuning",
    activation_checkpointing=True,
)


def test_inference_rows_show_the_card_memory_bound_power_and_price():
    one = choose.evaluate(PERSONAL, "RTX 4090")
    two = choose.evaluate(PERSONAL, "RTX 3090", 2)
    table = candidates.candidate_table([one, two], "t")
    assert list(table.columns) == [
        "GPU",
        "fits",
        "needed (GB)",
        "offered (GB)",
        "decode bound (tokens/s per user)",
        "board power (W)",
        "launch price",
    ]
    text = str(table)
    # by hand: decimal GB, the count folded into the name, dollars with a thousands separator
    assert "RTX 4090" in text and "2 x RTX 3090" in text
    assert f"{one.memory_needed_bytes / 1e9:.1f}" in text and "$1,599" in text
    assert f"{one.decode_tokens_per_s_per_user:,.0f}" in text
    assert f"{2 * 350:,.0f}" in text  # two 350 W cards
    assert table.key_columns == 1


def test_fine_tuning_shows_the_training_bound_and_a_missing_price_as_none():
    h100 = choose.evaluate(FINE_TUNE, "H100 SXM")
    table = candidates.candidate_table([h100], "t", task="fine-tuning")
    assert "training bound (tokens/s)" in table.columns
    assert "decode bound (tokens/s per user)" not in table.columns
    row = str(table).splitlines()[-1]
    assert row.rstrip().endswith("none")  # a datacenter card has no list price
    assert f"{h100.training_tokens_per_s_bound:,.0f}" in row


def test_a_card_that_does_not_hold_the_workload_shows_no_speed():
    big = choose.Workload("Llama-3-70B", "bf16", context_tokens=8192)
    small = choose.evaluate(big, "RTX 4090")
    assert not small.fits and small.decode_tokens_per_s_per_user > 0  # the bound exists...
    row = str(candidates.candidate_table([small], "t")).splitlines()[-1]
    # ...but the table does not print it as a speed: the bound's cell says why instead
    cells = [c for c in row.split("  ") if c.strip()]
    assert [c.strip() for c in cells][:5] == [
        "RTX 4090",
        "no",
        f"{small.memory_needed_bytes / 1e9:.1f}",
        "24",
        "does not fit",
    ]


def test_an_unknown_task_is_named():
    """Refused in one line naming the parameter and the tasks there are."""
    with pytest.raises(GpulabConfigError, match="task='serving'.*inference, fine-tuning") as err:
        candidates.candidate_table([], "t", task="serving")
    assert err.value.field == "task" and "\n" not in str(err.value)


def test_what_is_not_a_list_of_candidates_is_refused_naming_it():
    for bad in (None, "RTX 4090", ["RTX 4090"]):
        with pytest.raises(GpulabConfigError) as err:
            candidates.candidate_table(bad, "t")
        assert err.value.field.startswith("candidates")
