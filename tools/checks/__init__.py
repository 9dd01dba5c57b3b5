"""Checks of the sources: the notebooks' format (``nbcheck``), typed figures, the pages' figure
references, the catalogues' style and the teaching checks (``teaching``).
``python tools/checks/<name>.py`` runs one."""
