"""Checks of the sources: the notebooks' format (``nbcheck``), typed figures, the pages' figure
references and the catalogues' style. ``python tools/checks/<name>.py`` runs one."""
