"""Serving a WSGI app in-process with gunicorn; shared by every service. Imports nothing of ours."""

from .errors import http_exception_error, install_json_errors, json_error
from .gunicorn import serve
from .limits import refuse_oversized

__all__ = ["http_exception_error", "install_json_errors", "json_error", "refuse_oversized", "serve"]
