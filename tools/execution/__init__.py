"""Executing the notebooks: a run's configuration and files (``runs``), papermill on the
course's kernels (``executor``), the timing report (``report``), a step's one-line progress
(``step``) and the nbval references recorded from the executed copies (``references``)."""
