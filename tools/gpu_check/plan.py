"""The steps of the GPU check, each with the seconds it is planned to take on one H200.

A session that is lent the device machine has 15 minutes of device time in all, one or two of
them spent starting it; the check is planned for 5 minutes so that a rerun fits. Each step runs
as its own process with a time limit (its plan plus half), writes its output to the log as it
runs and its result to the summary as it ends, and a step that fails does not stop the next.
The commands are run from the repository root, with "{python}" the device's own interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass

PLAN_S = 300  # the whole check, planned
DEVICE_BUDGET_S = 15 * 60  # a session's device time
START_S = 120  # starting the machine, counted in the device time
MAX_RETURNED_FILES = 8  # what a device call brings back from $OUT


@dataclass(frozen=True)
class Step:
    """One command of the check, what it proves, and its planned seconds."""

    name: str
    command: tuple[str, ...]
    planned_s: int
    proves: str

    def argv(self, python: str) -> list[str]:
        """The command with the interpreter filled in."""
        return [
            python if part == "{python}" else part.replace("{python}", python)
            for part in self.command
        ]

    @property
    def limit_s(self) -> int:
        """The step's hard time limit: its plan plus half."""
        return self.planned_s + self.planned_s // 2


STEPS = (
    Step(
        "doctor",
        ("{python}", "-m", "gpulab", "doctor"),
        10,
        "NVML parsing on a real driver, the driver/runtime check, the device gpulab picks",
    ),
    Step(
        "test-gpu",
        ("make", "test-gpu", "PYTHON={python}"),
        135,
        "the unit tests marked gpu, then every notebook on the gpulab kernel with device=cuda "
        "(quick): CUDA events, fp16/bf16/fp8 cells, host-to-device copies, out-of-memory "
        "recovery on a GPU, Triton's compiled kernels in lab 4",
    ),
    Step(
        "timing_fidelity",
        ("{python}", "benchmarks/timing_fidelity.py", "--device", "cuda"),
        20,
        "gpulab.timing against Triton's do_bench and torch.utils.benchmark",
    ),
    Step(
        "memory_accuracy",
        ("{python}", "benchmarks/memory_accuracy.py", "--device", "cuda"),
        20,
        "gpulab.memory's estimates against torch.cuda.max_memory_allocated",
    ),
    Step(
        "decode_bound",
        ("{python}", "benchmarks/decode_bound.py", "--device", "cuda"),
        20,
        "decode tokens/s against the bandwidth bound, and a bf16 training step's MFU",
    ),
    Step(
        "slow_loop",
        ("{python}", "benchmarks/slow_loop.py", "--device", "cuda"),
        20,
        "lab 5's slow and fixed loops timed on a GPU",
    ),
    Step(
        "gpu_rates",
        ("{python}", "benchmarks/gpu_rates.py", "--device", "cuda"),
        20,
        "the bf16 (and fp32, tf32, fp16) matrix-product sweep against the dense peaks, and "
        "lab 1's device copy against the spec sheet's bandwidth",
    ),
    Step(
        "triton_kernels",
        ("{python}", "benchmarks/triton_kernels.py", "--device", "cuda"),
        15,
        "lab 4's vector add, row softmax and tiled matmul compiled by Triton, against the peaks",
    ),
    Step(
        "nccl_smoke",
        (
            "{python}",
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node=1",
            "labs/07_distributed/allreduce_bench.py",
            "--backend",
            "nccl",
            "--quick",
        ),
        25,
        "torch.distributed with one NCCL rank: a smoke test only (one GPU cannot test a ring)",
    ),
)
INSTALL_S = 15  # installing the carried wheels, before the first step

# What comes back from $OUT: the log, the summary, the measured figures, the notebooks' times.
RETURNED = ("gpu_check.log", "summary.json", "<gpu>.json", "notebook_times.json")


def planned_total_s() -> int:
    """The check's planned seconds, the wheels' install included."""
    return INSTALL_S + sum(step.planned_s for step in STEPS)


def plan_problems() -> list[str]:
    """What is wrong with the time plan (empty when it fits)."""
    problems = []
    total = planned_total_s()
    if total > PLAN_S:
        problems.append(f"the steps are planned for {total} s, over the check's {PLAN_S} s")
    if START_S + 2 * PLAN_S > DEVICE_BUDGET_S:
        problems.append(
            f"a start and two runs of {PLAN_S} s do not fit {DEVICE_BUDGET_S} s of device time"
        )
    worst = INSTALL_S + sum(step.limit_s for step in STEPS)
    if worst > 600:
        problems.append(
            f"with every step at its limit the check takes {worst} s, over one call's 600 s"
        )
    if len(RETURNED) > MAX_RETURNED_FILES:
        problems.append(f"{len(RETURNED)} files to bring back, over {MAX_RETURNED_FILES}")
    names = [s.name for s in STEPS]
    if len(set(names)) != len(names):
        problems.append("two steps share a name")
    return problems
