"""Serving a WSGI app in-process with gunicorn; shared by every service. Imports nothing of ours.

Names are loaded on first use (PEP 562), so a command that only needs
:func:`configure_logging` (the edge agent) does not import Flask and gunicorn.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import http_exception_error, install_json_errors, json_error
    from .gunicorn import serve
    from .limits import refuse_oversized
    from .logs import configure_logging

_HOMES = {"configure_logging": "logs", "http_exception_error": "errors",
          "install_json_errors": "errors", "json_error": "errors", "refuse_oversized": "limits",
          "serve": "gunicorn"}

__all__ = ["configure_logging", "http_exception_error", "install_json_errors", "json_error",
           "refuse_oversized", "serve"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)
