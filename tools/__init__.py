"""Build tooling of the course: the notebook execution pipeline, the site build, format checks."""
