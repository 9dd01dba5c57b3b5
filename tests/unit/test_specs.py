"""Tests for gpulab.specs: the GPU table's consistency, name matching and the CPU estimate."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from gpulab import roofline, specs
from gpulab.core.errors import GpulabConfigError
from gpulab.machine.hardware import CPUInfo, GPUInfo, HardwareReport, TorchInfo, detect
from gpulab.machine.peaks import CPUPeakEstimate, cpu_peak, device_peak
from gpulab.reference.specs import DTYPES, GPUSpec, find_gpu, get_gpu, load_gpus
from tests.helpers import raw_data

GPUS = load_gpus()
ROWS = sorted(GPUS)
GIB = 1024**3


def report_with(cpu: CPUInfo | None = None, gpus: list[GPUInfo] | None = None, backend="cpu"):
    """A HardwareReport with only the fields the specs module reads filled in."""
    return HardwareReport(
        os="test",
        python="3",
        torch=TorchInfo(installed=False),
        cpu=cpu or CPUInfo(None, None, None, vector_extensions=[]),
        ram_total_bytes=None,
        ram_available_bytes=None,
        gpus=gpus or [],
        backend=backend,
        in_colab=False,
        visible_devices={},
        nvidia_device_files=False,
        notes=[],
    )


def cpu(extensions, cores=2, mhz=2000.0, model="Test CPU") -> CPUInfo:
    """A CPUInfo with the given vector extensions, core count and maximum clock."""
    return CPUInfo(
        model=model,
        physical_cores=cores,
        logical_cores=cores,
        vector_extensions=list(extensions),
        max_frequency_mhz=mhz,
    )


# --------------------------------------------------------------------------- the table


def test_json_has_schema_version_convention_and_units():
    path = specs.resources.files("gpulab") / "data" / "gpu_specs.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["_schema_version"] == 1
    assert "dense" in data["_convention"] and "FP32 accumulat" in data["_convention"]
    assert "bandwidth_gbs" in data["_units"]


def test_table_keeps_every_reference_gpu():
    assert len(GPUS) >= 16
    for name in ("RTX 4090", "H100 SXM", "T4", "A100 80GB SXM", "H200", "AMD Instinct MI300X"):
        assert name in GPUS


@pytest.mark.parametrize("name", ROWS)
def test_row_has_source_and_positive_figures(name):
    spec = GPUS[name]
    assert spec.source.strip()
    assert spec.vendor in {"NVIDIA", "AMD", "Intel", "Apple"}
    assert spec.memory_gb > 0 and spec.bandwidth_gbs > 0
    assert set(spec.peak_tflops) <= set(DTYPES) | {"fp16_fp16acc"}
    for dtype, value in spec.peak_tflops.items():
        assert value > 0, (name, dtype)
    for value in (spec.cuda_cores, spec.tensor_cores, spec.boost_clock_ghz, spec.board_power_w):
        assert value is None or value > 0
    assert spec.launch_date is None or re.fullmatch(r"\d{4}-\d{2}", spec.launch_date)
    assert set(spec.interconnect) == {"pcie_gen", "pcie_lanes", "nvlink_gbs"}


@pytest.mark.parametrize("name", [n for n in ROWS if GPUS[n].derived_bandwidth_gbs() is not None])
def test_bandwidth_is_bus_width_times_data_rate(name):
    # bandwidth = bus width (bits) / 8 x data rate per pin (Gbit/s)
    spec = GPUS[name]
    assert spec.derived_bandwidth_gbs() == pytest.approx(spec.bandwidth_gbs, rel=0.02)


@pytest.mark.parametrize("name", [n for n in ROWS if GPUS[n].derived_fp32_tflops() is not None])
def test_fp32_peak_is_cores_times_clock_times_two(name):
    # peak = units x clock x FLOPs per cycle (one FMA = 2 FLOPs per CUDA core per cycle)
    spec = GPUS[name]
    assert spec.derived_fp32_tflops() == pytest.approx(spec.peak_tflops["fp32"], rel=0.02)


def test_the_identities_are_checked_on_most_rows():
    # Guards against the two tests above passing vacuously after an edit to the JSON.
    assert sum(GPUS[n].derived_bandwidth_gbs() is not None for n in ROWS) >= 10
    assert sum(GPUS[n].derived_fp32_tflops() is not None for n in ROWS) >= 10


def test_derived_values_are_none_when_fields_are_missing():
    spec = dataclasses.replace(GPUS["RTX 4090"], memory_data_rate_gbps=None, cuda_cores=None)
    assert spec.derived_bandwidth_gbs() is None
    assert spec.derived_fp32_tflops() is None
    assert GPUS["RTX 4090"].derived_bandwidth_gbs() == pytest.approx(384 / 8 * 21)


def test_rtx_4090_ridge_point_by_hand():
    # 165.2 TFLOP/s bf16 / 1008 GB/s = 165.2e12 / 1008e9 = 163.9 FLOP per byte
    assert roofline.gpu_ridge_point("RTX 4090", "bf16") == pytest.approx(163.888, rel=1e-4)
    assert roofline.gpu_ridge_point(get_gpu("RTX 4090")) == roofline.gpu_ridge_point(
        "RTX 4090", "bf16"
    )


def test_peak_flops_units_and_missing_precisions():
    spec = get_gpu("H100 SXM")
    assert spec.peak_flops("bf16") == pytest.approx(989.4e12)
    assert spec.bandwidth_bytes_per_s == pytest.approx(3.35e12)
    t4 = get_gpu("T4")
    assert t4.peak_flops("bf16") is None  # Turing has no bf16
    assert roofline.gpu_ridge_point(t4) is None
    assert t4.peak_flops("fp16") == pytest.approx(65e12)
    assert get_gpu("Apple M3 Max").peak_flops("fp32") is None  # Apple publishes none


def test_peak_flops_rejects_unknown_dtype_naming_it():
    with pytest.raises(GpulabConfigError, match="'float32'") as info:
        get_gpu("RTX 4090").peak_flops("float32")
    assert "fp32, tf32, bf16" in str(info.value)


def test_rows_are_immutable_and_load_gpus_returns_a_copy():
    spec = get_gpu("RTX 4090")
    with pytest.raises(TypeError):
        spec.peak_tflops["fp32"] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.bandwidth_gbs = 1
    table = load_gpus()
    del table["RTX 4090"]
    assert "RTX 4090" in load_gpus()
    assert json.loads(json.dumps(spec.to_dict()))["peak_tflops"]["bf16"] == 165.2
    assert isinstance(spec, GPUSpec) and hash(spec) == hash(get_gpu("RTX 4090"))


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("reported", "row"),
    [
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("Tesla T4", "T4"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB SXM"),
        ("NVIDIA H200", "H200"),
        ("AMD Instinct MI300X", "AMD Instinct MI300X"),
        ("AMD Radeon RX 7900 XTX", "AMD Radeon RX 7900 XTX"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A10", "A10"),
        ("Apple M3 Max", "Apple M3 Max"),
        ("rtx 4090", "RTX 4090"),
        ("H100 SXM", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),  # the PCIe board: its own clocks and bandwidth
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
    ],
)
def test_find_gpu_on_reported_names(reported, row):
    spec = find_gpu(reported)
    assert spec is not None and spec.name == row


@pytest.mark.parametrize(
    "reported",
    [
        "NVIDIA GeForce GTX 1650",  # not in the table
        "Intel Arc A770",  # 8 GB and 16 GB boards report the same name
        "NVIDIA GeForce RTX 4090 D",  # a different (cut-down) GPU
        "NVIDIA GeForce RTX 4090 Laptop GPU",
        "NVIDIA GeForce RTX 3060 Ti",
        "NVIDIA A10G",
        "NVIDIA H100 NVL",  # another board, not in the table
        "NVIDIA H200 NVL",
        "NVIDIA A100 40GB PCIe",
        "NVIDIA GeForce RTX 3060",  # 8 GB and 12 GB models report the same name
        "Apple M3 Pro",
        "",
    ],
)
def test_find_gpu_returns_none_rather_than_a_guess(reported):
    assert find_gpu(reported) is None


def test_find_gpu_uses_memory_to_pick_a_variant():
    assert find_gpu("NVIDIA GeForce RTX 3060", memory_bytes=12 * GIB).name == "RTX 3060 12GB"
    assert find_gpu("NVIDIA GeForce RTX 3060", memory_bytes=8 * GIB).name == "RTX 3060 8GB"
    assert find_gpu("NVIDIA GeForce RTX 3060", memory_bytes=6 * GIB) is None
    assert find_gpu("NVIDIA GeForce RTX 4060 Ti", memory_bytes=16 * GIB).name == "RTX 4060 Ti 16GB"
    # NVML reports a little under the GiB figure; a MIG slice reports far less.
    assert find_gpu("NVIDIA H100 80GB HBM3", memory_bytes=81559 * 1024**2).name == "H100 SXM"
    assert find_gpu("NVIDIA H100 80GB HBM3", memory_bytes=10 * GIB) is None


def test_get_gpu_exact_then_reported_then_error():
    assert get_gpu("T4").name == "T4"
    assert get_gpu("Tesla T4").name == "T4"
    with pytest.raises(
        GpulabConfigError,
        match="name='GTX 1650' is not a GPU in the spec table; "
        "did you mean 'GTX 1650 GDDR5'.* known: .*RTX 4090",
    ) as info:
        get_gpu("GTX 1650")
    assert info.value.field == "name"
    with pytest.raises(GpulabConfigError, match="did you mean 'RTX 4090'"):
        get_gpu("RTX4090")


def test_ridge_points_and_sources_of_the_rows():
    """The RTX 4090's bf16 ridge point; the T4 (Turing) has no bf16 peak; every row cites."""
    ridge = roofline.gpu_ridge_point(get_gpu("RTX 4090"), "bf16")
    assert ridge == pytest.approx(163.888, rel=1e-4)
    assert "bf16" not in get_gpu("T4").peak_tflops
    assert roofline.gpu_ridge_point("T4", "bf16") is None and roofline.gpu_ridge_point("T4", "fp16")
    assert all(g.source for g in load_gpus().values())
    with pytest.raises(GpulabConfigError):
        get_gpu("no such GPU")


# --------------------------------------------------------------------------- CPU estimate


def test_cpu_peak_avx512_two_cores_two_ghz():
    est = cpu_peak(report_with(cpu(["AVX2", "AVX-512", "FMA"])))
    # 2 cores x 2.0 GHz x 64 FLOP/cycle (16 lanes x 2 FMA units x 2) = 256 GFLOP/s
    assert est.fp32_flops == pytest.approx(256e9)
    assert est.fp32_flops_per_cycle_per_core == 64
    assert est.bf16_flops is None
    assert est.is_estimate and "256 GFLOP/s" in est.assumptions and "estimate" in est.assumptions
    assert isinstance(est, CPUPeakEstimate)


def test_cpu_peak_avx2_only():
    est = cpu_peak(report_with(cpu(["AVX2", "FMA"], cores=4, mhz=3000.0)))
    assert est.fp32_flops == pytest.approx(4 * 3.0e9 * 32)  # 8 lanes x 2 x 2
    assert est.bf16_flops is None


def test_cpu_peak_neon_says_apple_has_more_pipes():
    est = cpu_peak(report_with(cpu(["NEON"], cores=8, mhz=3000.0)))
    assert est.fp32_flops == pytest.approx(8 * 3.0e9 * 16)  # 4 lanes x 2 x 2
    assert "Apple" in est.assumptions


def test_cpu_peak_unknown_clock_is_not_made_up():
    est = cpu_peak(report_with(cpu(["AVX-512", "FMA"], mhz=None)))
    assert est.fp32_flops is None and est.bf16_flops is None
    assert "peak unknown" in est.assumptions and "clock" in est.assumptions


def test_cpu_peak_unknown_vector_width_or_cores():
    assert cpu_peak(report_with(cpu([]))).fp32_flops is None
    assert cpu_peak(report_with(cpu(["AVX2"]))).fp32_flops is None  # AVX2 without FMA
    est = cpu_peak(report_with(cpu(["AVX2", "FMA"], cores=None)))
    assert est.fp32_flops is None and "cores" in est.assumptions


def test_cpu_peak_bf16_with_amx_and_with_avx512_bf16():
    amx = cpu_peak(report_with(cpu(["AVX-512", "AVX-512 BF16", "AMX", "FMA"])))
    assert amx.bf16_flops == pytest.approx(2 * 2.0e9 * 1024)  # Intel: 1024 bf16 FLOP/cycle
    assert "AMX" in amx.assumptions
    avx = cpu_peak(report_with(cpu(["AVX-512", "AVX-512 BF16", "FMA"])))
    assert avx.bf16_flops == pytest.approx(2 * avx.fp32_flops)


def test_cpu_peak_falls_back_to_the_reported_clock_when_no_maximum():
    info = dataclasses.replace(cpu(["AVX2", "FMA"], mhz=None), reported_frequency_mhz=2500.0)
    est = cpu_peak(report_with(info))
    assert est.fp32_flops == pytest.approx(2 * 2.5e9 * 32)
    assert "/proc/cpuinfo" in est.assumptions


def test_cpu_peak_on_a_faked_detect_report():
    real = detect()
    faked = dataclasses.replace(real, cpu=cpu(["AVX-512", "FMA"]))
    assert cpu_peak(faked).fp32_flops == pytest.approx(256e9)


# --------------------------------------------------------------------------- device peak


def test_device_peak_cpu_on_this_machine_is_labelled():
    peak, bandwidth, label = device_peak(detect(), "cpu")
    assert "estimate" in label or "unknown" in label
    assert bandwidth is None
    assert (peak is None) == ("unknown" in label)


def test_device_peak_cuda_uses_the_spec_sheet():
    gpus = [
        GPUInfo(index=0, name="NVIDIA GeForce RTX 4090", memory_total_bytes=24564 * 1024**2),
        GPUInfo(index=1, name="Tesla T4", memory_total_bytes=15360 * 1024**2),
    ]
    report = report_with(gpus=gpus, backend="cuda")
    assert device_peak(report, "cuda", "bf16") == (165.2e12, 1008e9, "RTX 4090 spec sheet")
    assert device_peak(report, "auto", "bf16")[2] == "RTX 4090 spec sheet"
    peak, bandwidth, label = device_peak(report, "cuda:1", "bf16")
    assert peak is None and bandwidth == 320e9 and "no bf16 peak" in label
    assert device_peak(report, "cuda:2")[2].startswith("peak unknown")


def test_device_peak_unknown_gpu_and_device():
    report = report_with(gpus=[GPUInfo(index=0, name="NVIDIA GeForce GTX 1650")])
    assert device_peak(report, "cuda") == (
        None,
        None,
        "peak unknown: 'NVIDIA GeForce GTX 1650' is not in gpulab's spec table",
    )
    assert device_peak(report, "xpu")[2].startswith("peak unknown")
    with pytest.raises(GpulabConfigError, match="'double'"):
        device_peak(report, "cpu", "double")


def test_device_peak_cpu_dtypes():
    report = report_with(cpu(["AVX-512", "AVX-512 BF16", "AMX", "FMA"]))
    assert device_peak(report, "cpu", "bf16")[0] == pytest.approx(2 * 2.0e9 * 1024)
    assert device_peak(report, "cpu", "fp16") == (
        None,
        None,
        "peak unknown: no fp16 peak is estimated for this CPU",
    )
    assert device_peak(report_with(cpu(["AVX2", "FMA"], mhz=None)), "cpu")[2].startswith(
        "peak unknown"
    )


def test_device_peak_mps_from_the_apple_chip_name():
    m3 = report_with(cpu(["NEON"], cores=16, model="Apple M3 Max"), backend="mps")
    peak, bandwidth, label = device_peak(m3, "mps")
    assert peak is None and bandwidth == 400e9 and label.startswith("Apple M3 Max spec sheet")
    # The 14-core M3 Max has a smaller GPU and 300 GB/s: not the table's row.
    binned = report_with(cpu(["NEON"], cores=14, model="Apple M3 Max"), backend="mps")
    assert device_peak(binned, "mps")[:2] == (None, None)
    other = report_with(cpu(["NEON"], cores=8, model="Apple M2"), backend="mps")
    assert device_peak(other, "mps")[2].startswith("peak unknown")


# ----------------------------------------------------------------- CPU table (chapter 1)


def test_cpu_peak_arithmetic_of_the_articles_cpu():
    """i9-13900K fp32: 8x32x3.0 + 16x16x2.2 GHz = 1331.2 GFLOP/s at base, 2585.6 at max turbo."""
    cpu = specs.get_cpu("Core i9-13900K")
    assert cpu.cores == 24
    assert cpu.peak_fp32_flops("base") == pytest.approx(1331.2e9)
    assert cpu.peak_fp32_flops("turbo") == pytest.approx(2585.6e9)
    assert "8 P-cores x 32 FLOP/cycle x 3 GHz" in cpu.peak_arithmetic("base")
    assert cpu.memory_bandwidth_gbs == pytest.approx(89.6)


def test_cpu_table_rows_have_sources_and_bad_input_is_named():
    """Every CPU row cites a source; unknown names and clocks are refused clearly."""
    names = raw_data("cpu_specs.json")["cpus"]  # every row as stored, read through get_cpu
    assert names and all(specs.get_cpu(name).source for name in names)
    with pytest.raises(GpulabConfigError, match="name='Pentium 4' is not a CPU in the table"):
        specs.get_cpu("Pentium 4")
    with pytest.raises(GpulabConfigError, match="clock='max'"):
        specs.get_cpu("Core i9-13900K").peak_fp32_flops("max")


# --------------------------------------------------------------------------- chapter 6 rows

# Cards the articles' buying questions name (consumer, workstation, data centre, Apple).
CHAPTER6_ROWS = (
    "RTX 4070",
    "RTX 4080",
    "RTX 5070 Ti",
    "RTX A6000",
    "RTX 6000 Ada Generation",
    "L40S",
    "GTX 1650 GDDR5",
    "Apple M2 Ultra",
    "Apple M3 Ultra",
)


@pytest.mark.parametrize("name", CHAPTER6_ROWS)
def test_chapter6_rows_have_sources_and_the_fields_chapter6_reads(name):
    spec = GPUS[name]
    assert len(spec.source) > 80  # names where each figure comes from, not just a site
    assert spec.launch_date is not None
    if spec.vendor == "Apple":
        assert spec.cpu_cores and spec.board_power_w is None and not spec.peak_tflops
    else:
        assert spec.board_power_w and spec.compute_capability
        assert spec.derived_fp32_tflops() == pytest.approx(spec.peak_tflops["fp32"], rel=0.02)
        assert spec.derived_bandwidth_gbs() == pytest.approx(spec.bandwidth_gbs, rel=0.02)


def test_every_price_has_its_date():
    for spec in GPUS.values():
        assert spec.launch_price_usd is None or spec.launch_date is not None, spec.name


def test_chapter6_rows_figures_by_hand():
    # 48 GB cards the articles' "70B needs >= 48 GB" points to
    assert [GPUS[n].memory_gb for n in ("RTX A6000", "RTX 6000 Ada Generation", "L40S")] == [48] * 3
    assert GPUS["RTX A6000"].interconnect["nvlink_gbs"] == 112.5
    assert GPUS["L40S"].interconnect["nvlink_gbs"] is None
    # 256 bits / 8 x 22.4 Gbit/s = 716.8 GB/s
    assert GPUS["RTX 4080"].derived_bandwidth_gbs() == pytest.approx(716.8)
    assert (GPUS["Apple M3 Ultra"].memory_gb, GPUS["Apple M3 Ultra"].bandwidth_gbs) == (512, 819)


@pytest.mark.parametrize(
    ("reported", "row"),
    [
        ("NVIDIA GeForce RTX 4080", "RTX 4080"),
        ("NVIDIA GeForce RTX 4070", "RTX 4070"),
        ("NVIDIA GeForce RTX 5070 Ti", "RTX 5070 Ti"),
        ("NVIDIA RTX A6000", "RTX A6000"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada Generation"),
        ("NVIDIA L40S", "L40S"),
        ("Apple M3 Ultra", "Apple M3 Ultra"),
    ],
)
def test_find_gpu_on_chapter6_names(reported, row):
    spec = find_gpu(reported)
    assert spec is not None and spec.name == row


@pytest.mark.parametrize(
    "reported",
    [
        "NVIDIA GeForce RTX 4070 Ti",
        "NVIDIA GeForce RTX 4080 SUPER",
        "NVIDIA L40",
        "NVIDIA GeForce GTX 1650",
    ],
)
def test_find_gpu_does_not_guess_near_chapter6_rows(reported):
    assert find_gpu(reported) is None


# --------------------------------------------------------------------------- memory capacity

# Driver-reported totals, typed here from the cited outputs as the oracle (issue #14): the
# nvidia-smi "Total" of each card, in MiB.
REPORTED_MIB = {
    "RTX 4090": 24564,
    "RTX 3090": 24576,
    "A100 80GB SXM": 81920,
    "H100 SXM": 81559,
    "L4": 23034,
    "T4": 15360,
    "A100 40GB SXM": 40960,
    "A10": 23028,
    "L40S": 46068,
}


def test_every_row_has_a_reported_capacity_with_its_source():
    """memory_bytes comes from a per-row MiB figure, with a published source or the reason."""
    reported = {
        name: row["memory_reported"]  # the rows as stored, not as gpulab reads them
        for name, row in raw_data("gpu_specs.json")["gpus"].items()
    }
    assert set(reported) == set(specs.load_gpus())
    for name, row in reported.items():
        assert row["kind"] in ("reported", "nominal-gib"), name
        assert row["source"].strip(), name
        if row["kind"] == "reported":
            assert row["source"].startswith("https://"), name
        assert specs.get_gpu(name).memory_bytes == row["mib"] * 2**20


@pytest.mark.parametrize("name, mib", sorted(REPORTED_MIB.items()))
def test_memory_bytes_is_what_nvidia_smi_reports(name, mib):
    assert specs.get_gpu(name).memory_bytes == mib * 1024 * 1024


def test_geforce_cards_report_about_their_marketed_figure_in_gib_and_ecc_cards_in_gb():
    """The rule behind the nominal-GiB rows: GDDR cards without ECC report their GB as GiB."""
    for name in ("RTX 3060 12GB", "RTX 3090", "RTX 4090", "RTX 5090"):
        g = specs.get_gpu(name)
        assert g.memory_kind == "reported"
        assert g.memory_bytes / (g.memory_gb * 2**30) == pytest.approx(1, abs=0.005), name
    for name in ("T4", "L4"):  # ECC takes its share: within 1% of the marketed decimal GB
        g = specs.get_gpu(name)
        assert g.memory_bytes / (g.memory_gb * 1e9) == pytest.approx(1, abs=0.01), name


def test_model_memory_is_the_capacity_less_one_context_and_the_slack():
    """(reported - 0.5 GiB CUDA context) / 1.05: each term taken off once, here."""
    g = specs.get_gpu("RTX 4090")
    assert g.model_memory_bytes == int((24564 * 2**20 - 2**29) / 1.05)
    mac = specs.get_gpu("Apple M3 Max")  # no CUDA context; macOS lets the GPU wire 75%
    assert mac.model_memory_bytes == int(128 * 2**30 * 0.75 / 1.05)


def test_cpu_peak_at_the_all_core_clocks_by_hand():
    """i9-13900K, every core busy: 8 P-cores x 32 FLOP/cycle x 5.5 GHz + 16 E-cores x 16 x 4.3."""
    cpu = specs.get_cpu("Core i9-13900K")
    assert cpu.peak_fp32_flops("all-core") == pytest.approx((8 * 32 * 5.5 + 16 * 16 * 4.3) * 1e9)
    assert (
        cpu.peak_fp32_flops("base") < cpu.peak_fp32_flops("all-core") < cpu.peak_fp32_flops("turbo")
    )
    with pytest.raises(GpulabConfigError, match="clock='boost'"):
        cpu.peak_fp32_flops("boost")


def test_a_row_without_its_reported_memory_is_refused_by_name():
    """One GPU is one row: its driver-reported capacity is a field of the row, not optional."""
    row = json.loads(
        (Path(specs.__file__).parents[1] / "data" / "gpu_specs.json").read_text(encoding="utf-8")
    )["gpus"]["RTX 4090"]
    assert row["memory_reported"]["mib"] == 24564  # RLinf issue 255's nvidia-smi output
    del row["memory_reported"]
    with pytest.raises(KeyError, match="row 'RTX 4090' lacks the key 'memory_reported'"):
        specs._row("RTX 4090", row)
