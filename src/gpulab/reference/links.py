"""Line rates of the links and disks data crosses, each with its source (chapters 1, 5 and 7).

PCIe per lane (chapter 1's host-to-device copies, chapter 5's disk bounds, chapter 7's
collectives), NVLink from the GPU spec table, networks between machines, and the disks a
checkpoint is read from. Every rate is a peak in bytes per second, per direction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, checked, lenient
from gpulab.reference import specs

__all__ = [
    "DISKS",
    "NETWORKS",
    "PCIE_GENERATIONS",
    "PCIE_LANE_GBS",
    "PCIE_SOURCE",
    "Disk",
    "Link",
    "gpu_link",
    "nvlink",
    "pcie",
    "pcie_peak_bytes_per_s",
]

# Usable bandwidth per lane and direction in GB/s after line encoding (PCI-SIG base
# specifications: 2.5 and 5 GT/s with 8b/10b; 8, 16, 32 GT/s with 128b/130b; 64 GT/s PAM4
# with FLIT mode, 242 payload bytes per 256).
PCIE_LANE_GBS = {
    1: 0.25,
    2: 0.5,
    3: 8 * 128 / 130 / 8,
    4: 16 * 128 / 130 / 8,
    5: 32 * 128 / 130 / 8,
    6: 64 * 242 / 256 / 8,
}
PCIE_GENERATIONS = tuple(PCIE_LANE_GBS)
PCIE_LANES = (1, 2, 4, 8, 16)
PCIE_SOURCE = (
    "PCI-SIG base specifications (GT/s, encoding); https://en.wikipedia.org/wiki/PCI_Express"
)


@lenient("reads NVML's link values; None when unknown")
def pcie_peak_bytes_per_s(generation: Any, width: Any) -> float | None:
    """Usable one-way bandwidth of a PCIe link in bytes/s; None when gen or width is unknown.

    Lenient on purpose: it reads what NVML reported, which may be missing or odd.
    """
    known_gen = (
        isinstance(generation, int)
        and not isinstance(generation, bool)
        and generation in PCIE_LANE_GBS
    )
    known_width = isinstance(width, int) and not isinstance(width, bool) and 0 < width <= 32
    if not (known_gen and known_width):
        return None
    return PCIE_LANE_GBS[generation] * width * 1e9


@dataclass(frozen=True)
class Link:
    """A connection a GPU talks over, with its peak rate in one direction."""

    name: str  # "PCIe 4.0 x16", "NVLink (RTX 3090)", "InfiniBand NDR", ...
    bytes_per_s: float  # peak, per direction (what a ring all-reduce's bus bandwidth is held to)
    source: str  # where the rate comes from


@checked
def pcie(gen: int, lanes: int = 16) -> Link:
    """A PCIe link's peak per direction: GT/s x encoding / 8 x lanes (4.0 x16: 31.5 GB/s)."""
    if gen not in PCIE_GENERATIONS:
        raise GpulabConfigError(
            f"gen={gen!r} is not a PCIe generation; use one of "
            f"{', '.join(map(str, PCIE_GENERATIONS))}"
        )
    if lanes not in PCIE_LANES:
        raise GpulabConfigError(f"lanes={lanes!r} must be 1, 2, 4, 8 or 16")
    return Link(f"PCIe {gen}.0 x{lanes}", pcie_peak_bytes_per_s(gen, lanes), PCIE_SOURCE)


@checked
def nvlink(gpu: specs.GPUSpec | str) -> Link | None:
    """A GPU's NVLink per direction (the table's both-directions figure / 2); None without one."""
    g = specs.resolve_gpu(gpu)
    total = g.interconnect.get("nvlink_gbs")
    if not total:
        return None
    return Link(
        f"NVLink ({g.name})",
        total / 2 * 1e9,
        f"gpulab.specs: {total} GB/s counting both directions, halved",
    )


@checked
def gpu_link(
    gpu: specs.GPUSpec | str,
    kind: Annotated[str, OneOf(("auto", "nvlink", "pcie"), "link kind")] = "auto",
) -> Link:
    """The link a GPU's collectives use: "nvlink", "pcie", or "auto" (NVLink when it has one)."""
    g = specs.resolve_gpu(gpu)
    if kind in ("auto", "nvlink"):
        link = nvlink(g)
        if link is not None:
            return link
        if kind == "nvlink":
            raise GpulabConfigError(
                f"kind='nvlink': {g.name} has no NVLink in the spec table; use kind='pcie'", "kind"
            )
    gen, lanes = g.interconnect.get("pcie_gen"), g.interconnect.get("pcie_lanes")
    if gen is None:
        raise GpulabConfigError(f"gpu={g.name!r} has no PCIe generation in the spec table", "gpu")
    return pcie(gen, lanes or 16)


# Between machines, per port and direction. Line rates from the standards' and vendors' pages.
NETWORKS = {
    link.name: link
    for link in [
        Link("10 Gb Ethernet", 10e9 / 8, "IEEE 802.3ae: 10 Gb/s"),
        Link("100 Gb Ethernet", 100e9 / 8, "IEEE 802.3ba: 100 Gb/s"),
        Link("400 Gb Ethernet", 400e9 / 8, "IEEE 802.3bs: 400 Gb/s"),
        Link(
            "InfiniBand HDR", 200e9 / 8, "InfiniBand Trade Association roadmap: HDR 4x = 200 Gb/s"
        ),
        Link(
            "InfiniBand NDR",
            400e9 / 8,
            "InfiniBand Trade Association roadmap: NDR 4x = 400 Gb/s; "
            "NVIDIA ConnectX-7: up to 400 Gb/s",
        ),
    ]
}


@dataclass(frozen=True)
class Disk:
    """A storage device's sequential read rate, with where the figure comes from."""

    name: str
    read_bytes_per_s: float
    source: str


# SATA III: 6 Gbit/s line rate with 8b/10b coding = 600 MB/s of payload at most; NVMe drives sit
# on 4 PCIe lanes (128b/130b coding from gen 3). Real drives reach 90-95% of the link.
DISKS = {
    "hard disk (7200 rpm)": Disk(
        "hard disk (7200 rpm)",
        205e6,
        "HGST Ultrastar He8 datasheet: 205 MB/s sustained, outer tracks (inner tracks about half)",
    ),
    "SATA SSD": Disk(
        "SATA SSD",
        6e9 * 8 / 10 / 8,
        "SATA 3.x line rate 6 Gbit/s x 8/10 coding = 600 MB/s (Samsung 870 EVO: 560 MB/s)",
    ),
    "NVMe PCIe 3.0 x4": Disk(
        "NVMe PCIe 3.0 x4",
        pcie_peak_bytes_per_s(3, 4),
        "4 lanes x 8 GT/s x 128/130 / 8 bits = 3.94 GB/s",
    ),
    "NVMe PCIe 4.0 x4": Disk(
        "NVMe PCIe 4.0 x4",
        pcie_peak_bytes_per_s(4, 4),
        "4 lanes x 16 GT/s x 128/130 / 8 bits = 7.88 GB/s",
    ),
    "NVMe PCIe 5.0 x4": Disk(
        "NVMe PCIe 5.0 x4",
        pcie_peak_bytes_per_s(5, 4),
        "4 lanes x 32 GT/s x 128/130 / 8 bits = 15.75 GB/s",
    ),
}
