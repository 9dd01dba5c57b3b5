"""``gpulab fit`` and ``gpulab speed``: the newcomer's two questions, answered on the command line.

The answers are checked against hand derivations (weights = parameters x bits / 8, the KV
cache's product, a card's capacity = (reported - 0.5 GiB) / 1.05, the decode bound = bandwidth
/ bytes read per token), the typical range against the published runs' shares, and the errors
for their form: one line naming the option, exit status 2, no traceback.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab import __main__ as entry
from gpulab.estimate import memory, published_bounds
from gpulab.estimate.calculator import display_number
from gpulab.reference import models, specs

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
GIB = 2**30
MIB = 2**20
# GGUF Q4_K_M's bits per weight over Llama-2-7B (llama.cpp's quantize README); the whole file.
Q4_K_M_BITS = 4.84


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """The command line in-process: (exit status, stdout, stderr)."""
    try:
        code = entry.main(list(argv))
    except SystemExit as exit_:  # argparse's own usage errors and --help
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(capsys, *argv: str) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def kv_bytes(layers: int, kv_heads: int, head_dim: int, tokens: int, users: int = 1) -> int:
    """Keys and values, 2 bytes each (bf16): 2 x layers x kv heads x head dim x tokens."""
    return 2 * layers * kv_heads * head_dim * tokens * users * 2


# --------------------------------------------------------------------------- question 1: fit


def test_llama3_8b_on_an_rtx_4060_in_4_bit_with_8k_context(capsys):
    """'Will Llama-3-8B fit on my RTX 4060 8GB in 4-bit with 8k context?' by hand."""
    got = run_json(
        capsys, "fit", "Llama-3-8B", "--gpu", "RTX 4060", "--format", "q4_k_m", "--context", "8k"
    )
    params = models.CATALOGUE["Llama-3-8B"].published_params  # 8.03e9, as Meta publishes it
    weights = got["breakdown_bytes"]["weights"]
    assert weights == pytest.approx(params * Q4_K_M_BITS / 8, rel=1e-9)
    # Llama-3-8B: 32 layers, 8 KV heads of 128 (its config.json), 8,192 tokens
    assert got["breakdown_bytes"]["kv_cache"] == kv_bytes(32, 8, 128, 8192) == 2**30
    # nvidia-smi reports 8,188 MiB; less a 0.5 GiB CUDA context, over 1.05 for the slack
    assert got["memory_bytes"] == 8188 * MIB
    assert got["capacity_bytes"] == int((8188 * MIB - 512 * MIB) / 1.05)
    total = got["breakdown_bytes"]["total"]
    assert got["fits"] is (total <= got["capacity_bytes"]) is True
    assert got["headroom_bytes"] == got["capacity_bytes"] - total
    # Llama-3-8B is configured for 8,192 tokens: the whole of it fits
    assert got["largest_context"] == 8192 == got["max_position_embeddings"]
    assert got["command"] == "fit" and got["gpu"] == "RTX 4060" and got["context"] == 8192


def test_the_fit_text_shows_the_breakdown_the_verdict_and_what_fits(capsys):
    code, out, err = run(capsys, "fit", "Llama-3-8B", "--gpu", "RTX 4060", "--context", "8192")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "Llama-3-8B: q4_k_m weights, bf16 KV cache, 1 user x 8,192 tokens"
    assert lines[1] == "memory: RTX 4060, 8,188 MiB (8.59 GB) as its driver reports it"
    assert any(line.split() == ["KV", "cache", "1.07", "GB"] for line in lines)
    assert any(line.startswith("fits, with ") and line.endswith(" GB to spare") for line in lines)
    assert "largest context for 1 user: the model's full 8,192 tokens fit" in lines


def test_the_largest_context_is_the_boundary_of_what_fits(capsys):
    """Llama-3.1-8B (131,072 tokens configured) on an 8 GB card: the estimate at the answer
    fits, one token more does not."""
    got = run_json(capsys, "fit", "Llama-3.1-8B", "--gpu", "RTX 4060")
    n, budget = got["largest_context"], got["capacity_bytes"]
    spec = models.get("Llama-3.1-8B")
    assert 8192 < n < 131072
    assert memory.estimate_inference(spec, "q4_k_m", "bf16", 1, n).total <= budget
    assert memory.estimate_inference(spec, "q4_k_m", "bf16", 1, n + 1).total > budget
    users = got["largest_users"]
    assert memory.estimate_inference(spec, "q4_k_m", "bf16", users, 8192).total <= budget
    assert memory.estimate_inference(spec, "q4_k_m", "bf16", users + 1, 8192).total > budget


@pytest.mark.parametrize(
    "size, nbytes",
    [
        ("8GB", 8e9),
        ("8 GiB", 8 * GIB),
        ("12g", 12 * GIB),
        ("8188MiB", 8188 * MIB),
        ("8e9B", 8e9),
        ("0.5TB", 5e11),
        ("24 gb", 24e9),
    ],
)
def test_memory_sizes_read_as_their_units_say(capsys, size, nbytes):
    got = run_json(capsys, "fit", "Llama-3.2-1B", "--memory", size)
    assert got["memory_bytes"] == int(nbytes) and got["gpu"] is None
    # no card: what is left for tensors is the same rule as a card's
    assert got["capacity_bytes"] == int((int(nbytes) - 512 * MIB) / 1.05)


def test_a_memory_size_and_the_card_of_that_size_agree(capsys):
    """--memory 8188MiB is what an RTX 4060 reports: the same answer as --gpu 'RTX 4060'."""
    by_size = run_json(capsys, "fit", "Mistral-7B", "--memory", "8188MiB", "--format", "int4")
    by_card = run_json(capsys, "fit", "Mistral-7B", "--gpu", "RTX 4060", "--format", "int4")
    assert {k: v for k, v in by_size.items() if k != "gpu"} == {
        k: v for k, v in by_card.items() if k != "gpu"
    }


def test_a_config_json_path_is_read_as_the_model(capsys, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(models.CATALOGUE["Llama-3.2-1B"].config), encoding="utf-8")
    from_file = run_json(capsys, "fit", str(path), "--memory", "4GiB")
    from_name = run_json(capsys, "fit", "Llama-3.2-1B", "--memory", "4GiB")
    assert from_file["breakdown_bytes"] == from_name["breakdown_bytes"]
    assert from_file["largest_context"] == from_name["largest_context"]


def test_more_users_than_fit(capsys):
    got = run_json(capsys, "fit", "Qwen2.5-7B", "--gpu", "RTX 3060 12GB", "--users", "30")
    assert got["fits"] is False and got["users"] == 30
    # 28 layers, 4 KV heads of 128: every user holds a full context of KV cache
    assert got["breakdown_bytes"]["kv_cache"] == kv_bytes(28, 4, 128, 8192, 30)
    assert 0 < got["largest_users"] < 30


# --------------------------------------------------------------------------- question 2: speed


def _shares() -> list[float]:
    """measured / bound of every published decode run the course bounds (test_published checks
    those bounds by hand)."""
    return sorted(
        c.ratio
        for c in published_bounds.compare_all()
        if c.kind == "decode" and c.ratio is not None
    )


def test_qwen_7b_q4_k_m_on_an_rtx_4090(capsys):
    """'How many tokens/s for Qwen2.5-7B Q4_K_M on an RTX 4090?' by hand."""
    got = run_json(capsys, "speed", "Qwen2.5-7B", "--gpu", "RTX 4090", "--format", "Q4_K_M")
    params = models.CATALOGUE["Qwen2.5-7B"].published_params
    # Qwen2.5-7B: 28 layers, 4 KV heads of 128, hidden 3584, vocabulary 152,064, untied
    # embeddings: a step reads every weight once but only one row of the input embedding
    unread_rows = (152064 - 1) * 3584 * Q4_K_M_BITS / 8
    step = params * Q4_K_M_BITS / 8 - unread_rows + kv_bytes(28, 4, 128, 8192)
    assert got["bytes_per_step"] == pytest.approx(step, rel=1e-6)
    bound = 1008e9 / step
    assert got["bound_tokens_per_s_per_user"] == pytest.approx(bound, rel=1e-6)
    assert got["bound_tokens_per_s_total"] == got["bound_tokens_per_s_per_user"]
    shares = _shares()
    typical = got["typical_tokens_per_s_per_user"]
    assert typical["low"] == pytest.approx(bound * shares[0], rel=1e-6)
    assert typical["median"] == pytest.approx(bound * statistics.median(shares), rel=1e-6)
    assert typical["high"] == pytest.approx(bound * shares[-1], rel=1e-6)
    share = got["published_share_of_bound"]
    assert share["runs"] == len(shares) >= 10 and share["devices"] >= 10
    assert share["tool"] == "llama.cpp" and got["no_speed"] == ""
    # the card's own published runs, each beside its bound
    mine = [c for c in published_bounds.compare_all() if c.measurement.gpu == "RTX 4090"]
    assert [r["id"] for r in got["published_on_this_gpu"]] == [c.measurement.id for c in mine]
    assert {r["test"] for r in got["published_on_this_gpu"]} >= {"tg"}


def test_the_speed_text_gives_the_bound_the_typical_range_and_the_runs(capsys):
    code, out, err = run(capsys, "speed", "Qwen2.5-7B", "--gpu", "RTX 4090")
    assert code == 0 and err == ""
    bound = json.loads(run(capsys, "speed", "Qwen2.5-7B", "--gpu", "RTX 4090", "--json")[1])[
        "bound_tokens_per_s_per_user"
    ]
    shares = _shares()
    assert f"= {bound:.0f} tokens/s" in out
    typical = next(line for line in out.splitlines() if line.startswith("typical: "))
    assert typical == (
        f"typical: {display_number(bound * shares[0])} to "
        f"{display_number(bound * shares[-1])} tokens/s, median "
        f"{display_number(bound * statistics.median(shares))}"
    )
    assert f"that {len(shares)} published llama.cpp runs on " in out
    assert "published runs on the RTX 4090:" in out and "Llama 2 7B q4_0, tg (generation)" in out


def test_no_speed_without_a_fit(capsys):
    """Llama-3-70B in bf16 (141 GB of weights) on a 24 GB card: no number, it says why."""
    code, out, _ = run(capsys, "speed", "Llama-3-70B", "--gpu", "RTX 4090", "--format", "bf16")
    assert code == 0
    assert "decode: does not fit: no speed" in out and "does not fit:" in out
    assert "tokens/s" not in out.split("published runs")[0]
    got = run_json(capsys, "speed", "Llama-3-70B", "--gpu", "RTX 4090", "--format", "bf16")
    assert got["bound_tokens_per_s_total"] is None and got["typical_tokens_per_s_per_user"] is None
    assert got["no_speed"] == "does not fit: no speed" and got["fit"]["fits"] is False


def test_several_users_get_a_bound_but_no_typical_range(capsys):
    got = run_json(capsys, "speed", "Llama-3-8B", "--gpu", "H100 SXM", "--users", "10")
    per_user, total = got["bound_tokens_per_s_per_user"], got["bound_tokens_per_s_total"]
    assert total == pytest.approx(10 * per_user) and got["typical_tokens_per_s_per_user"] is None
    assert "one sequence" in got["no_typical"]


def test_a_card_without_published_runs_says_so(capsys):
    code, out, _ = run(capsys, "speed", "Llama-3.2-3B", "--gpu", "RTX 4060")
    assert code == 0 and "published runs on the RTX 4060: none in the course's data" in out


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["fit", "GPT-5", "--gpu", "RTX 4060"], "MODEL"),
        (["fit", "Llama-3-8B", "--gpu", "RTX 9999"], "--gpu"),
        (["speed", "Llama-3-8B", "--gpu", "Voodoo 2"], "--gpu"),
        (["fit", "Llama-3-8B", "--memory", "8"], "--memory"),
        (["fit", "Llama-3-8B", "--memory", "8 furlongs"], "--memory"),
        (["fit", "Llama-3-8B", "--memory", "0GB"], "--memory"),
        (["fit", "Llama-3-8B", "--memory", "1e40GB"], "--memory"),
        (["fit", "Llama-3-8B", "--memory=-8GB"], "--memory"),
        (["fit", "Llama-3-8B", "--gpu", "RTX 4060", "--format", "q3_k_s"], "--format"),
        (["speed", "Llama-3-8B", "--gpu", "RTX 4090", "--format", "int3"], "--format"),
        (["fit", "Llama-3-8B", "--gpu", "RTX 4060", "--kv-cache", "q8"], "--kv-cache"),
        (["fit", "Llama-3-8B", "--gpu", "RTX 4060", "--context", "0"], "--context"),
        (["fit", "Llama-3-8B", "--gpu", "RTX 4060", "--context", "lots"], "--context"),
        (["fit", "Llama-3-8B", "--gpu", "RTX 4060", "--users", "2.5"], "--users"),
        (["fit", "Llama-3-8B", "--gpu", "RTX 4060", "--memory", "8GB"], "--gpu"),
        (["fit", "/no/such/config.json", "--memory", "8GB"], "MODEL"),
    ],
)
def test_a_refused_value_is_one_line_naming_the_option_and_exit_2(capsys, argv, flag):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"python -m gpulab {argv[0]}: error: {flag}"), err


def test_a_config_that_is_no_model_names_model(capsys, tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "hidden_size": "big"}', encoding="utf-8")
    code, _, err = run(capsys, "fit", str(path), "--memory", "8GB")
    assert (
        code == 2 and err.startswith("python -m gpulab fit: error: MODEL=") and err.count("\n") == 1
    )


def test_a_gpu_near_miss_suggests_the_rows_it_may_mean(capsys):
    """'RTX 4060 Ti' comes in 8 GB and 16 GB: both are suggested; 'RTX 4060' is a row."""
    code, _, err = run(capsys, "fit", "Llama-3-8B", "--gpu", "RTX 4060 Ti")
    assert code == 2 and "did you mean 'RTX 4060 Ti 16GB' or 'RTX 4060 Ti 8GB'?" in err
    assert specs.get_gpu("RTX 4060").name == "RTX 4060"


def test_usage_errors_are_argparses_with_exit_2(capsys):
    code, _, err = run(capsys, "fit", "Llama-3-8B")  # neither --gpu nor --memory
    assert code == 2 and "one of --gpu NAME or --memory SIZE is required" in err
    code, _, err = run(capsys, "speed", "Llama-3-8B")
    assert code == 2 and "--gpu" in err
    code, _, err = run(capsys, "fit", "Llama-3-8B", "--memory", "8GB", "--bogus")
    assert code == 2 and "unrecognized arguments: --bogus" in err


def test_help_texts(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "{doctor,fit,speed}" in out and "how fast it generates" in out
    code, out, _ = run(capsys, "fit", "--help")
    assert code == 0 and all(
        o in out
        for o in (
            "--gpu",
            "--memory",
            "--format",
            "--context",
            "--users",
            "--json",
            "MODEL",
            "8GiB",
        )
    )
    code, out, _ = run(capsys, "speed", "--help")
    assert code == 0 and "typical range" in out and "published" in out


# --------------------------------------------------------------------------- the two ways in


def _subprocess(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run(
        list(argv), capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )


def test_python_m_gpulab_fit_in_a_subprocess():
    done = _subprocess(
        sys.executable, "-m", "gpulab", "fit", "Llama-3-8B", "--gpu", "RTX 4060", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["fits"] is True
    bad = _subprocess(sys.executable, "-m", "gpulab", "fit", "Llama-3-8B", "--memory", "8")
    assert bad.returncode == 2 and bad.stdout == "" and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("python -m gpulab fit: error: --memory=")


def test_the_installed_gpulab_script_runs_speed():
    """pyproject's [project.scripts] entry point is main here; the installed script calls it."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["gpulab"] == "gpulab.__main__:main"
    script = Path(sys.executable).parent / "gpulab"
    assert script.exists(), f"{script}: the package's console script is not installed"
    done = _subprocess(str(script), "speed", "Qwen2.5-7B", "--gpu", "RTX 4090")
    assert done.returncode == 0, done.stderr
    assert "decode bound: " in done.stdout and "typical: " in done.stdout
    bad = _subprocess(str(script), "speed", "Qwen2.5-7B", "--gpu", "RTX 9999")
    # the script names itself as the user typed it
    assert bad.returncode == 2 and bad.stderr.startswith("gpulab speed: error: --gpu=")
