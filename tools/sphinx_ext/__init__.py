"""The course's Sphinx extensions, loaded by module path (``_config.yml``, local_extensions).

``claims`` ({claim}, {verdict}), ``figures`` ({fig}), ``i18n`` (the editions' catalogues and
language button), ``numbers`` (exercises per page, a number kept with its unit) and ``site``
(the theme's scripts and the course's stylesheet).
"""
