"""Build tooling of the course, by role; it imports gpulab, and gpulab never imports it.

- ``pipeline.py``: the command behind ``make book``, ``make site`` and ``make serve``.
- ``execution/``: a run, executing its notebooks, its timing report and nbval references.
- ``staging/``: staging, building and serving the site, the pages' pictures drawn to SVG.
- ``sphinx_ext/``: the Sphinx extensions the site is built with.
- ``checks/``: the notebook format check (``nbcheck.py``), typed figures, figure references and
  names, the catalogues' style, the teaching checks (``teaching.py``).
- ``authoring/``: the exercises' rules, the labs' learner copies (their solution blocks and
  hints), the Colab link tables, renaming a figure, the pages' pictures by name.
- ``gpu_check/``: the check run on a lent GPU machine.
- ``notebook_meta.py`` and ``editions.py``: what every role reads (a notebook's title and
  ``_config.yml``; each edition's language, folders and words).
- ``i18n.py`` (update and check the catalogues) and ``install_kernels.py`` (register the
  kernels) stay at the top: the translators' guide and the set-up pages name them there.
"""
