"""The site, from a run's executed notebooks: a book source tree staged per edition (``stage``,
with what each notebook's site copy gets, ``site_copy``), built with Jupyter Book (``build``)
and served on 127.0.0.1 (``serve``); ``static/`` holds the course's own stylesheet and scripts."""
