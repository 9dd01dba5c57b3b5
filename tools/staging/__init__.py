"""Staging the site: each edition's words and folders, and the course's own static files."""
