"""Request parsing: repo uuids (410 when malformed, as ACS) and paths for http-backend."""

from __future__ import annotations

from flask import request
from werkzeug.exceptions import BadRequest, Gone

from fplus.config_store.uuids import is_uuid


def repo_uuid(value: str) -> str:
    """``value`` if it is a repo uuid; 410 otherwise (it becomes a file path)."""
    if not is_uuid(value):
        raise Gone(f"malformed repo uuid {value!r}")
    return value


def backend_path(rest: str) -> str:
    """``rest`` if http-backend may see it; 400 for what it would answer 500 to."""
    if "\0" in rest:
        raise BadRequest("NUL in path")
    if any(part in (".", "..") for part in rest.split("/")):
        raise BadRequest("dot segments in path")
    if len(request.args.getlist("service")) > 1:
        raise BadRequest("more than one service parameter")
    return rest


def is_push(rest: str) -> bool:
    """Does the request run ``git-receive-pack`` (by path or by ``?service=``)?"""
    return (rest.endswith("git-receive-pack")
            or "git-receive-pack" in request.args.getlist("service"))
