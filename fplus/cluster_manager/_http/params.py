"""Path segments of the Cluster Manager's routes, validated before anything uses them."""

from __future__ import annotations

from flask import request
from werkzeug.exceptions import BadRequest
from werkzeug.routing import BaseConverter

from fplus.config_store.uuids import is_uuid


class ClusterConverter(BaseConverter):
    """``<cluster:c>``: any segment matches; a UUID in any case is taken lower-case, anything
    else answers 400."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        if not is_uuid(value.lower()):
            raise BadRequest(f"cluster must be a UUID, not {value[:80]!r}")
        return value.lower()


class FleetConverter(BaseConverter):
    """``<fleet:d>``: a fleet deployment UUID (any case, taken lower-case); else 400."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        if not is_uuid(value.lower()):
            raise BadRequest(f"fleet deployment must be a UUID, not {value[:80]!r}")
        return value.lower()


def only_query(*known: str) -> None:
    """400 for a query parameter the route does not know (a mistyped ``dryrun`` must not write)."""
    unknown = sorted(set(request.args) - set(known))
    if unknown:
        raise BadRequest(f"unknown query parameter(s) {', '.join(map(repr, unknown))[:200]}; "
                         f"this route takes {', '.join(known) or 'none'}")
