"""gpulab: the library behind the course "GPU Acceleration for AI, hands-on".

Each module has one concern (see DESIGN.md): ``hardware`` detects the machine,
``doctor`` turns that report into findings, ``labs`` checks exercises.
"""

__version__ = "0.1.0"
