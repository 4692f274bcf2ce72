"""Serving a WSGI app in-process with gunicorn; shared by every service. Imports nothing of ours."""

from .gunicorn import serve
from .limits import refuse_oversized

__all__ = ["refuse_oversized", "serve"]
