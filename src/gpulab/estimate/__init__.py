"""gpulab.estimate: pure formulas, from a model and a GPU's spec sheet to bytes, FLOPs and seconds.

What it owns: memory estimates and what fits (``memory``, ``finetune`` for full, LoRA and
QLoRA fine-tuning recipes), decode, prefill and training
bounds (``perf``), the roofline and the work of common operations (``roofline``), training
and inference across GPUs (``parallel``, ``serving``, ``collectives``), the OOM levers
(``levers``), hardware choice, cost and power (``choose``, ``cost``, ``power``) and the
calculators' logic (``calculator``).

What it may import: ``gpulab.reference`` and ``gpulab.core``; never ``gpulab.machine`` (it
does not look at this machine), and never torch or numpy, so the same code runs in a browser
(Pyodide). Import-linter contracts in ``make test`` enforce this.
"""
