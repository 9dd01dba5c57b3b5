"""gpulab.bench: code that runs kernels and times them.

What it owns: correct timing (``timing``), measurement sweeps (``measure``), memory probes
(``memprobe``) on models built with random weights (``torch_models``), generation and
training steps (``generation``), attention (``attention``), hidden syncs (``syncs``),
batching (``batching``), out-of-memory experiments (``oom``), quantization on tensors
(``quantize``), image and embedding workloads (``workloads``), checkpoint loading
(``loading``), torch.compile (``compiled``), Triton support (``triton_support``), torchrun
launches and their failures (``launch``, ``launch_errors``), and the helpers they share: the
autocast recipes (``precision``), progress bars (``progress``), silencing C++ output
(``quiet``) and a measurement's provenance (``record``).

What it may import: ``estimate``, ``machine``, ``reference`` and ``core`` (and torch).
"""
