"""Path segments of the Cluster Manager's routes, validated before anything uses them."""

from __future__ import annotations

from flask import request
from werkzeug.exceptions import BadRequest
from werkzeug.routing import BaseConverter

from fplus.config_store.uuids import is_uuid


class _UuidConverter(BaseConverter):
    """A UUID path segment: any segment matches; a UUID in any case is taken lower-case,
    anything else answers 400 naming the segment (:attr:`what`)."""

    regex = "[^/]+"
    what = "uuid"

    def to_python(self, value: str) -> str:
        if not is_uuid(value.lower()):
            raise BadRequest(f"{self.what} must be a UUID, not {value[:80]!r}")
        return value.lower()


class ClusterConverter(_UuidConverter):
    """``<cluster:c>``."""

    what = "cluster"


class DeploymentConverter(_UuidConverter):
    """``<deployment:d>``."""

    what = "deployment"


class ChartConverter(_UuidConverter):
    """``<chart:t>``."""

    what = "chart"


class FleetConverter(_UuidConverter):
    """``<fleet:d>``."""

    what = "fleet deployment"


def only_query(*known: str) -> None:
    """400 for a query parameter the route does not know (a mistyped ``dryrun`` must not write)."""
    unknown = sorted(set(request.args) - set(known))
    if unknown:
        raise BadRequest(f"unknown query parameter(s) {', '.join(map(repr, unknown))[:200]}; "
                         f"this route takes {', '.join(known) or 'none'}")
