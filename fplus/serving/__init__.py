"""Serving a WSGI app in-process with gunicorn; shared by every service. Imports nothing of ours.

Names are loaded on first use (PEP 562), so a command that only needs
:func:`configure_logging` (the edge agent) does not import Flask and gunicorn.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bodyread import BodyTimeout
    from .dburl import redacted
    from .errors import http_exception_error, install_json_errors, json_error
    from .gunicorn import Served, serve
    from .httperror import HttpError
    from .httplimits import HttpLimits, http_limits
    from .jsondoc import JSONRejected, loads_checked
    from .limits import refuse_oversized
    from .login import Login, service_login, warn_if_seeded
    from .logs import configure_logging
    from .ports import bind_port, in_use_message, taken_ports
    from .startup import config_store_failure, require_credentials

_HOMES = {"BodyTimeout": "bodyread", "HttpError": "httperror", "HttpLimits": "httplimits",
          "JSONRejected": "jsondoc",
          "Login": "login", "Served": "gunicorn", "bind_port": "ports",
          "config_store_failure": "startup",
          "configure_logging": "logs", "http_exception_error": "errors",
          "http_limits": "httplimits", "in_use_message": "ports",
          "install_json_errors": "errors", "json_error": "errors", "loads_checked": "jsondoc",
          "redacted": "dburl", "refuse_oversized": "limits",
          "require_credentials": "startup", "serve": "gunicorn",
          "service_login": "login", "taken_ports": "ports",
          "warn_if_seeded": "login"}

__all__ = ["BodyTimeout", "HttpError", "HttpLimits", "JSONRejected", "Login", "Served", "bind_port",
           "config_store_failure", "configure_logging", "http_exception_error", "http_limits",
           "in_use_message", "install_json_errors", "json_error", "loads_checked",
           "redacted", "refuse_oversized", "require_credentials", "serve", "service_login",
           "taken_ports",
           "warn_if_seeded"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)
