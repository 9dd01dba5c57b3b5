"""Build tooling of the course, by role; it imports gpulab, and gpulab never imports it.

- ``pipeline.py``: the command behind ``make book``, ``make site`` and ``make serve``
  (execute the notebooks, build the site, serve it).
- ``execution/``: the steps' progress lines and the notebooks' nbval references.
- ``staging/``: the site's editions, their words and static files.
- ``sphinx_ext/``: the Sphinx extensions the site is built with.
- ``checks/``: the notebook format check (``nbcheck.py``), typed figures, figure references,
  the catalogues' style.
- ``authoring/``: the exercises' rules, the labs' learner copies, renaming a figure.
- ``gpu_check/``: the check run on a lent GPU machine.
- ``notebook_meta.py`` (what every tool reads of a notebook and of ``_config.yml``),
  ``i18n.py`` (update and check the catalogues) and ``install_kernels.py`` (register the
  kernels) stay at the top: the translators' guide and the set-up pages name them there.
"""
