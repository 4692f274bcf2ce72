"""Serving a WSGI app in-process with gunicorn; shared by every service. Imports nothing of ours."""

from .gunicorn import serve

__all__ = ["serve"]
