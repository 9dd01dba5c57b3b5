"""A figure that needs a word gets one (issue 32): a share of peak above 100 % names the peak's
source, a timing whose blocks spread beyond the course's tolerance says the machine was busy, a
very low share says what was measured beside it, and a CPU's peak uses the highest clock the
machine reports, naming where it was read."""

from __future__ import annotations

import dataclasses

import pytest

from gpulab import measure, peaks, roofline, timing, units
from gpulab.machine import host
from gpulab.machine.report import CPUInfo, GPUInfo, HardwareReport, TorchInfo
from gpulab.ui.tables import Table


def report_with(cpu: CPUInfo | None = None, gpus=()) -> HardwareReport:
    """A hardware report with only the parts these tests read."""
    return HardwareReport(
        os="test",
        python="3",
        torch=TorchInfo(installed=False),
        cpu=cpu or CPUInfo("Test CPU", 2, 2, ["AVX2", "FMA"], max_frequency_mhz=2000.0),
        ram_total_bytes=None,
        ram_available_bytes=None,
        gpus=list(gpus),
        backend="cuda" if gpus else "cpu",
        in_colab=False,
        visible_devices={},
        nvidia_device_files=False,
        notes=[],
    )


# A 2-core AVX2 VM that exposes only /proc/cpuinfo's clock, as the build machine does.
VM = CPUInfo("AMD EPYC", 2, 2, ["AVX2", "FMA"], reported_frequency_mhz=2245.78)


def cpu_peak_of(cpu: CPUInfo, dtype: str = "fp32") -> float:
    peak, _, _ = peaks.device_peak(report_with(cpu), "cpu", dtype)
    return peak


# --------------------------------------------------------------------------- above 100 % of peak


def test_a_share_above_the_peak_from_the_nominal_clock_names_that_source():
    peak = cpu_peak_of(VM)
    assert peak == pytest.approx(2 * 2.24578e9 * 32)  # cores x GHz x 8 lanes x 2 FMA x 2, by hand
    share = roofline.percent_of_peak(1.22 * peak, peak)
    assert share == pytest.approx(122.0)
    assert "above 100% of the peak" in share.note
    assert "/proc/cpuinfo" in share.note and "nominal clock" in share.note
    assert "boosts higher" in share.note


def test_a_share_within_the_peak_gets_no_note():
    peak = cpu_peak_of(VM)
    share = roofline.percent_of_peak(0.8 * peak, peak)
    assert share == pytest.approx(80.0) and share.note is None
    assert roofline.percent_of_peak(1.0, None) is None


def test_above_a_peak_from_the_maximum_clock_the_note_blames_the_flops_per_cycle():
    cpu = dataclasses.replace(VM, sysfs_max_frequency_mhz=3700.0)
    share = roofline.percent_of_peak(1.22 * cpu_peak_of(cpu), cpu_peak_of(cpu))
    assert "sysfs cpuinfo_max_freq" in share.note and "3.70 GHz" in share.note
    assert "32 fp32 FLOP/cycle" in share.note and "nominal" not in share.note


def test_a_plain_number_as_peak_has_no_source_to_name():
    """A page's own arithmetic (TF32 against the fp32 peak: 800 %) is not flagged."""
    share = roofline.percent_of_peak(156.0, 19.5)
    assert share == pytest.approx(800.0) and share.note is None


def test_above_a_spec_sheet_peak_the_note_names_the_sheet_and_its_clock():
    gpu = GPUInfo(index=0, name="NVIDIA GeForce RTX 4090", memory_total_bytes=24564 * 1024**2)
    peak, _, label = peaks.device_peak(report_with(gpus=[gpu]), "cuda", "fp32")
    assert label == "RTX 4090 spec sheet" and peak.source == label
    note = roofline.percent_of_peak(1.1 * peak, peak).note
    assert "RTX 4090 spec sheet" in note and "boost clock" in note and "TF32" in note


def test_a_table_flags_the_share_in_its_cell_and_writes_the_note_once_under_it():
    peak = cpu_peak_of(VM)
    rows = [
        {"n": n, "peak %": roofline.percent_of_peak(f * peak, peak)}
        for n, f in ((256, 0.8), (512, 1.22), (1024, 1.3))
    ]
    table = Table(rows, formats={"peak %": ".0f %"})
    text = str(table).splitlines()
    assert text[2].split() == ["256", "80%"]
    assert text[3].split() == ["512", "122%¹"] and text[4].split() == ["1024", "130%¹"]
    assert len(text) == 6 and text[5].startswith("¹ above 100% of the peak")  # one note for both
    html = table._repr_html_()
    assert "122%<sup>1</sup>" in html and html.count('class="gpulab-table-note"') == 1
    assert "/proc/cpuinfo" in html.split("</table>")[1]  # the note sits under the table


# --------------------------------------------------------------------------- a busy machine


def test_a_timing_spread_beyond_the_tolerance_says_the_machine_was_busy():
    m = timing.Measurement("matmul", (1e-3, 1e-3, 1e-3, 1e-3, 2.4e-3), 5, 2, "cpu")
    assert m.spread == pytest.approx(2.4)  # slowest 2.4 ms over the median 1 ms
    assert timing.SPREAD_TOLERANCE < 2.4
    note = m.busy_note
    assert note.startswith("matmul: the slowest of 5 timed blocks took 2.4x the median")
    assert f"{timing.SPREAD_TOLERANCE:g}x" in note and "busy" in note


def test_a_timing_within_the_tolerance_gets_no_note():
    m = timing.Measurement("matmul", (1.0e-3, 1.1e-3, 0.9e-3, 1.2e-3, 1.0e-3), 5, 2, "cpu")
    assert m.spread == pytest.approx(1.2) and m.busy_note is None


def point(n: int, seconds: float, precision: str = "fp32", blocks=None) -> measure.RatePoint:
    """A measured n^3 matrix product of `seconds` per call, timed as `blocks` (seconds each)."""
    timed = timing.Measurement("matmul", tuple(blocks or (seconds,) * 5), 5, 2, "cpu")
    return measure.RatePoint(
        "matmul",
        f"{n}x{n}x{n}",
        precision,
        seconds,
        0.0,
        2 * n**3,
        "FLOP/s",
        3 * n * n * 4,
        None,
        timed=timed,
    )


def test_a_busy_row_of_a_table_gets_its_note_in_its_first_cell():
    busy = point(512, 8e-3, blocks=(8e-3,) * 4 + (20e-3,))
    calm = point(256, 1e-3)
    assert calm.busy_note is None and busy.busy_note.startswith("fp32 512x512x512: the slowest")
    table = Table(
        [{"n": p.size, "ms": p.seconds * 1e3} for p in (calm, busy)],
        notes=[p.busy_note for p in (calm, busy)],
    )
    lines = str(table).splitlines()
    assert lines[2].startswith("256x256x256 ") and lines[3].startswith("512x512x512¹")
    assert lines[4] == "¹ " + busy.busy_note
    summary = measure.busy_summary([calm, busy])
    assert summary.startswith("1 of these 2 timings") and "2.5x" in summary  # 20 ms / 8 ms
    assert measure.busy_summary([calm]) is None


# --------------------------------------------------------------------------- a very low share


def test_a_very_low_share_says_how_long_the_arithmetic_takes_at_the_best_measured_rate():
    cpu = dataclasses.replace(VM, vector_extensions=["AVX2", "AVX-512", "AVX-512 BF16", "FMA"])
    peak = cpu_peak_of(cpu, "bf16")
    small = point(256, 2 * 256**3 / (0.01 * peak), "bf16")  # 1 % of the peak
    large = point(2048, 2 * 2048**3 / (0.6 * peak), "bf16")  # 60 %
    note = measure.low_share_note(small, peak, [small, large])
    at_best = 2 * 256**3 / (0.6 * peak)  # the small product's FLOPs at the large one's rate
    assert note.startswith("bf16 256x256x256: 1% of the bf16 peak")
    assert "2048x2048x2048" in note and "60%" in note and "not arithmetic" in note
    assert f"would take {units.format_seconds(at_best)}" in note
    assert measure.low_share_note(large, peak, [small, large]) is None
    assert any("not arithmetic" in n for n in measure.point_notes(small, peak, [small, large]))
    above = point(2048, 2 * 2048**3 / (1.22 * peak), "bf16")  # the best size above the estimate
    assert "reached (122%)" in measure.low_share_note(small, peak, [small, above])


def test_a_low_share_at_every_size_is_not_blamed_on_the_size():
    peak = cpu_peak_of(VM)
    pts = [point(n, 2 * n**3 / (0.02 * peak)) for n in (256, 512)]  # 2 % at both sizes
    note = measure.low_share_note(pts[0], peak, pts)
    assert "the size is not the reason" in note and "CPU estimate" in note
    assert measure.low_share_note(pts[0], None, pts) is None  # no peak, no share, no note


def test_bf16_on_an_x86_cpu_without_bf16_instructions_says_so():
    assert "no bf16 arithmetic" in measure.no_native_note("cpu", ["AVX2", "FMA"], "bf16")
    assert measure.no_native_note("cpu", ["AVX-512", "AVX-512 BF16", "FMA"], "bf16") is None
    assert measure.no_native_note("cpu", ["AVX2", "FMA"], "fp32") is None
    assert measure.no_native_note("cpu", ["NEON"], "bf16") is None  # Arm: its flags are not read


# --------------------------------------------------------------------------- the highest clock


@pytest.mark.parametrize(
    ("clocks", "ghz", "source"),
    [
        (
            {
                "max_frequency_mhz": 3000.0,
                "reported_frequency_mhz": 2245.0,
                "sysfs_max_frequency_mhz": 3700.0,
            },
            3.7,
            "sysfs cpuinfo_max_freq",
        ),
        (
            {"max_frequency_mhz": 3000.0, "reported_frequency_mhz": 2245.0},
            3.0,
            "psutil.cpu_freq().max",
        ),
        (
            {"max_frequency_mhz": 2000.0, "reported_frequency_mhz": 3400.5},
            3.4005,
            "/proc/cpuinfo's cpu MHz",
        ),
        ({"reported_frequency_mhz": 2245.0}, 2.245, "/proc/cpuinfo's cpu MHz"),
    ],
)
def test_the_cpu_peak_uses_the_highest_clock_and_names_its_source(clocks, ghz, source):
    cpu = CPUInfo("Test CPU", 4, 4, ["AVX2", "FMA"], **clocks)
    estimate = peaks.cpu_peak(report_with(cpu))
    assert estimate.clock_ghz == pytest.approx(ghz)
    assert estimate.fp32_flops == pytest.approx(4 * ghz * 1e9 * 32)
    assert estimate.clock_source == source and source in estimate.assumptions
    _, _, label = peaks.device_peak(report_with(cpu), "cpu")
    assert label.endswith(f"clock from {source}")
    # "no maximum is exposed" only where /proc/cpuinfo is the only source
    assert ("no maximum is exposed" in estimate.assumptions) == (
        list(clocks) == ["reported_frequency_mhz"]
    )


def test_an_unreadable_clock_still_means_peak_unknown():
    cpu = CPUInfo(
        "Test CPU",
        4,
        4,
        ["AVX2", "FMA"],
        max_frequency_mhz=float("nan"),
        reported_frequency_mhz=0.0,
        sysfs_max_frequency_mhz=-1.0,
    )
    estimate = peaks.cpu_peak(report_with(cpu))
    assert estimate.fp32_flops is None and estimate.assumptions.startswith("peak unknown")


def test_host_reads_every_core_and_every_source(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: avx2 fma\ncpu MHz\t\t: 1200.000\n\n"
        "processor\t: 1\ncpu MHz\t\t: 3400.500\n\nprocessor\t: 2\ncpu MHz\t\t: 0.000\n"
    )
    sysfs = tmp_path / "cpu"
    for core, khz in (("cpu0", "3700000"), ("cpu1", "4100000"), ("cpu2", "0"), ("cpu3", "n/a")):
        (sysfs / core / "cpufreq").mkdir(parents=True)
        (sysfs / core / "cpufreq" / "cpuinfo_max_freq").write_text(khz + "\n")
    monkeypatch.setattr(host, "core_counts", lambda: (4, 4, 3000.0))
    info = host.cpu_info(str(cpuinfo), sysfs_root=str(sysfs))
    assert info.reported_frequency_mhz == 3400.5  # the highest core, not the first
    assert info.sysfs_max_frequency_mhz == 4100.0  # kHz / 1000; 0 and "n/a" skipped
    assert info.max_frequency_mhz == 3000.0
    assert peaks.cpu_peak(report_with(info)).clock_source == "sysfs cpuinfo_max_freq"
    monkeypatch.setattr(host, "SYSFS_CPU", str(tmp_path / "none"))
    assert host.cpu_info(str(cpuinfo)).sysfs_max_frequency_mhz is None
