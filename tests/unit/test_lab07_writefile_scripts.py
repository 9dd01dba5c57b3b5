"""Lab 7's scripts that the learner reads in `%%writefile` cells, run as the lab runs them.

Each script is taken from the lab's cell (the code after the magic line, as IPython writes it),
started on two gloo ranks through gpulab.launch, and its output checked against an oracle that
does not come from the script: the element-wise sum of the ranks' tensors, one SGD step of one
process on the whole batch, the sum 1 + 2 + ... + n that every all-reduce must leave, and the rank
that fails first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gpulab import launch

LAB = Path(__file__).resolve().parents[2] / "labs" / "07_torch_distributed_lab.ipynb"
SCRIPTS = ("allreduce_sum.py", "ddp_step.py", "allreduce_timing.py", "fail_at_step.py")


def _scripts() -> dict[str, str]:
    """The lab's `%%writefile {work}/<name>` cells, by file name: the script each writes."""
    out = {}
    for cell in json.loads(LAB.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        first, _, rest = source.partition("\n")
        if cell["cell_type"] == "code" and first.startswith("%%writefile {work}/"):
            out[first.rsplit("/", 1)[1].strip()] = rest + "\n"
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lab07")
    for name, script in _scripts().items():
        (folder / name).write_text(script, encoding="utf-8")
    return folder


def test_the_lab_writes_its_scripts_in_cells():
    assert set(_scripts()) == set(SCRIPTS)


def test_the_all_reduce_is_the_sum(written):
    result, _ = launch.run_json(written / "allreduce_sum.py", [], 2, 120)
    parts = torch.tensor(result["parts"])
    assert result["world"] == 2
    assert parts[0].tolist() != parts[1].tolist()  # each rank started from its own tensor
    assert result["total"] == (parts[0] + parts[1]).tolist()


def test_one_ddp_step_is_one_step_on_the_whole_batch(written):
    weights, _ = launch.run_json(written / "ddp_step.py", [], 2, 120)
    ranks = torch.tensor(weights)
    assert torch.equal(ranks[0], ranks[1])  # bit for bit
    torch.manual_seed(0)  # the script's data and start, on one process
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    alone = torch.nn.Linear(4, 1)
    before = torch.cat([p.detach().reshape(-1).clone() for p in alone.parameters()])
    torch.nn.functional.mse_loss(alone(x), y).backward()
    torch.optim.SGD(alone.parameters(), lr=0.1).step()
    after = torch.cat([p.detach().reshape(-1) for p in alone.parameters()])
    assert not torch.allclose(after, before)  # the step moved the weights
    assert torch.allclose(ranks[0], after, atol=1e-6)


def test_the_benchmark_times_every_size_and_checks_the_sums(written):
    result, _ = launch.run_json(
        written / "allreduce_timing.py", ["--backend", "gloo", "--quick"], 2, 180
    )
    rows = result["rows"]
    assert [r["bytes"] for r in rows] == [4096 * 4**k for k in range(len(rows))]
    assert rows[-1]["bytes"] == 4 * 2**20  # the quick run's largest message
    assert all(r["correct"] and r["seconds"] > 0 and r["iters"] >= 3 for r in rows)


@pytest.mark.parametrize(("mode", "first"), [("raise", 1), ("kill", 1)])
def test_the_failing_rank_is_named(written, mode, first):
    args = ["--backend", "gloo", "--fail-mode", mode, "--timeout", "30"]
    with pytest.raises(launch.DistributedJobError) as caught:
        launch.run_json(written / "fail_at_step.py", args, 2, 120)
    result = caught.value.result
    assert result.root_cause is not None and result.root_cause.rank == first
    assert not result.timed_out and result.wall_s < 60
    if mode == "raise":
        assert "injected failure: rank 1 raised at step 2" in str(caught.value)
