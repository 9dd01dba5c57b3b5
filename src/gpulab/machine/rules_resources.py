"""The doctor's rules about the machine's resources: free memory, clocks, the PCIe link.

Each rule is a function from a HardwareReport to a list of Findings, registered with
``@rule`` in the order the doctor checks them (gpulab.machine.rules).
"""

from __future__ import annotations

from gpulab.core.units import GIB
from gpulab.machine.report import Finding, GPUInfo, HardwareReport
from gpulab.machine.rule_registry import rule
from gpulab.machine.rules_setup import nvidia_present
from gpulab.reference.drivers import version_tuple

__all__ = [
    "BUSY_UTILIZATION_PERCENT",
    "LOW_FREE_RAM_BYTES",
    "LOW_FREE_VRAM_BYTES",
    "OTHER_PROCESSES_MEMORY_SHARE",
]

LOW_FREE_VRAM_BYTES = 1 * GIB
LOW_FREE_RAM_BYTES = 2 * GIB
OTHER_PROCESSES_MEMORY_SHARE = 0.5  # other processes holding more than this share is a finding
BUSY_UTILIZATION_PERCENT = 50  # at or above this, a GPU counts as under load
# Throttle reasons that mean power or heat holds the clocks back (GpuIdle, SyncBoost and
# ApplicationsClocksSetting do not).
POWER_THERMAL_REASONS = (
    "SwPowerCap",
    "HwSlowdown",
    "HwThermalSlowdown",
    "HwPowerBrakeSlowdown",
    "SwThermalSlowdown",
)


def _busy(g: GPUInfo) -> bool:
    """True when the GPU is under load (an idle GPU lowers its clocks and links on purpose)."""
    return g.utilization_gpu_percent is not None and (
        g.utilization_gpu_percent >= BUSY_UTILIZATION_PERCENT
    )


@rule
def rule_low_free_vram(report: HardwareReport) -> list[Finding]:
    """A GPU with less than 1 GiB of free memory."""
    return [
        Finding(
            "warning",
            "low-free-vram",
            f"GPU {g.index} ({g.name}) has only {g.memory_free_bytes / GIB:.1f} GiB free of "
            f"{(g.memory_total_bytes or 0) / GIB:.1f} GiB; the notebooks may run out of memory.",
            "Close other programs and notebook kernels that hold GPU memory (`nvidia-smi` lists "
            "them), or run the notebooks with quick=True.",
        )
        for g in report.gpus
        if g.memory_free_bytes is not None and g.memory_free_bytes < LOW_FREE_VRAM_BYTES
    ]


@rule
def rule_gpu_memory_taken(report: HardwareReport) -> list[Finding]:
    """Other processes hold more than half of a GPU's memory."""
    findings = []
    for g in report.gpus:
        other, total = g.other_processes_memory_bytes, g.memory_total_bytes
        if other is None or not total or other / total <= OTHER_PROCESSES_MEMORY_SHARE:
            continue
        findings.append(
            Finding(
                "warning",
                "gpu-memory-taken",
                f"Other processes hold {other / GIB:.1f} GiB of the {total / GIB:.1f} GiB of GPU "
                f"{g.index} ({g.name}), {other / total:.0%}; the notebooks get only the rest and "
                f"share the GPU's time with them.",
                "`nvidia-smi` lists the processes: shut down notebook kernels you no longer need "
                "and stop other jobs on this GPU, or pick another GPU with CUDA_VISIBLE_DEVICES.",
            )
        )
    return findings


@rule
def rule_gpu_throttled(report: HardwareReport) -> list[Finding]:
    """A busy GPU whose clocks are held back for power or heat."""
    findings = []
    for g in report.gpus:
        reasons = [r for r in (g.throttle_reasons or []) if r in POWER_THERMAL_REASONS]
        if not reasons or not _busy(g):
            continue
        facts = [f"{g.utilization_gpu_percent}% busy"]
        if g.sm_clock_mhz is not None and g.max_sm_clock_mhz is not None:
            facts.append(f"SM clock {g.sm_clock_mhz} of {g.max_sm_clock_mhz} MHz")
        if g.temperature_c is not None:
            facts.append(f"{g.temperature_c:.0f} C")
        if g.power_draw_w is not None and g.power_limit_w is not None:
            facts.append(f"{g.power_draw_w:.0f} W of a {g.power_limit_w:.0f} W limit")
        findings.append(
            Finding(
                "warning",
                "gpu-throttled",
                f"GPU {g.index} ({g.name}) is throttled under load by {', '.join(reasons)} "
                f"({'; '.join(facts)}); timings on it will be lower and vary from run to run.",
                "For heat (Thermal, HwSlowdown): clean the fans, improve the airflow, check the "
                "room temperature. For power (SwPowerCap, PowerBrake): check the power cables and "
                "the power supply, keep a laptop on mains power, and compare the limit with "
                "`nvidia-smi -q -d POWER,PERFORMANCE`.",
            )
        )
    return findings


@rule
def rule_pcie_link_degraded(report: HardwareReport) -> list[Finding]:
    """A busy GPU whose PCIe link runs below its maximum generation or width."""
    findings = []
    for g in report.gpus:
        gen, gen_max = g.pcie_gen_current, g.pcie_gen_max
        width, width_max = g.pcie_width_current, g.pcie_width_max
        slow_gen = gen is not None and gen_max is not None and gen < gen_max
        narrow = width is not None and width_max is not None and width < width_max
        if not (slow_gen or narrow) or not _busy(g):
            continue
        findings.append(
            Finding(
                "warning",
                "pcie-link-degraded",
                f"GPU {g.index} ({g.name}) runs its PCIe link at gen {gen or '?'} x{width or '?'} "
                f"while {g.utilization_gpu_percent}% busy, below its maximum gen {gen_max or '?'} "
                f"x{width_max or '?'}; copies between host and GPU get slower.",
                "Seat the card in a full-length x16 slot wired to the CPU (the motherboard manual "
                "says which), without a riser cable or with a better one; check the slot's PCIe "
                "setting in the BIOS. `nvidia-smi -q -d PCIE` shows the link.",
            )
        )
    return findings


@rule
def rule_low_free_ram(report: HardwareReport) -> list[Finding]:
    """Less than 2 GiB of RAM available for the data loader."""
    available = report.ram_available_bytes
    if available is None or available >= LOW_FREE_RAM_BYTES:
        return []
    total = "?" if report.ram_total_bytes is None else f"{report.ram_total_bytes / GIB:.1f}"
    return [
        Finding(
            "warning",
            "low-free-ram",
            f"Only {available / GIB:.1f} GiB of {total} GiB RAM is available; data-loader "
            f"workers and pinned memory will compete for it, and the machine may start swapping "
            f"or kill the notebook.",
            "Close other programs and notebook kernels, run the notebooks with quick=True, and use "
            "fewer DataLoader workers (num_workers=0 to 2) and pin_memory=False.",
        )
    ]


@rule
def rule_old_gpu_for_bf16(report: HardwareReport) -> list[Finding]:
    """A GPU below compute capability 8.0: no native bf16, no FlashAttention."""
    if report.backend == "rocm":  # ROCm's "capability" numbers are AMD architectures
        return []
    findings = []
    for g in report.gpus:
        cc = version_tuple(g.compute_capability or "")[:2]
        if len(cc) != 2 or cc >= (8, 0):
            continue
        findings.append(
            Finding(
                "info",
                "old-gpu-for-bf16",
                f"GPU {g.index} ({g.name}) has compute capability {g.compute_capability}, below "
                f"8.0: bf16 runs without native Tensor Core support (slowly, or not at all), and "
                f"PyTorch's FlashAttention kernels need 8.0 or newer.",
                "Use fp16 instead of bf16 (torch.autocast(device_type='cuda', dtype=torch.float16) "
                "with torch.amp.GradScaler for training), and let scaled_dot_product_attention use "
                "the memory-efficient backend (SDPBackend.EFFICIENT_ATTENTION).",
            )
        )
    return findings


@rule
def rule_no_gpu(report: HardwareReport) -> list[Finding]:
    """No GPU at all: say that the course runs on the CPU, and why no GPU was found."""
    if report.backend != "cpu" or nvidia_present(report) or report.amd_device_files:
        return []
    reasons = "; ".join(report.notes) if report.notes else "no GPU backend reported a device"
    return [
        Finding(
            "info",
            "no-gpu",
            f"No GPU was found, so the course runs on the CPU (backend cpu). Why: {reasons}.",
            "Nothing to fix: every notebook runs on the CPU, and the cells that need a GPU say "
            "what a GPU would show. To run them for real, use a machine with an NVIDIA GPU or "
            "Colab with a GPU runtime.",
        )
    ]
