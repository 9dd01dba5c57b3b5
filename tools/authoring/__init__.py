"""Authoring the notebooks: the exercises' rules and site blocks, and the labs' learner copies.

Code that writes and checks the course's notebooks, run by ``tools/checks/nbcheck.py`` and the
pipeline; it imports gpulab, and the package a learner installs never imports it.
"""
