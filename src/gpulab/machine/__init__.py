"""gpulab.machine: what this machine is, and what is wrong with it.

What it owns: detection (``hardware.detect``, assembled from the readers ``nvml``,
``torch_probe``, ``host`` and ``visible`` into a ``report``), the device a notebook asks for
(``device.pick_device``), the CPU's and this device's peaks (``peaks``), the doctor and its
rules (``doctor``, ``rules``), the versions of a CUDA setup (``versions``), clocks and
throttling under load (``monitor``), how much memory an experiment may take (``budget``) and
what to do next (``next_steps``).

What it may import: ``gpulab.reference`` and ``gpulab.core`` (and torch, NVML, psutil);
never ``gpulab.estimate``, its sibling, nor any layer above.
"""
