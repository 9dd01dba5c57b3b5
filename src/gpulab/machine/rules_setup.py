"""The doctor's rules about the software: PyTorch, NVML, the driver, the build's GPU archs.

Each rule is a function from a HardwareReport to a list of Findings, registered with
``@rule`` in the order the doctor checks them (gpulab.machine.rules).
"""

from __future__ import annotations

import re

from gpulab.core.validate import checked
from gpulab.machine.report import Finding, GPUInfo, HardwareReport
from gpulab.machine.rule_registry import rule
from gpulab.machine.visible import VISIBILITY_VARS, parse_visible_devices
from gpulab.reference.drivers import required_drivers, version_tuple

__all__ = ["arch_list_covers", "nvidia_present", "present_phrase"]

_VERSION = re.compile(r"\d+(\.\d+)*")  # a driver version ("570.124.06"); "N/A", "" are not
NVML_LIBRARY_NOT_FOUND = "NVML library not found"  # start of hardware's note for that case
PYTORCH_INSTALL_URL = "https://pytorch.org/get-started/locally/"


@checked
def nvidia_present(report: HardwareReport) -> bool:
    """True when NVML saw a GPU or the NVIDIA kernel driver created /dev/nvidia*."""
    return report.gpus_present > 0 or report.nvidia_device_files


@checked
def present_phrase(report: HardwareReport) -> str:
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


@rule
def rule_pynvml_broken(report: HardwareReport) -> list[Finding]:
    """torch.cuda's own `import pynvml` raised or hung: the fix is nvidia-ml-py's, not torch's."""
    t = report.torch
    if t.broken_by != "pynvml":
        return []
    what = t.did_not_answer or f"torch fails to import ({t.import_error})"
    return [
        Finding(
            "error",
            "pynvml-broken",
            f"{what}, because the pynvml module torch imports (the nvidia-ml-py package) is "
            "broken; torch itself may be fine, but no notebook of the course can run.",
            "Reinstall it in this environment: `pip install --force-reinstall nvidia-ml-py`. If "
            "`pip show pynvml` lists the deprecated pynvml package, `pip uninstall pynvml` first "
            '(it ships a module of the same name). `python -c "import pynvml"` shows the error.',
        )
    ]


@rule
def rule_torch_hung(report: HardwareReport) -> list[Finding]:
    """torch did not answer within detection's time limit (and pynvml is not to blame)."""
    t = report.torch
    if not t.did_not_answer or t.broken_by:
        return []
    return [
        Finding(
            "error",
            "torch-hung",
            f"torch did not answer ({t.did_not_answer}), so its build and devices are unknown and "
            "the notebooks would hang the same way.",
            "A hung NVIDIA driver is the usual cause: check that `nvidia-smi` answers (if it hangs "
            'too, reboot or reload the driver). `python -c "import torch; '
            'print(torch.cuda.is_available())"` shows where torch stops; on a slow machine, raise '
            "the limit with GPULAB_DETECT_TIMEOUT_S=120.",
        )
    ]


@rule
def rule_torch_missing(report: HardwareReport) -> list[Finding]:
    """torch is not importable at all: not installed, or installed but broken (by itself)."""
    t = report.torch
    if t.installed or t.broken_by or t.did_not_answer:  # the two rules above explain those
        return []
    if t.import_error:
        return [
            Finding(
                "error",
                "torch-broken",
                f"torch is installed but fails to import ({t.import_error}), so no notebook of the "
                "course can run.",
                "Reinstall it in this environment: `make clean && make setup` in the course "
                f"folder, or `pip install --force-reinstall torch` (see {PYTORCH_INSTALL_URL}); "
                "a missing libcudnn or libcudart means the CUDA wheel's libraries are incomplete.",
            )
        ]
    return [
        Finding(
            "error",
            "torch-missing",
            "torch is not installed in this Python, so no notebook of the course can run.",
            "Run `make setup` in the course folder, or `pip install -e .` there "
            f"(or the command from {PYTORCH_INSTALL_URL}).",
        )
    ]


@rule
def rule_cpu_only_torch(report: HardwareReport) -> list[Finding]:
    """A CPU-only torch on a machine with an NVIDIA GPU."""
    if report.torch.build != "cpu-only" or not nvidia_present(report):
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
            f"torch {report.torch.version} is a CPU-only build, but {present_phrase(report)}"
            f"{which}; every notebook will run on the CPU.",
            f"Install a CUDA build of torch. On Linux the PyPI wheel is one: "
            f"`pip install --force-reinstall torch=={version}`. On Windows use the command from "
            f"{PYTORCH_INSTALL_URL}, e.g. `pip install --force-reinstall torch=={version} "
            f"--index-url https://download.pytorch.org/whl/cu128` (pick a cuXXX listed there"
            f"{limit}).",
        )
    ]


def _hides_all(report: HardwareReport, var: str, value: str) -> bool:
    """True when ``var=value`` leaves no GPU (an empty, "-1", unparseable or wrong list)."""
    if parse_visible_devices(value, var).hides_all:
        return True
    # A list of indices that do not exist hides everything too; NVML's filtered list shows it.
    return var == "CUDA_VISIBLE_DEVICES" and report.gpus_present > 0 and not report.gpus


@rule
def rule_gpus_hidden(report: HardwareReport) -> list[Finding]:
    """GPUs are present, but a *_VISIBLE_DEVICES variable hides every one of them."""
    nvidia, amd = nvidia_present(report), report.amd_device_files
    findings = []
    for var in VISIBILITY_VARS:
        value = report.visible_devices.get(var)
        if value is None:
            continue
        # HIP also honours CUDA_VISIBLE_DEVICES, so that one hides AMD GPUs too.
        affected = (nvidia or amd) if var == "CUDA_VISIBLE_DEVICES" else amd
        if affected and _hides_all(report, var, value):
            what = present_phrase(report) if nvidia else "an AMD GPU is present (/dev/kfd exists)"
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


def _driver_version(report: HardwareReport) -> tuple[str | None, str | None]:
    """(torch's CUDA version, the driver version) when the driver check applies, else Nones."""
    cuda = report.torch.cuda_version
    driver = next((g.driver_version for g in report.gpus if g.driver_version is not None), None)
    if report.torch.build != "cuda" or not cuda or driver is None:
        return None, None
    return cuda, driver


@rule
def rule_driver_version_unreadable(report: HardwareReport) -> list[Finding]:
    """The driver's version is not a version number, so the driver check cannot be made."""
    cuda, driver = _driver_version(report)
    if driver is None or _VERSION.fullmatch(driver.strip()):
        return []
    return [
        Finding(
            "warning",
            "driver-version-unreadable",
            f"The NVIDIA driver version reads {driver!r}, which is not a version number, so "
            f"whether it is new enough for the CUDA {cuda} in torch cannot be checked.",
            "Run `nvidia-smi` and read Driver Version at its top right (or `nvidia-smi "
            "--query-gpu=driver_version --format=csv`); if it shows N/A too or fails, reinstall "
            "the NVIDIA driver.",
        )
    ]


@rule
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
                f"Update the NVIDIA driver to {toolkit_min or compat_min} or newer "
                "(nvidia.com/drivers, or your distribution's nvidia-driver package), or install a "
                "torch built for an older CUDA that this driver supports.",
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


@checked
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


def _arch_finding(report: HardwareReport, gpu: GPUInfo) -> Finding:
    """The finding for one GPU that the build cannot run on."""
    cc = gpu.compute_capability or "?"
    sm = "sm_" + cc.replace(".", "")
    numbers = [p[1] * 10 + p[2] for p in map(_parse_arch, report.torch.arch_list) if p]
    newer = bool(numbers) and int(cc.replace(".", "")) > max(numbers)
    fix = (
        f"Install a newer torch built with a CUDA version that knows {sm} (see "
        f"{PYTORCH_INSTALL_URL}; Blackwell GPUs such as sm_120 need the cu128 wheels or newer)."
        if newer
        else f"This torch no longer ships kernels for {sm}: install an older torch release that "
        f"does, or use a newer GPU."
    )
    return Finding(
        "error",
        "arch-not-in-build",
        f"GPU {gpu.index} ({gpu.name}) has compute capability {cc} ({sm}), but torch "
        f"{report.torch.version} only has kernels for {' '.join(report.torch.arch_list)} "
        "and no PTX that can be compiled for it; CUDA calls will fail with "
        "'no kernel image is available'.",
        fix,
    )


@rule
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


@rule
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
