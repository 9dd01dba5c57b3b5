"""gpulab.reference: data with sources, and the small lookups over it.

What it owns: the GPU and CPU spec tables (``specs``), the model catalogue and ``ModelSpec``
(``models``, ``modelspec``, ``hf_config``), number formats and precision recipes
(``formats``), NVIDIA's driver table (``drivers``), link and disk line rates (``links``), and
the figures measured on GPUs with their provenance (``measured``), and published measurements
from outside the course (``published``, ``published_memory``). Every figure here names where it
comes from.

What it may import: ``gpulab.core`` and the standard library; never torch or numpy, so it
runs in a browser (Pyodide). An import-linter contract in ``make test`` enforces both.
"""
