"""The 8, 12 and 16 GB cards people have (issue 32): their rows, their identities by hand,
and the names drivers report for them."""

from __future__ import annotations

import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.reference import specs
from gpulab.reference.specs import find_gpu, get_gpu, load_gpus

GIB = 2**30
COMMON = (
    "RTX 4060",
    "RTX 4060 Ti 8GB",
    "RTX 3060 8GB",
    "RTX 3070",
    "AMD Radeon RX 7600",
    "Intel Arc A770 16GB",
    "Intel Arc A770 8GB",
    "RTX 4070 SUPER",
)


@pytest.mark.parametrize("name", COMMON)
def test_each_row_cites_its_figures_and_has_what_the_calculators_read(name):
    g = get_gpu(name)
    assert len(g.source) > 200 and g.note  # names where each figure comes from
    assert g.launch_date and g.board_power_w and g.bandwidth_gbs and g.peak_tflops["fp32"]
    assert g.derived_bandwidth_gbs() == pytest.approx(g.bandwidth_gbs, rel=0.01)
    assert g.memory_source
    assert g.memory_mib in (8188, 8192, 12288, 16384)


# (row, CUDA cores, tensor cores, boost GHz) typed from the rows' sources
NVIDIA = [
    ("RTX 4060", 3072, 96, 2.46),
    ("RTX 4060 Ti 8GB", 4352, 136, 2.535),
    ("RTX 3060 8GB", 3584, 112, 1.777),
    ("RTX 3070", 5888, 184, 1.725),
    ("RTX 4070 SUPER", 7168, 224, 2.475),
]


@pytest.mark.parametrize("name, cores, tensor_cores, ghz", NVIDIA)
def test_nvidia_peaks_are_units_times_clock_times_flops_per_cycle(name, cores, tensor_cores, ghz):
    """FP32: cores x clock x 2 (an FMA); FP16 tensor with FP16 accumulate: tensor cores x clock
    x 128 FMA x 2; GeForce cards accumulate in FP32 at half that rate."""
    g = get_gpu(name)
    assert (g.cuda_cores, g.tensor_cores, g.boost_clock_ghz) == (cores, tensor_cores, ghz)
    assert g.peak_tflops["fp32"] == pytest.approx(cores * ghz * 2 / 1e3, rel=0.005)
    fp16acc = tensor_cores * ghz * 128 * 2 / 1e3
    assert g.peak_tflops["fp16_fp16acc"] == pytest.approx(fp16acc, rel=0.005)
    assert g.peak_tflops["bf16"] == g.peak_tflops["fp16"] == pytest.approx(fp16acc / 2, rel=0.005)


def test_rx_7600_counts_amds_dual_issue():
    """2,048 stream processors x 2.655 GHz x 2 FLOPs x 2 (dual issue) = AMD's 21.75 TFLOPS."""
    g = get_gpu("AMD Radeon RX 7600")
    assert g.peak_tflops["fp32"] == pytest.approx(2048 * 2.655 * 2 * 2 / 1e3, rel=0.001)
    assert g.peak_tflops["fp16"] == pytest.approx(2 * g.peak_tflops["fp32"], rel=0.001)
    assert g.cuda_cores is None and g.compute_capability is None
    # 128 bits / 8 x 18 Gbit/s = 288 GB/s
    assert g.bandwidth_gbs == 128 / 8 * 18 == 288


def test_the_arc_a770_rows():
    """4,096 ALUs x 2.1 GHz x 2 = 17.2 TFLOPS; 256 bits at 17.5 and 16 Gbit/s = 560, 512 GB/s."""
    big, small = get_gpu("Intel Arc A770 16GB"), get_gpu("Intel Arc A770 8GB")
    for g in (big, small):
        assert g.vendor == "Intel" and g.peak_tflops["fp32"] == pytest.approx(
            4096 * 2.1 * 2 / 1e3, rel=0.005
        )
        assert "bf16" not in g.peak_tflops  # no XMX figure verified: none typed
    assert (big.bandwidth_gbs, small.bandwidth_gbs) == (256 / 8 * 17.5, 256 / 8 * 16) == (560, 512)


@pytest.mark.parametrize(
    "reported, memory, row",
    [
        ("NVIDIA GeForce RTX 4060", None, "RTX 4060"),
        ("NVIDIA GeForce RTX 4060", 8188 * 2**20, "RTX 4060"),
        ("NVIDIA GeForce RTX 4060 Ti", 8 * GIB, "RTX 4060 Ti 8GB"),
        ("NVIDIA GeForce RTX 4060 Ti", 16 * GIB, "RTX 4060 Ti 16GB"),
        ("NVIDIA GeForce RTX 3060", 8 * GIB, "RTX 3060 8GB"),
        ("NVIDIA GeForce RTX 3060", 12 * GIB, "RTX 3060 12GB"),
        ("NVIDIA GeForce RTX 3070", None, "RTX 3070"),
        ("NVIDIA GeForce RTX 4070 SUPER", None, "RTX 4070 SUPER"),
        ("NVIDIA GeForce RTX 4070", None, "RTX 4070"),
        ("AMD Radeon RX 7600", None, "AMD Radeon RX 7600"),
        ("Intel(R) Arc(TM) A770 Graphics", 16 * GIB, "Intel Arc A770 16GB"),
        ("Intel(R) Arc(TM) A770 Graphics", 8 * GIB, "Intel Arc A770 8GB"),
    ],
)
def test_reported_names_find_their_row(reported, memory, row):
    assert find_gpu(reported, memory).name == row


@pytest.mark.parametrize(
    "reported, memory",
    [
        ("NVIDIA GeForce RTX 4060 Ti", None),  # two memory sizes, nothing says which
        ("Intel(R) Arc(TM) A770 Graphics", None),
        ("NVIDIA GeForce RTX 4060 Laptop GPU", None),
        ("NVIDIA GeForce RTX 3070 Ti", None),
        ("AMD Radeon RX 7600 XT", None),
        ("NVIDIA GeForce RTX 4070 Ti SUPER", None),  # neither the RTX 4070 nor its SUPER
    ],
)
def test_near_names_find_no_row_rather_than_a_guess(reported, memory):
    assert find_gpu(reported, memory) is None


def test_the_rtx_4060_resolves_and_its_ti_suggests_both_sizes():
    assert get_gpu("RTX 4060").name == "RTX 4060"
    assert get_gpu("rtx 4060").name == "RTX 4060"
    with pytest.raises(
        GpulabConfigError, match=r"did you mean 'RTX 4060 Ti 16GB' or 'RTX 4060 Ti 8GB'\?"
    ):
        get_gpu("RTX 4060 Ti")


def test_the_names_read_by_vendor_then_memory():
    names = specs.sorted_gpu_names()
    table = load_gpus()
    assert sorted(names) == sorted(table)
    keys = [(table[n].vendor, table[n].memory_gb) for n in names]
    assert keys == sorted(keys)
    assert names.index("RTX 4060") < names.index("RTX 3060 12GB") < names.index("RTX 4090")
    # an unknown name's error lists them in that order
    with pytest.raises(GpulabConfigError) as info:
        get_gpu("Voodoo 2")
    assert str(info.value).endswith(f"known: {', '.join(names)}.")
