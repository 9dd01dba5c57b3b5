"""Executing the notebooks: the steps' one-line progress, and the nbval references they record."""
