"""What every service shares to serve: HTTP (:mod:`.http`), notify/v2 (:mod:`.notify`),
start-up (:mod:`.startup`), background work (:mod:`.background`) and its databases
(:mod:`.db`). Imports nothing of ours.

The names most used are here too, loaded on first use (PEP 562), so a command that only needs
:func:`configure_logging` (the edge agent) does not import Flask and gunicorn.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .db.dburl import redacted
    from .http.bodyread import BodyTimeout
    from .http.errors import http_exception_error, install_json_errors, json_error
    from .http.gunicorn import Served, serve
    from .http.httperror import HttpError
    from .http.httplimits import HttpLimits, http_limits
    from .http.jsondoc import JSONRejected, loads_checked
    from .http.limits import refuse_oversized
    from .http.ports import bind_port, in_use_message, taken_ports
    from .startup.failures import config_store_failure, require_credentials
    from .startup.login import Login, service_login, warn_if_seeded
    from .startup.logs import configure_logging

_HOMES = {"BodyTimeout": "http.bodyread", "HttpError": "http.httperror",
          "HttpLimits": "http.httplimits", "JSONRejected": "http.jsondoc",
          "Login": "startup.login", "Served": "http.gunicorn", "bind_port": "http.ports",
          "config_store_failure": "startup.failures", "configure_logging": "startup.logs",
          "http_exception_error": "http.errors", "http_limits": "http.httplimits",
          "in_use_message": "http.ports", "install_json_errors": "http.errors",
          "json_error": "http.errors", "loads_checked": "http.jsondoc", "redacted": "db.dburl",
          "refuse_oversized": "http.limits", "require_credentials": "startup.failures",
          "serve": "http.gunicorn", "service_login": "startup.login", "taken_ports": "http.ports",
          "warn_if_seeded": "startup.login"}

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
