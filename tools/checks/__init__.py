"""Checks of the sources: the notebooks' format, typed figures and the pages' figure references.

Each runs as a script (``python tools/checks/<name>.py``).
"""
