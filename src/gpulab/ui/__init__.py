"""gpulab.ui: presentation over the layers below, with no logic of its own.

What it owns: text and HTML tables (``tables``), matplotlib figures (``plots``), ipywidgets
front ends (``widgets``), the static calculators of the built site (``calculators``) and the
``gpulab fit`` / ``gpulab speed`` commands (``cli``). What any of them shows is computed
below; these modules only lay it out.

What it may import: ``bench``, ``estimate``, ``machine``, ``reference`` and ``core``; never
``gpulab.course``.
"""
