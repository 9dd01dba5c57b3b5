"""Hidden synchronisations (chapter 5): every way of reading the loss computes the same loss."""

import pytest

from gpulab import syncs
from gpulab.core.errors import GpulabConfigError

SMALL = syncs.SyncConfig(batch=8, width=16, steps=5)


def test_every_variant_gives_the_same_running_loss():
    totals = {v: syncs.run_variant(v, "cpu", SMALL) for v in syncs.VARIANTS}
    first = totals["on-device"]
    assert first > 0
    for variant, total in totals.items():
        assert total == pytest.approx(first, rel=1e-5), variant


def test_compare_times_each_variant():
    results = syncs.compare("cpu", SMALL, rounds=3)
    assert [r.variant for r in results] == list(syncs.VARIANTS)
    assert all(r.seconds_per_step > 0 for r in results)
    assert len({round(r.total_loss, 3) for r in results}) == 1


def test_print_variant_prints_nothing_to_the_reader(capsys):
    syncs.run_variant("print", "cpu", SMALL)
    assert capsys.readouterr().out == ""


def test_unknown_variant_and_bad_config_are_named():
    with pytest.raises(GpulabConfigError, match="variant='sync'"):
        syncs.run_variant("sync", "cpu", SMALL)
    with pytest.raises(GpulabConfigError, match="steps"):
        syncs.compare("cpu", syncs.SyncConfig(steps=0))


def test_unsynchronised_timing_on_the_cpu_matches_the_synchronised_one():
    import torch

    a = torch.randn(128, 128)
    unsynced, synced = syncs.unsynchronised_seconds(lambda: a @ a, "cpu", calls=20)
    assert unsynced > 0 and synced > 0
    with pytest.raises(GpulabConfigError, match="calls"):
        syncs.unsynchronised_seconds(lambda: None, "cpu", calls=0)


def _rows(base, item, spread):
    return [
        syncs.SyncResult("on-device", base, 1.0, "", spread),
        syncs.SyncResult("item", item, 1.0, "", spread),
    ]


def test_the_words_follow_the_measured_result():
    """Within the spreads: 'the same'; slower or faster beyond them: said so, with the ratio."""
    same = syncs.describe(_rows(1e-3, 1.05e-3, 0.04e-3), "cpu")
    assert "on cpu" in same and "1.05 times" in same and "cost the same here" in same
    slower = syncs.describe(_rows(1e-3, 1.5e-3, 0.05e-3), "cuda")
    assert "on cuda" in slower and "1.50 times" in slower and "the reads cost time" in slower
    faster = syncs.describe(_rows(1e-3, 0.5e-3, 0.05e-3), "cpu")
    assert "0.50 times" in faster and "faster" in faster and "cost the same" not in faster
    assert all(
        "\n" not in line and "`" not in line for line in (same, slower, faster)
    )  # a printed line
    # the rule is the spreads added: a 0.09 ms gap is within 2 x 0.05 ms
    assert "cost the same" in syncs.describe(_rows(1e-3, 1.09e-3, 0.05e-3), "cpu")
    assert "cost the same" not in syncs.describe(_rows(1e-3, 1.11e-3, 0.05e-3), "cpu")


def test_compare_reports_a_spread_for_every_variant():
    results = syncs.compare("cpu", SMALL, rounds=4)
    assert all(r.spread_per_step >= 0 for r in results)


def test_the_reads_are_counted_as_the_loop_makes_them():
    """One read after the loop for the on-device sum; one per step, plus that one, otherwise."""
    counted = {v: syncs.count_reads(v, "cpu", SMALL) for v in syncs.VARIANTS}
    assert counted["on-device"][1] == 1
    for variant in ("item", "cpu", "print"):
        assert counted[variant][1] == SMALL.steps + 1, variant
    rows = syncs.compare("cpu", SMALL, rounds=2)
    assert {r.variant: r.host_reads for r in rows} == {v: c[1] for v, c in counted.items()}


def test_torch_s_own_reads_are_not_the_loop_s():
    import torch

    counter = syncs._read_counter()
    x = torch.ones(3)
    with counter:
        torch.testing.assert_close(x, x)  # torch reads values itself, inside its own code
        x.sum().item()
    assert counter.calls == {"item": 1}
