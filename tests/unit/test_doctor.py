"""Tests for gpulab.doctor: every rule on faked hardware reports, rendering and the command line."""

from __future__ import annotations

import json

import pytest
import torch

from gpulab import __main__ as cli
from gpulab import doctor, drivers
from gpulab.machine.doctor import Finding, diagnose
from gpulab.machine.hardware import CPUInfo, GPUInfo, HardwareReport, TorchInfo
from gpulab.reference.drivers import required_drivers

GIB = 1024**3
CPU_MACHINE = torch.version.cuda is None and torch.version.hip is None


# ------------------------------------------------------------------------- fake reports


def make_gpu(**overrides) -> GPUInfo:
    """A healthy RTX 4090 on driver 570.124.06, unless overridden."""
    values = dict(
        index=0,
        name="NVIDIA GeForce RTX 4090",
        memory_total_bytes=24 * GIB,
        memory_free_bytes=20 * GIB,
        driver_version="570.124.06",
        cuda_driver_version="12.8",
        compute_capability="8.9",
    )
    values.update(overrides)
    return GPUInfo(**values)


def cuda_torch(cuda: str = "12.8", arch_list=None, **overrides) -> TorchInfo:
    """A CUDA build of torch that sees its GPUs."""
    values = dict(
        installed=True,
        version=f"2.13.0+cu{cuda.replace('.', '')}",
        cuda_version=cuda,
        cuda_available=True,
        device_count=1,
        arch_list=["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
        if arch_list is None
        else arch_list,
        build="cuda",
    )
    values.update(overrides)
    return TorchInfo(**values)


def cpu_torch() -> TorchInfo:
    """The CPU-only torch of this project's CI machine."""
    return TorchInfo(installed=True, version="2.13.0+cpu", build="cpu-only")


def make_report(**overrides) -> HardwareReport:
    """A CPU-only machine with no GPU, unless overridden; ``gpus`` also sets gpus_present."""
    values = dict(
        os="Linux-6.8.0-x86_64-with-glibc2.39",
        python="3.11.7",
        torch=cpu_torch(),
        cpu=CPUInfo(
            model="Test CPU", physical_cores=4, logical_cores=8, vector_extensions=["AVX2"]
        ),
        ram_total_bytes=32 * GIB,
        ram_available_bytes=16 * GIB,
        gpus=[],
        backend="cpu",
        in_colab=False,
        visible_devices={},
        nvidia_device_files=False,
        notes=["NVML library not found (no NVIDIA driver installed?)"],
        gpus_present=0,
    )
    values.update(overrides)
    if "gpus_present" not in overrides:
        values["gpus_present"] = len(values["gpus"])
    return HardwareReport(**values)


def gpu_report(**overrides) -> HardwareReport:
    """A healthy CUDA machine with one GPU, unless overridden."""
    values = dict(
        torch=cuda_torch(), gpus=[make_gpu()], backend="cuda", nvidia_device_files=True, notes=[]
    )
    values.update(overrides)
    return make_report(**values)


def codes(report: HardwareReport) -> list[str]:
    return [f.code for f in diagnose(report)]


def only(report: HardwareReport, code: str) -> Finding:
    found = [f for f in diagnose(report) if f.code == code]
    assert len(found) == 1, diagnose(report)
    return found[0]


# ------------------------------------------------------------------------- healthy machines


def test_healthy_gpu_machine_has_no_findings():
    assert diagnose(gpu_report()) == []


def test_cpu_machine_only_gets_the_no_gpu_info():
    assert codes(make_report()) == ["no-gpu"]


# ------------------------------------------------------------------------- cpu-only-torch


def test_cpu_only_torch_with_nvml_gpu():
    report = make_report(gpus=[make_gpu()], gpus_present=1)
    f = only(report, "cpu-only-torch")
    assert f.severity == "error"
    assert "torch 2.13.0+cpu is a CPU-only build" in f.message
    assert "1 NVIDIA GPU is present (NVIDIA GeForce RTX 4090)" in f.message
    assert "pip install --force-reinstall torch==2.13.0" in f.fix
    assert "https://download.pytorch.org/whl/cu128" in f.fix
    assert "CUDA 12.8" in f.fix  # the driver's limit


def test_cpu_only_torch_with_device_files_only():
    f = only(make_report(nvidia_device_files=True), "cpu-only-torch")
    assert "/dev/nvidia* exists" in f.message


def test_cpu_only_torch_not_on_cuda_build():
    assert "cpu-only-torch" not in codes(gpu_report())


def test_cpu_only_torch_not_without_gpu():
    assert "cpu-only-torch" not in codes(make_report())


# ------------------------------------------------------------------------- gpus-hidden


@pytest.mark.parametrize("value", ["", "-1", "garbage"])
def test_gpus_hidden_by_cuda_visible_devices(value):
    report = make_report(
        torch=cuda_torch(cuda_available=False, device_count=0),
        gpus=[],
        gpus_present=2,
        visible_devices={"CUDA_VISIBLE_DEVICES": value},
    )
    f = only(report, "gpus-hidden")
    assert f.severity == "warning"
    assert f"2 NVIDIA GPUs are present, but CUDA_VISIBLE_DEVICES={value!r} hides all" in f.message
    assert "gpulab-cpu" in f.fix and "unset CUDA_VISIBLE_DEVICES" in f.fix


def test_gpus_hidden_by_indices_that_do_not_exist():
    report = make_report(gpus=[], gpus_present=2, visible_devices={"CUDA_VISIBLE_DEVICES": "5"})
    assert "gpus-hidden" in codes(report)


def test_gpus_not_hidden_by_a_valid_list():
    report = gpu_report(gpus_present=2, visible_devices={"CUDA_VISIBLE_DEVICES": "0"})
    assert "gpus-hidden" not in codes(report)


def test_gpus_hidden_needs_gpus():
    report = make_report(visible_devices={"CUDA_VISIBLE_DEVICES": ""})
    assert "gpus-hidden" not in codes(report)


def test_hip_variable_hides_amd_gpus():
    report = make_report(amd_device_files=True, visible_devices={"HIP_VISIBLE_DEVICES": "-1"})
    f = only(report, "gpus-hidden")
    assert "AMD GPU is present" in f.message and "HIP_VISIBLE_DEVICES='-1'" in f.message


def test_hip_variable_does_not_hide_nvidia_gpus():
    report = gpu_report(visible_devices={"HIP_VISIBLE_DEVICES": ""})
    assert "gpus-hidden" not in codes(report)


# ------------------------------------------------------------------------- driver-too-old


def with_driver(driver: str, cuda: str = "12.8", os: str = "Linux-6.8.0-x86_64") -> HardwareReport:
    return gpu_report(os=os, torch=cuda_torch(cuda), gpus=[make_gpu(driver_version=driver)])


def test_driver_below_major_minimum_is_an_error():
    f = only(with_driver("520.61.05"), "driver-too-old")
    assert f.severity == "error"
    assert "CUDA 12.8" in f.message and ">= 525" in f.message and "520.61.05" in f.message
    assert "570.26" in f.fix


def test_driver_below_toolkit_driver_is_a_warning():
    f = only(with_driver("560.35.03"), "driver-too-old")
    assert f.severity == "warning"
    assert ">= 570.26" in f.message and "minor version compatibility" in f.message


def test_driver_equal_to_toolkit_driver_is_fine():
    assert "driver-too-old" not in codes(with_driver("570.26"))


def test_driver_versions_compare_numerically():
    # As strings "570.124.06" < "570.26"; as numbers it is newer.
    assert "driver-too-old" not in codes(with_driver("570.124.06"))
    assert only(with_driver("570.9"), "driver-too-old").severity == "warning"


def test_cuda13_needs_580():
    f = only(with_driver("575.57.08", cuda="13.0"), "driver-too-old")
    assert f.severity == "error" and ">= 580" in f.message


def test_cuda118_on_old_driver():
    assert only(with_driver("450.51.06", cuda="11.8"), "driver-too-old").severity == "error"
    assert only(with_driver("470.82.01", cuda="11.8"), "driver-too-old").severity == "warning"


def test_windows_uses_the_windows_column():
    # 570.41 is below the Windows 12.8 toolkit driver (570.65) but above the Linux one (570.26).
    windows = with_driver("570.41", os="Windows-11-10.0.26100-SP0")
    assert only(windows, "driver-too-old").severity == "warning"
    assert "Windows driver 570.41" in only(windows, "driver-too-old").message
    assert "driver-too-old" not in codes(with_driver("570.41"))


def test_wsl_counts_as_windows():
    wsl = with_driver("570.41", os="Linux-5.15.153.1-microsoft-standard-WSL2-x86_64-with-glibc2.35")
    assert only(wsl, "driver-too-old").severity == "warning"


def test_driver_rule_skips_cpu_builds_and_unknown_drivers():
    assert "driver-too-old" not in codes(make_report(gpus=[make_gpu(driver_version="400.0")]))
    report = gpu_report(gpus=[make_gpu(driver_version=None)])
    assert "driver-too-old" not in codes(report)


def test_unknown_minor_uses_only_the_major_minimum():
    assert required_drivers("12.7", "linux") == ("525", None)
    assert "driver-too-old" not in codes(with_driver("560.35.03", cuda="12.7"))


# ------------------------------------------------------------------------- arch-not-in-build

OLD_ARCHS = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]


def with_arch(capability: str, arch_list: list[str]) -> HardwareReport:
    return gpu_report(
        torch=cuda_torch("12.4", arch_list=arch_list),
        gpus=[make_gpu(name="NVIDIA GeForce RTX 5090", compute_capability=capability)],
    )


def test_blackwell_on_old_build_is_an_error():
    f = only(with_arch("12.0", OLD_ARCHS), "arch-not-in-build")
    assert f.severity == "error"
    assert "compute capability 12.0 (sm_120)" in f.message and "sm_90" in f.message
    assert "no kernel image is available" in f.message
    assert "cu128" in f.fix


def test_arch_in_build():
    assert "arch-not-in-build" not in codes(with_arch("12.0", OLD_ARCHS + ["sm_120"]))


def test_same_major_lower_minor_cubin_runs():
    assert "arch-not-in-build" not in codes(with_arch("8.9", ["sm_80", "sm_86"]))


def test_ptx_can_jit_for_newer_gpu():
    assert "arch-not-in-build" not in codes(with_arch("12.0", OLD_ARCHS + ["compute_90"]))


def test_arch_specific_code_only_runs_on_its_gpu():
    assert "arch-not-in-build" not in codes(with_arch("9.0", ["sm_90a"]))
    assert "arch-not-in-build" in codes(with_arch("10.0", ["sm_90a", "compute_90a"]))


def test_gpu_too_old_for_build():
    f = only(with_arch("6.1", ["sm_75", "sm_80", "sm_90"]), "arch-not-in-build")
    assert "older torch" in f.fix


def test_arch_rule_needs_cuda_build_and_arch_list():
    assert "arch-not-in-build" not in codes(with_arch("12.0", []))
    cpu = make_report(gpus=[make_gpu(compute_capability="12.0")])
    assert "arch-not-in-build" not in codes(cpu)


# ------------------------------------------------------------------------- low-free-vram


def test_low_free_vram():
    report = gpu_report(gpus=[make_gpu(memory_free_bytes=GIB // 2)])
    f = only(report, "low-free-vram")
    assert f.severity == "warning"
    assert "0.5 GiB free of 24.0 GiB" in f.message and "GPU 0" in f.message


def test_enough_free_vram():
    assert "low-free-vram" not in codes(gpu_report(gpus=[make_gpu(memory_free_bytes=2 * GIB)]))


def test_unknown_free_vram_is_not_a_finding():
    assert "low-free-vram" not in codes(gpu_report(gpus=[make_gpu(memory_free_bytes=None)]))


# ------------------------------------------------------------------------- nvml-missing

NVML_NOT_FOUND = "NVML library not found (no NVIDIA driver installed?)"  # hardware's note


def test_nvml_missing_with_device_files():
    report = make_report(nvidia_device_files=True, notes=[NVML_NOT_FOUND])
    f = only(report, "nvml-missing")
    assert f.severity == "warning"
    assert "/dev/nvidia* exists" in f.message and "libnvidia-ml.so.1" in f.message
    assert "loader path" in f.message
    assert "ldconfig -p | grep libnvidia-ml" in f.fix and "LD_LIBRARY_PATH" in f.fix


def test_nvml_missing_not_without_device_files():
    assert "nvml-missing" not in codes(make_report(notes=[NVML_NOT_FOUND]))


def test_nvml_missing_not_when_nvml_failed_otherwise():
    driver_not_loaded = "NVIDIA driver is installed but not loaded (reboot, or check `nvidia-smi`)"
    report = make_report(nvidia_device_files=True, notes=[driver_not_loaded])
    assert "nvml-missing" not in codes(report)
    assert "nvml-missing" not in codes(gpu_report())  # NVML works: no such note


# ------------------------------------------------------------------------- gpu-memory-taken


def test_gpu_memory_taken_by_other_processes():
    report = gpu_report(gpus=[make_gpu(other_processes_memory_bytes=18 * GIB)])
    f = only(report, "gpu-memory-taken")
    assert f.severity == "warning"
    assert "18.0 GiB of the 24.0 GiB of GPU 0" in f.message and "75%" in f.message
    assert "nvidia-smi" in f.fix


def test_gpu_memory_half_taken_is_not_a_finding():
    report = gpu_report(gpus=[make_gpu(other_processes_memory_bytes=12 * GIB)])  # exactly 50%
    assert "gpu-memory-taken" not in codes(report)
    assert "gpu-memory-taken" not in codes(gpu_report(gpus=[make_gpu(memory_total_bytes=None)]))
    unknown = gpu_report(gpus=[make_gpu(other_processes_memory_bytes=None)])
    assert "gpu-memory-taken" not in codes(unknown)


# ------------------------------------------------------------------------- gpu-throttled


def throttled(reasons, utilization, **overrides) -> HardwareReport:
    gpu = make_gpu(throttle_reasons=reasons, utilization_gpu_percent=utilization, **overrides)
    return gpu_report(gpus=[gpu])


@pytest.mark.parametrize(
    "reason",
    ["SwPowerCap", "HwSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown", "SwThermalSlowdown"],
)
def test_gpu_throttled_under_load(reason):
    f = only(throttled([reason], 95), "gpu-throttled")
    assert f.severity == "warning"
    assert f"throttled under load by {reason}" in f.message and "95% busy" in f.message


def test_gpu_throttled_message_has_the_numbers():
    report = throttled(
        ["GpuIdle", "HwThermalSlowdown"],
        50,
        sm_clock_mhz=1800,
        max_sm_clock_mhz=3105,
        temperature_c=91.0,
        power_draw_w=300.0,
        power_limit_w=450.0,
    )
    f = only(report, "gpu-throttled")
    assert "by HwThermalSlowdown (50% busy; SM clock 1800 of 3105 MHz; 91 C; 300 W of a 450 W" in (
        f.message
    )
    assert "airflow" in f.fix and "nvidia-smi -q -d POWER,PERFORMANCE" in f.fix


def test_idle_gpu_clocking_down_is_not_a_finding():
    assert "gpu-throttled" not in codes(throttled(["GpuIdle"], 0))
    assert "gpu-throttled" not in codes(throttled(["GpuIdle"], 90))  # idle reason only
    assert "gpu-throttled" not in codes(throttled(["SwPowerCap"], 10))  # GPU nearly idle
    assert "gpu-throttled" not in codes(throttled(["SwPowerCap"], None))  # load unknown


def test_non_power_reasons_are_not_a_finding():
    assert "gpu-throttled" not in codes(throttled(["SyncBoost", "ApplicationsClocksSetting"], 99))
    assert "gpu-throttled" not in codes(throttled([], 99))
    assert "gpu-throttled" not in codes(throttled(None, 99))


# ------------------------------------------------------------------------- pcie-link-degraded


def pcie(gen, gen_max, width, width_max, utilization) -> HardwareReport:
    gpu = make_gpu(
        pcie_gen_current=gen,
        pcie_gen_max=gen_max,
        pcie_width_current=width,
        pcie_width_max=width_max,
        utilization_gpu_percent=utilization,
    )
    return gpu_report(gpus=[gpu])


def test_pcie_link_narrow_under_load():
    f = only(pcie(4, 4, 8, 16, 80), "pcie-link-degraded")
    assert f.severity == "warning"
    assert "gen 4 x8 while 80% busy, below its maximum gen 4 x16" in f.message
    assert "x16 slot" in f.fix


def test_pcie_link_slow_generation_under_load():
    f = only(pcie(3, 4, 16, 16, 50), "pcie-link-degraded")
    assert "gen 3 x16" in f.message and "maximum gen 4 x16" in f.message


def test_idle_pcie_link_stepped_down_is_not_a_finding():
    assert "pcie-link-degraded" not in codes(pcie(1, 4, 16, 16, 0))  # gen 1 at idle: power saving
    assert "pcie-link-degraded" not in codes(pcie(1, 4, 8, 16, 49))
    assert "pcie-link-degraded" not in codes(pcie(1, 4, 8, 16, None))


def test_full_pcie_link_under_load_is_not_a_finding():
    assert "pcie-link-degraded" not in codes(pcie(4, 4, 16, 16, 100))
    assert "pcie-link-degraded" not in codes(pcie(None, None, None, None, 100))


# ------------------------------------------------------------------------- old-gpu-for-bf16


@pytest.mark.parametrize("capability", ["7.5", "7.0", "6.1"])
def test_old_gpu_for_bf16(capability):
    report = gpu_report(gpus=[make_gpu(name="Tesla T4", compute_capability=capability)])
    f = only(report, "old-gpu-for-bf16")
    assert f.severity == "info"
    assert f"GPU 0 (Tesla T4) has compute capability {capability}, below 8.0" in f.message
    assert "bf16" in f.message and "FlashAttention" in f.message
    assert "float16" in f.fix and "EFFICIENT_ATTENTION" in f.fix


@pytest.mark.parametrize("capability", ["8.0", "8.6", "9.0", "12.0", None])
def test_ampere_and_newer_are_fine_for_bf16(capability):
    report = gpu_report(gpus=[make_gpu(compute_capability=capability)])
    assert "old-gpu-for-bf16" not in codes(report)


def test_old_gpu_rule_skips_rocm():
    rocm = gpu_report(backend="rocm", gpus=[make_gpu(name="AMD MI50", compute_capability="7.0")])
    assert "old-gpu-for-bf16" not in codes(rocm)


# ------------------------------------------------------------------------- low-free-ram


def test_low_free_ram():
    f = only(make_report(ram_available_bytes=int(1.5 * GIB)), "low-free-ram")
    assert f.severity == "warning"
    assert "Only 1.5 GiB of 32.0 GiB RAM is available" in f.message
    assert "data-loader workers and pinned memory" in f.message
    assert "num_workers" in f.fix


def test_enough_free_ram():
    assert "low-free-ram" not in codes(make_report(ram_available_bytes=2 * GIB))
    assert "low-free-ram" not in codes(make_report(ram_available_bytes=None))


# ------------------------------------------------------------------------- no-gpu and torch-missing


def test_no_gpu_says_why():
    f = only(make_report(), "no-gpu")
    assert f.severity == "info"
    assert "backend cpu" in f.message
    assert "NVML library not found (no NVIDIA driver installed?)" in f.message
    assert "every notebook runs on the CPU" in f.fix


def test_no_gpu_not_when_a_gpu_backend_works():
    assert "no-gpu" not in codes(gpu_report())


def test_no_gpu_not_when_gpus_are_present_but_unused():
    assert "no-gpu" not in codes(make_report(nvidia_device_files=True))


def test_torch_missing_is_an_error():
    report = make_report(torch=TorchInfo(installed=False, build="not installed"))
    assert only(report, "torch-missing").severity == "error"


# ------------------------------------------------------------------------- diagnose and render


def test_findings_are_sorted_by_severity():
    report = make_report(gpus=[make_gpu(memory_free_bytes=1)], gpus_present=1)
    assert [f.severity for f in diagnose(report)] == ["error", "warning"]


def test_render_text_with_an_error():
    report = make_report(gpus=[make_gpu()], gpus_present=1)
    text = doctor.render_text(report, diagnose(report))
    assert text.startswith(str(report))
    assert "\nFindings:\n[ERROR] cpu-only-torch: torch 2.13.0+cpu" in text
    assert "\n        fix: Install a CUDA build of torch." in text
    assert "No problems found." not in text


def test_render_text_without_problems():
    report = make_report()
    text = doctor.render_text(report, diagnose(report))
    assert "[INFO] no-gpu:" in text
    assert text.endswith("No problems found.")
    assert doctor.render_text(gpu_report(), []).endswith("Findings:\nNo problems found.")


def test_render_json():
    report = make_report(gpus=[make_gpu()], gpus_present=1)
    data = json.loads(doctor.render_json(report, diagnose(report)))
    assert data["exit_code"] == 1
    assert data["findings"][0]["code"] == "cpu-only-torch"
    assert data["report"]["backend"] == "cpu"


def test_findings_html_escapes():
    finding = Finding("warning", "x<y", "a <b> c", "d & e")
    page = doctor.findings_html([finding])
    assert "x&lt;y" in page and "a &lt;b&gt; c" in page and "d &amp; e" in page
    assert finding._repr_html_() == page
    assert "no problems found" in doctor.findings_html([])


def test_exit_code():
    assert doctor.exit_code([]) == 0
    assert (
        doctor.exit_code([Finding("warning", "w", "m", "f"), Finding("info", "i", "m", "f")]) == 0
    )
    assert doctor.exit_code([Finding("error", "e", "m", "f")]) == 1


# ------------------------------------------------------------------------- driver table


def test_driver_table_loads_and_every_row_has_a_source():
    table = drivers.load_driver_table()
    assert "cuda-toolkit-release-notes" in table["url"]
    rows = table["toolkit_drivers"] + table["minor_version_compatibility"]
    assert rows
    for row in rows:
        assert "CUDA Toolkit Release Notes" in row["source"]
    cudas = {row["cuda"] for row in table["toolkit_drivers"]}
    assert {"11.8", "12.0", "12.4", "12.6", "12.8", "12.9", "13.0"} <= cudas


def test_driver_table_is_consistent():
    table = drivers.load_driver_table()
    minimum = {row["major"]: row for row in table["minor_version_compatibility"]}
    for row in table["toolkit_drivers"]:
        major = int(row["cuda"].split(".")[0])
        for os_family in ("linux", "windows"):
            if row[os_family] is None:
                continue
            have = drivers.version_tuple(row[os_family])
            assert have >= drivers.version_tuple(minimum[major][os_family]), row


def test_required_drivers_lookup():
    assert required_drivers("12.8", "linux") == ("525", "570.26")
    assert required_drivers("12.8", "windows") == ("525", "570.65")
    assert required_drivers("13.0", "windows") == ("580", None)
    assert required_drivers("11.8", "linux") == ("450.80.02", "520.61.05")
    assert required_drivers("14.0", "linux") == (None, None)


# ------------------------------------------------------------------------- command line


def test_main_exit_code_is_1_with_an_error(monkeypatch, capsys):
    broken = make_report(gpus=[make_gpu()], gpus_present=1)
    monkeypatch.setattr(doctor, "detect", lambda: broken)
    assert doctor.main(["doctor"]) == 1
    assert "[ERROR] cpu-only-torch" in capsys.readouterr().out


def test_main_exit_code_is_0_with_warnings_only(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "detect", lambda: with_driver("560.35.03"))
    assert doctor.main([]) == 0
    assert "[WARNING] driver-too-old" in capsys.readouterr().out


@pytest.mark.skipif(not CPU_MACHINE, reason="checks the CPU-only machine of the CI")
def test_main_on_this_cpu_machine(capsys):
    assert doctor.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "backend         : cpu" in out
    assert "[INFO] no-gpu: No GPU was found, so the course runs on the CPU (backend cpu)." in out
    assert out.rstrip().endswith("No problems found.")


@pytest.mark.skipif(not CPU_MACHINE, reason="checks the CPU-only machine of the CI")
def test_main_json_on_this_cpu_machine(capsys):
    assert doctor.main(["doctor", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["report"]["backend"] == "cpu"
    assert data["exit_code"] == 0
    assert [f["code"] for f in data["findings"]] == ["no-gpu"]


def test_python_m_gpulab_doctor(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "detect", gpu_report)
    assert cli.main(["doctor"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("No problems found.")
    assert cli.main(["doctor", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []


def test_python_m_gpulab_unknown_command(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_python_m_gpulab_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    assert "doctor" in capsys.readouterr().out


def test_python_m_gpulab_without_command(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_the_bare_command_names_doctor(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([])
    assert exit_.value.code == 2 and "{doctor,fit,speed}" in capsys.readouterr().err


def test_an_unknown_doctor_option_shows_doctors_usage(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["doctor", "--bogus"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "usage: python -m gpulab doctor" in err and "unrecognized arguments: --bogus" in err


def test_a_rule_registered_with_the_decorator_runs_after_the_others(monkeypatch):
    """@rule appends to RULES, which diagnose runs in order; a rule cannot be added twice."""
    from gpulab.machine import rule_registry

    monkeypatch.setattr(rule_registry, "RULES", list(rule_registry.RULES))
    monkeypatch.setattr("gpulab.machine.doctor.RULES", rule_registry.RULES)

    def rule_always(report):
        return [Finding("info", "always", "A rule added in a test.", "Nothing to fix.")]

    assert rule_registry.rule(rule_always) is rule_always
    assert rule_registry.RULES[-1] is rule_always
    assert codes(make_report()) == ["no-gpu", "always"]
    with pytest.raises(ValueError, match="rule_always is registered twice"):
        rule_registry.rule(rule_always)
