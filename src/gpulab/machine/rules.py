"""The doctor's rules: each a small function from a HardwareReport to a list of Findings.

``RULES`` lists them in the order they are checked; ``gpulab.doctor`` runs them and renders the
result. A rule reads only the report, so it can be tested with a report built by hand, and a
report's fields are already sane (``gpulab.report``: an odd driver value is None).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gpulab.core.units import GIB
from gpulab.machine.report import SEVERITIES, Finding, GPUInfo, HardwareReport, findings_html
from gpulab.machine.visible import VISIBILITY_VARS, parse_visible_devices
from gpulab.reference.drivers import required_drivers, version_tuple

# Finding and its HTML live with the report (gpulab.report), so that this module holds the rules.
__all__ = ["RULES", "SEVERITIES", "Finding", "arch_list_covers", "findings_html"]

LOW_FREE_VRAM_BYTES = 1 * GIB
LOW_FREE_RAM_BYTES = 2 * GIB
OTHER_PROCESSES_MEMORY_SHARE = 0.5  # other processes holding more than this share is a finding
BUSY_UTILIZATION_PERCENT = 50  # at or above this, a GPU counts as under load
# Throttle reasons that mean power or heat holds the clocks back (GpuIdle, SyncBoost and
# ApplicationsClocksSetting do not).
POWER_THERMAL_REASONS = ("SwPowerCap", "HwSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown",
                         "SwThermalSlowdown")
_VERSION = re.compile(r"\d+(\.\d+)*")  # a driver version ("570.124.06"); "N/A", "" are not
NVML_LIBRARY_NOT_FOUND = "NVML library not found"  # start of hardware's note for that case
PYTORCH_INSTALL_URL = "https://pytorch.org/get-started/locally/"


Rule = Callable[[HardwareReport], list[Finding]]


# --------------------------------------------------------------------------- helpers


def _nvidia_present(report: HardwareReport) -> bool:
    """True when NVML saw a GPU or the NVIDIA kernel driver created /dev/nvidia*."""
    return report.gpus_present > 0 or report.nvidia_device_files


def _present_phrase(report: HardwareReport) -> str:
    """ "2 NVIDIA GPUs are present" or, when NVML could not count them, why we know of any."""
    if report.gpus_present > 0:
        n = report.gpus_present
        return f"{n} NVIDIA GPU{'s are' if n != 1 else ' is'} present"
    return "an NVIDIA GPU is present (/dev/nvidia* exists)"


def _driver_os(report: HardwareReport) -> str:
    """Which column of NVIDIA's table applies: "windows" (WSL included) or "linux"."""
    name = report.os.lower()
    # Under WSL the driver is the Windows one, and NVML reports its Windows version number.
    return "windows" if name.startswith("windows") or "microsoft" in name else "linux"


def _torch_base_version(report: HardwareReport) -> str:
    """ "2.13.0+cpu" -> "2.13.0"."""
    return (report.torch.version or "").split("+")[0]


# --------------------------------------------------------------------------- rules


def rule_pynvml_broken(report: HardwareReport) -> list[Finding]:
    """torch.cuda's own `import pynvml` raised or hung: the fix is nvidia-ml-py's, not torch's."""
    t = report.torch
    if t.broken_by != "pynvml":
        return []
    what = t.did_not_answer or f"torch fails to import ({t.import_error})"
    return [Finding(
        "error", "pynvml-broken",
        f"{what}, because the pynvml module torch imports (the nvidia-ml-py package) is broken; "
        "torch itself may be fine, but no notebook of the course can run.",
        "Reinstall it in this environment: `pip install --force-reinstall nvidia-ml-py`. If "
        "`pip show pynvml` lists the deprecated pynvml package, `pip uninstall pynvml` first (it "
        "ships a module of the same name). `python -c \"import pynvml\"` shows the error.")]


def rule_torch_hung(report: HardwareReport) -> list[Finding]:
    """torch did not answer within detection's time limit (and pynvml is not to blame)."""
    t = report.torch
    if not t.did_not_answer or t.broken_by:
        return []
    return [Finding(
        "error", "torch-hung",
        f"torch did not answer ({t.did_not_answer}), so its build and devices are unknown and "
        "the notebooks would hang the same way.",
        "A hung NVIDIA driver is the usual cause: check that `nvidia-smi` answers (if it hangs "
        "too, reboot or reload the driver). `python -c \"import torch; "
        "print(torch.cuda.is_available())\"` shows where torch stops; on a slow machine, raise "
        "the limit with GPULAB_DETECT_TIMEOUT_S=120.")]


def rule_torch_missing(report: HardwareReport) -> list[Finding]:
    """torch is not importable at all: not installed, or installed but broken (by itself)."""
    t = report.torch
    if t.installed or t.broken_by or t.did_not_answer:  # the two rules above explain those
        return []
    if t.import_error:
        return [Finding(
            "error", "torch-broken",
            f"torch is installed but fails to import ({t.import_error}), so no notebook of the "
            "course can run.",
            "Reinstall it in this environment: `make clean && make setup` in the course "
            f"folder, or `pip install --force-reinstall torch` (see {PYTORCH_INSTALL_URL}); "
            "a missing libcudnn or libcudart means the CUDA wheel's libraries are incomplete.")]
    return [Finding(
        "error", "torch-missing",
        "torch is not installed in this Python, so no notebook of the course can run.",
        "Run `make setup` in the course folder, or `pip install -e .` there "
        f"(or the command from {PYTORCH_INSTALL_URL}).")]


def rule_cpu_only_torch(report: HardwareReport) -> list[Finding]:
    """A CPU-only torch on a machine with an NVIDIA GPU."""
    if report.torch.build != "cpu-only" or not _nvidia_present(report):
        return []
    names = sorted({g.name for g in report.gpus})
    which = f" ({', '.join(names)})" if names else ""
    max_cuda = next((g.cuda_driver_version for g in report.gpus if g.cuda_driver_version), None)
    limit = f", not newer than CUDA {max_cuda} which your driver supports" if max_cuda else ""
    version = _torch_base_version(report)
    return [
        Finding(
            "error",
            "cpu-only-torch",
            f"torch {report.torch.version} is a CPU-only build, but {_present_phrase(report)}"
            f"{which}; every notebook will run on the CPU.",
            f"Install a CUDA build of torch. On Linux the PyPI wheel is one: "
            f"`pip install --force-reinstall torch=={version}`. On Windows use the command from "
            f"{PYTORCH_INSTALL_URL}, e.g. `pip install --force-reinstall torch=={version} "
            f"--index-url https://download.pytorch.org/whl/cu128` (pick a cuXXX listed there"
            f"{limit}).",
        )
    ]


def rule_gpus_hidden(report: HardwareReport) -> list[Finding]:
    """GPUs are present, but a *_VISIBLE_DEVICES variable hides every one of them."""
    nvidia, amd = _nvidia_present(report), report.amd_device_files
    findings = []
    for var in VISIBILITY_VARS:
        value = report.visible_devices.get(var)
        if value is None:
            continue
        # HIP also honours CUDA_VISIBLE_DEVICES, so that one hides AMD GPUs too.
        affected = (nvidia or amd) if var == "CUDA_VISIBLE_DEVICES" else amd
        if affected and _hides_all(report, var, value):
            what = _present_phrase(report) if nvidia else "an AMD GPU is present (/dev/kfd exists)"
            findings.append(
                Finding(
                    "warning",
                    "gpus-hidden",
                    f"{what}, but {var}={value!r} hides all of them, so torch sees no GPU.",
                    f"If this is the gpulab-cpu kernel, that is on purpose: pick the gpulab kernel "
                    f"to use the GPU. Otherwise unset {var} (`unset {var}` in the shell that "
                    f"starts Jupyter) or set it to the GPUs to use, e.g. {var}=0.",
                )
            )
    return findings


def _hides_all(report: HardwareReport, var: str, value: str) -> bool:
    """True when ``var=value`` leaves no GPU (an empty, "-1", unparseable or wrong list)."""
    if parse_visible_devices(value, var).hides_all:
        return True
    # A list of indices that do not exist hides everything too; NVML's filtered list shows it.
    return var == "CUDA_VISIBLE_DEVICES" and report.gpus_present > 0 and not report.gpus


def _driver_version(report: HardwareReport) -> tuple[str | None, str | None]:
    """(torch's CUDA version, the driver version) when the driver check applies, else Nones."""
    cuda = report.torch.cuda_version
    driver = next((g.driver_version for g in report.gpus if g.driver_version is not None), None)
    if report.torch.build != "cuda" or not cuda or driver is None:
        return None, None
    return cuda, driver


def rule_driver_version_unreadable(report: HardwareReport) -> list[Finding]:
    """The driver's version is not a version number, so the driver check cannot be made."""
    cuda, driver = _driver_version(report)
    if driver is None or _VERSION.fullmatch(driver.strip()):
        return []
    return [Finding(
        "warning", "driver-version-unreadable",
        f"The NVIDIA driver version reads {driver!r}, which is not a version number, so "
        f"whether it is new enough for the CUDA {cuda} in torch cannot be checked.",
        "Run `nvidia-smi` and read Driver Version at its top right (or `nvidia-smi "
        "--query-gpu=driver_version --format=csv`); if it shows N/A too or fails, reinstall "
        "the NVIDIA driver.")]


def rule_driver_too_old(report: HardwareReport) -> list[Finding]:
    """The NVIDIA driver is older than the CUDA runtime bundled in the torch wheel needs."""
    cuda, driver = _driver_version(report)
    if cuda is None or driver is None or not _VERSION.fullmatch(driver.strip()):
        return []
    os_family = _driver_os(report)
    compat_min, toolkit_min = required_drivers(cuda, os_family)
    have = version_tuple(driver)
    where = f"{os_family.capitalize()} driver {driver}"
    if compat_min and have < version_tuple(compat_min):
        major = cuda.split(".")[0]
        return [
            Finding(
                "error",
                "driver-too-old",
                f"torch {report.torch.version} bundles CUDA {cuda}, which needs an NVIDIA driver "
                f">= {compat_min} (the minimum for any CUDA {major}.x), but this machine has the "
                f"{where}; CUDA will not start.",
                f"Update the NVIDIA driver to {toolkit_min or compat_min} or newer (nvidia.com/drivers, "
                f"or your distribution's nvidia-driver package), or install a torch built for an "
                f"older CUDA that this driver supports.",
            )
        ]
    if toolkit_min and have < version_tuple(toolkit_min):
        return [
            Finding(
                "warning",
                "driver-too-old",
                f"torch {report.torch.version} bundles CUDA {cuda}, whose toolkit driver is "
                f">= {toolkit_min}; this machine has the {where}. It works through CUDA minor "
                f"version compatibility, but PTX JIT compilation and some newer features need "
                f"the newer driver.",
                f"Update the NVIDIA driver to {toolkit_min} or newer when you can.",
            )
        ]
    return []


def _parse_arch(entry: str) -> tuple[str, int, int, str] | None:
    """ "sm_90a" -> ("sm", 9, 0, "a"); "compute_120" -> ("compute", 12, 0, ""); else None."""
    match = re.fullmatch(r"(sm|compute)_(\d+)([a-z]?)", entry.strip())
    if not match:
        return None
    number = int(match.group(2))
    return match.group(1), number // 10, number % 10, match.group(3)


def arch_list_covers(arch_list: list[str], capability: str) -> bool:
    """True when torch's kernels (cubins, or PTX it can JIT) can run on this compute capability."""
    want = version_tuple(capability)[:2]
    if len(want) != 2:
        return True  # unknown capability: do not accuse the build
    for entry in arch_list:
        parsed = _parse_arch(entry)
        if parsed is None:
            continue
        kind, major, minor, suffix = parsed
        if suffix == "a":  # arch-specific code runs on exactly that GPU generation
            ok = (major, minor) == want
        elif kind == "sm" or suffix == "f":  # cubins run on later minors of the same major
            ok = major == want[0] and minor <= want[1]
        else:  # plain PTX can be JIT-compiled for any later GPU
            ok = (major, minor) <= want
        if ok:
            return True
    return False


def rule_arch_not_in_build(report: HardwareReport) -> list[Finding]:
    """A GPU whose compute capability has no kernels (and no usable PTX) in the torch build."""
    arch_list = report.torch.arch_list
    if report.torch.build != "cuda" or not arch_list:
        return []
    return [
        _arch_finding(report, gpu)
        for gpu in report.gpus
        if gpu.compute_capability and not arch_list_covers(arch_list, gpu.compute_capability)
    ]


def _arch_finding(report: HardwareReport, gpu: GPUInfo) -> Finding:
    """The finding for one GPU that the build cannot run on."""
    cc = gpu.compute_capability or "?"
    sm = "sm_" + cc.replace(".", "")
    numbers = [p[1] * 10 + p[2] for p in map(_parse_arch, report.torch.arch_list) if p]
    newer = bool(numbers) and int(cc.replace(".", "")) > max(numbers)
    fix = (
        f"Install a newer torch built with a CUDA version that knows {sm} "
        f"(see {PYTORCH_INSTALL_URL}; Blackwell GPUs such as sm_120 need the cu128 wheels or newer)."
        if newer
        else f"This torch no longer ships kernels for {sm}: install an older torch release that "
        f"does, or use a newer GPU."
    )
    return Finding(
        "error",
        "arch-not-in-build",
        f"GPU {gpu.index} ({gpu.name}) has compute capability {cc} ({sm}), but torch "
        f"{report.torch.version} only has kernels for {' '.join(report.torch.arch_list)} and no PTX "
        f"that can be compiled for it; CUDA calls will fail with 'no kernel image is available'.",
        fix,
    )


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


def rule_nvml_missing(report: HardwareReport) -> list[Finding]:
    """/dev/nvidia* exists, so the kernel driver runs, but its NVML library could not be loaded."""
    if not report.nvidia_device_files:
        return []
    if not any(note.startswith(NVML_LIBRARY_NOT_FOUND) for note in report.notes):
        return []
    return [
        Finding(
            "warning",
            "nvml-missing",
            "The NVIDIA kernel driver is loaded (/dev/nvidia* exists), but the NVML library "
            "(libnvidia-ml.so.1) could not be loaded: the driver's user-space libraries are "
            "missing or not on the loader path, so CUDA and nvidia-smi will not work either.",
            "Install the user-space part of the driver matching the kernel module (e.g. Ubuntu's "
            "libnvidia-compute-<version> / nvidia-utils-<version>); in a container start it with "
            "`--gpus all` through the NVIDIA Container Toolkit. `ldconfig -p | grep libnvidia-ml` "
            "shows whether the loader finds it; otherwise add its folder to LD_LIBRARY_PATH.",
        )
    ]


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


def _busy(g: GPUInfo) -> bool:
    """True when the GPU is under load (an idle GPU lowers its clocks and links on purpose)."""
    return g.utilization_gpu_percent is not None and (
        g.utilization_gpu_percent >= BUSY_UTILIZATION_PERCENT
    )


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


def rule_no_gpu(report: HardwareReport) -> list[Finding]:
    """No GPU at all: say that the course runs on the CPU, and why no GPU was found."""
    if report.backend != "cpu" or _nvidia_present(report) or report.amd_device_files:
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


RULES: list[Rule] = [
    rule_pynvml_broken,
    rule_torch_hung,
    rule_torch_missing,
    rule_cpu_only_torch,
    rule_gpus_hidden,
    rule_driver_version_unreadable,
    rule_driver_too_old,
    rule_arch_not_in_build,
    rule_nvml_missing,
    rule_low_free_vram,
    rule_gpu_memory_taken,
    rule_gpu_throttled,
    rule_pcie_link_degraded,
    rule_low_free_ram,
    rule_old_gpu_for_bf16,
    rule_no_gpu,
]
