"""gpulab.measured: GPU figures are stored with provenance and read back by section."""

from __future__ import annotations

from gpulab import measured, record


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


def test_packaged_folder_holds_only_well_formed_files():
    """Every file shipped in data/measured/ names its GPU and has provenance per section."""
    for gpu, data in measured.load_all().items():
        for sec in data["sections"].values():
            assert {"gpu", "driver", "torch", "date", "command"} <= set(sec["provenance"]), gpu
