"""gpulab.measured: GPU figures are stored with provenance and read back by section."""

from __future__ import annotations

import json

import pytest

from gpulab import measured, record
from gpulab.core.errors import GpulabConfigError
from tests.helpers import provenance_problems


def test_save_and_load_with_provenance(tmp_path):
    """Two sections for one GPU land in one file named after it, each with its provenance."""
    prov = record.provenance("NVIDIA H200", "570.86", "cuda", command="benchmarks/x.py")
    assert prov["torch"] and prov["date"] and prov["command"] == "benchmarks/x.py"
    path = measured.save("NVIDIA H200", "timing", {"matmul_tflops": 700.0}, prov, tmp_path)
    measured.save("NVIDIA H200", "decode", {"tokens_per_s": 10.0}, prov, tmp_path)
    assert path.name == "nvidia-h200.json"
    data = measured.load_all(tmp_path)["NVIDIA H200"]
    assert set(data["sections"]) == {"timing", "decode"}
    timing = measured.section("timing", tmp_path)
    assert timing["NVIDIA H200"]["figures"] == {"matmul_tflops": 700.0}
    assert timing["NVIDIA H200"]["provenance"]["driver"] == "570.86"


def test_packaged_folder_holds_only_figures_measured_on_a_gpu():
    """Every section shipped in data/measured/ has a full provenance that names a GPU device.

    CPU figures (a benchmark run here with --out, the tests' fixtures) never belong there.
    """
    files = sorted(measured.PACKAGED_DIR.iterdir())
    assert {f.name for f in files if f.suffix != ".json"} <= {"README.md"}
    for path in files:
        if path.suffix != ".json":
            continue
        data = json.loads(path.read_text())
        assert path.name == f"{measured.slug(data['gpu'])}.json"
        for name, sec in data["sections"].items():
            assert provenance_problems(sec["provenance"]) == [], (path.name, name)


def test_provenance_check_rejects_a_cpu_or_incomplete_provenance():
    """The check that guards data/measured/ fails for what must not be there."""
    good = record.provenance("NVIDIA H200", "570.86", "cuda", command="x.py")
    assert provenance_problems(good) == []
    cpu = record.provenance("AMD EPYC", None, "cpu", command="x.py")
    assert any("device='cpu'" in p for p in provenance_problems(cpu))
    assert provenance_problems(cpu, require_gpu=False) == []
    partial = {k: v for k, v in good.items() if k != "command"}
    assert provenance_problems(partial) == ["provenance lacks 'command'"]
    assert provenance_problems("not a dict") == ["provenance is not an object"]


def test_the_folder_can_be_pointed_elsewhere(monkeypatch, tmp_path):
    """GPULAB_MEASURED_DIR moves reads and writes; without it, the package's folder is used."""
    monkeypatch.delenv(measured.ENV_VAR, raising=False)
    assert measured.directory() == measured.PACKAGED_DIR
    monkeypatch.setenv(measured.ENV_VAR, str(tmp_path))
    assert measured.directory() == tmp_path
    prov = record.provenance("NVIDIA L4", "550.1", "cuda", command="x.py")
    measured.save("NVIDIA L4", "s", {"v": 1.0}, prov)
    assert measured.section("s") == {"NVIDIA L4": {"provenance": prov, "figures": {"v": 1.0}}}


def test_a_backend_is_verified_only_by_figures_measured_on_it(tmp_path):
    """Pages say 'not yet verified on this hardware' until a stored section was measured there."""
    assert measured.backend_status("cuda", tmp_path) == measured.NOT_VERIFIED
    prov = {
        "gpu": "NVIDIA H200",
        "device": "cuda",
        "driver": "580.159",
        "torch": "2.11.0+cu130",
        "cuda": "13.0",
        "date": "2026-12-01",
        "command": "benchmarks/gpu_rates.py",
    }
    measured.save("NVIDIA H200", "gpu_rates", {"x": 1}, prov, tmp_path)
    measured.save("NVIDIA H200", "decode_bound", {"x": 2}, {**prov, "date": "2026-12-02"}, tmp_path)
    assert (
        measured.backend_status("cuda", tmp_path)
        == "run on NVIDIA H200 (2026-12-02, torch 2.11.0+cu130)"
    )
    assert measured.backend_status("rocm", tmp_path) == measured.NOT_VERIFIED
    assert measured.backend_status("mps", tmp_path) == measured.NOT_VERIFIED
    with pytest.raises(GpulabConfigError, match="kind='metal'"):
        measured.backend_status("metal", tmp_path)


def test_a_benchmark_starts_with_its_options_its_device_and_this_machine():
    """record.start: the common options, a script's own, the device picked, the machine read."""
    args, device, report = record.start(
        "d",
        ["--device", "cpu", "--quick", "--rounds", "5"],
        lambda p: p.add_argument("--rounds", type=int, default=3),
    )
    assert args.quick and args.rounds == 5 and args.out is None
    assert str(device) == "cpu" and report.backend
    with pytest.raises(SystemExit):
        record.start("d", ["--bogus"])
