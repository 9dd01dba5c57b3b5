"""gpulab.launch: torchrun from Python, with time limits and each rank's error.

The job tests run real 2-process gloo jobs on the CPU (a few seconds each): a job that
succeeds, a rank that raises, a rank killed by SIGKILL while the other waits in a collective,
and a hung job that the time limit kills. The last two run the lab's own scripts.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from gpulab import launch, launch_errors
from gpulab.bench.launch import DistributedJobError, parse_failure_summary, plan_job, run_torchrun
from gpulab.core.errors import GpulabConfigError

LAB = Path(__file__).resolve().parents[2] / "labs" / "07_distributed"

TINY = textwrap.dedent("""
    import argparse, os, signal, sys, time
    import torch, torch.distributed as dist
    from torch.distributed.elastic.multiprocessing.errors import record

    sys.path.insert(0, sys.argv[3])
    import distlab  # the lab's own set-up: it leaves the group also when a rank raises

    @record
    def main():
        mode, timeout = sys.argv[1], float(sys.argv[2])
        with distlab.session(argparse.Namespace(backend="gloo", timeout=timeout)) as ctx:
            t = torch.ones(4)
            dist.all_reduce(t)
            print(f"rank {ctx.rank} sum {t[0].item()}", file=sys.stderr, flush=True)
            if ctx.rank == 1 and mode == "raise":
                raise ValueError("rank one gives up")
            if ctx.rank == 1 and mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if mode == "hang":
                time.sleep(3600)
            dist.all_reduce(t)  # rank 0 waits here for rank 1

    main()
""")


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.py"
    path.write_text(TINY)
    return path


# ---------------------------------------------------------------- plans and parsing


def test_plan_uses_nccl_with_two_or_more_gpus():
    """One process per GPU with NCCL; gloo x2 on the CPU otherwise, and it says why."""
    assert plan_job("cuda", 4, True) == launch.JobPlan(
        "nccl", 4, "cuda", "4 CUDA GPUs: NCCL, one process per GPU"
    )
    one = plan_job("cuda", 1, True)
    assert (one.backend, one.nproc, one.device) == ("gloo", 2, "cpu")
    assert "one CUDA GPU" in one.note
    assert plan_job("cuda", 2, False).backend == "gloo"
    assert plan_job("cpu", 0, False, cpu_procs=3).nproc == 3
    assert "mps" in plan_job("mps", 0, False).note


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(gpu_count=-1), "gpu_count"),
        (dict(gpu_count=1.5), "gpu_count"),
        (dict(cpu_procs=0), "cpu_procs"),
    ],
)
def test_plan_bad_inputs(kwargs, field):
    """Bad counts name the field."""
    with pytest.raises(GpulabConfigError, match=field):
        plan_job(**{"device_type": "cpu", "gpu_count": 0, "nccl_available": False, **kwargs})


SUMMARY = textwrap.dedent("""\
    torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
    ============================================================
    tiny.py FAILED
    ------------------------------------------------------------
    Failures:
    [1]:
      time      : 2026-11-30_05:26:29
      host      : localhost
      rank      : 0 (local_rank: 0)
      exitcode  : -15 (pid: 14085)  (SIGTERM)
      error_file: /tmp/x/attempt_0/0/error.json
      traceback : Traceback (most recent call last):
        File "tiny.py", line 18, in main
          dist.all_reduce(t)
      RuntimeError: Connection reset by peer

    ------------------------------------------------------------
    Root Cause (first observed failure):
    [0]:
      time      : 2026-11-30_05:26:29
      host      : localhost
      rank      : 1 (local_rank: 1)
      exitcode  : -9 (pid: 14086)  (SIGKILL)
      error_file: <N/A>
      traceback : Signal 9 (SIGKILL) received by PID 14086
    ============================================================
""")


def test_parse_failure_summary():
    """torchrun's summary gives each rank's exit code and error, root cause first."""
    root, other = parse_failure_summary(SUMMARY)
    assert (root.rank, root.exitcode, root.error, root.root_cause) == (
        1,
        -9,
        "killed by SIGKILL",
        True,
    )
    assert (other.rank, other.exitcode, other.root_cause) == (0, -15, False)
    assert other.error == "RuntimeError: Connection reset by peer"
    assert "dist.all_reduce(t)" in other.traceback
    assert parse_failure_summary("no summary here") == []


def test_a_rank_stopped_by_torchrun_is_not_the_cause(tmp_path):
    """When torchrun names a SIGTERMed rank first, the rank that really failed comes first."""
    swapped = SUMMARY.replace("-9 (pid", "-15 (pid").replace("-15 (pid: 14085)", "1 (pid: 14085)")
    failures = launch_errors.job_failures(swapped, tmp_path)
    assert [(f.rank, f.root_cause) for f in failures] == [(0, True), (1, False)]


LOST_PEER = textwrap.dedent("""\
    Failures:
    [1]:
      time      : 2026-11-30_05:26:29
      rank      : 1 (local_rank: 1)
      exitcode  : 1 (pid: 14086)
      error_file: /tmp/x/attempt_0/1/error.json
      traceback : Traceback (most recent call last):
        File "tiny.py", line 15, in work
          raise ValueError("rank one gives up")
      ValueError: rank one gives up
    ------------------------------------------------------------
    Root Cause (first observed failure):
    [0]:
      time      : 2026-11-30_05:26:29
      rank      : 0 (local_rank: 0)
      exitcode  : 1 (pid: 14085)
      error_file: /tmp/x/attempt_0/0/error.json
      traceback : Traceback (most recent call last):
        File "tiny.py", line 18, in work
          dist.all_reduce(t)
      RuntimeError: [gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:21682
    ============================================================
""")


def test_a_rank_that_lost_its_peer_is_not_the_cause(tmp_path):
    """Rank 0 raised only because rank 1 went away: rank 1 is the cause, whatever the order."""
    assert parse_failure_summary(LOST_PEER)[0].rank == 0  # torchrun's order: the same second
    failures = launch_errors.job_failures(LOST_PEER, tmp_path)
    assert [(f.rank, f.root_cause) for f in failures] == [(1, True), (0, False)]
    assert failures[0].error == "ValueError: rank one gives up"


def test_command_uses_this_python():
    """The venv's torch runs the job, torchrun never restarts it, and logs go to log_dir."""
    cmd = launch.torchrun_command("s.py", ["--x", 1], 3, "/tmp/logs")
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert "--nproc-per-node=3" in cmd and "--max-restarts=0" in cmd
    assert "--log-dir=/tmp/logs" in cmd and cmd[-3:] == ["s.py", "--x", "1"]


def test_bad_arguments(tiny, tmp_path):
    """A missing script, a zero rank count or a zero time limit raise before anything runs."""
    with pytest.raises(GpulabConfigError, match="script"):
        run_torchrun(tmp_path / "missing.py")
    with pytest.raises(GpulabConfigError, match="nproc"):
        run_torchrun(tiny, nproc=0)
    with pytest.raises(GpulabConfigError, match="timeout_s"):
        run_torchrun(tiny, timeout_s=0)


# ---------------------------------------------------------------- real jobs (2 gloo ranks)


def test_a_job_that_succeeds(tiny):
    """Both ranks all-reduce ones: each prints sum 2, and the result says ok."""
    r = run_torchrun(tiny, ["ok", "30", LAB], nproc=2, timeout_s=60)
    assert r.ok and r.returncode == 0 and not r.failures
    assert "sum 2.0" in r.rank_output[0] and "sum 2.0" in r.rank_output[1]


def test_a_rank_that_raises_surfaces_its_error(tiny):
    """Rank 1's exception, with its traceback, is in the error; rank 0 does not hang.

    check=False returns the failed result; DistributedJobError(result) is what check=True raises.
    """
    # Rank 0's collective would wait 600 s: the job ends within the launcher's 60 s only
    # because torchrun stops it once rank 1 has failed (not timed_out is the proof).
    result = run_torchrun(tiny, ["raise", "600", LAB], nproc=2, timeout_s=60, check=False)
    assert not result.ok and result.returncode != 0 and not result.timed_out
    assert result.root_cause.rank == 1 and result.root_cause.exitcode == 1
    assert result.root_cause.error == "ValueError: rank one gives up"
    assert 'raise ValueError("rank one gives up")' in result.root_cause.traceback
    assert [f.rank for f in result.failures] == [1, 0]  # rank 0 failed too, second
    message = str(DistributedJobError(result))
    assert "rank 1 failed first (exit code 1): ValueError: rank one gives up" in message
    assert "rank 1's traceback" in message


def test_a_killed_rank_ends_the_job(tiny):
    """Rank 1 SIGKILLed while rank 0 waits in an all-reduce: the job ends, naming the signal."""
    with pytest.raises(DistributedJobError, match="rank 1 failed first.*SIGKILL") as info:
        run_torchrun(tiny, ["kill", "600", LAB], nproc=2, timeout_s=60)
    assert not info.value.result.timed_out  # ended by the failure, not by the time limit


def test_a_hung_job_is_killed_at_the_time_limit(tiny):
    """Both ranks sleep: the launcher kills the job at its limit, and no worker survives."""
    import psutil

    with pytest.raises(DistributedJobError, match="did not finish within its 8 s limit") as info:
        run_torchrun(tiny, ["hang", "600", LAB], nproc=2, timeout_s=8, grace_s=2)
    result = info.value.result
    assert result.timed_out and result.returncode is None
    assert result.wall_s >= 8  # killed at the limit, not before it
    leftovers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if str(tiny) in " ".join(p.info["cmdline"] or [])
    ]
    assert leftovers == []


def test_train_script_failing_rank_surfaces():
    """The lab's training script: rank 1 raises at step 0; its message ends the job."""
    with pytest.raises(
        DistributedJobError, match="injected failure: rank 1 raised at step 0"
    ) as info:
        launch.run_json(
            LAB / "train.py",
            [
                "--quick",
                "--strategies",
                "ddp",
                "--timeout",
                "30",
                "--fail-rank",
                "1",
                "--fail-step",
                "0",
            ],
            nproc=2,
            timeout_s=60,
        )
    root = info.value.result.root_cause
    assert (root.rank, root.exitcode) == (1, 1)  # it exits with its error, not an abort


def test_benchmark_script_killed_rank_ends_in_time():
    """The lab's all-reduce benchmark: rank 0 SIGKILLed at the second size; rank 1 is freed."""
    with pytest.raises(DistributedJobError, match="rank 0 failed first.*SIGKILL") as info:
        launch.run_json(
            LAB / "allreduce_bench.py",
            [
                "--quick",
                "--timeout",
                "600",
                "--fail-rank",
                "0",
                "--fail-step",
                "1",
                "--fail-mode",
                "kill",
            ],
            nproc=2,
            timeout_s=90,
        )
    assert not info.value.result.timed_out  # rank 1 was freed, not left for its 600 s timeout
