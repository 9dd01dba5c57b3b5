"""gpulab.core: errors, the validation layer and units, under everything else.

What it owns: ``GpulabConfigError`` (every bad-input error, with the field at fault), the
``@checked`` decorator and the annotation rules every public function states its inputs with,
and the units and number formatting the other layers share.

What it may import: the standard library only. Every other layer imports it.
"""
