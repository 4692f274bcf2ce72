"""The Directory's service lookup: ``GET /v1/service/<uuid>`` (ACS Directory v4 shape).

A Factory+ client given only the Directory URL finds every service here: the answer is a
list of one record ``{service, url}``, or 404 for a service nobody provides. The URLs come
from the Service URL app (``5ef70c20-…``, ours), where each service writes its own at start
(the Git server and the Cluster Manager as their own principals, each allowed that one
entry). The Config Store is the ConfigDB, Auth and Directory services itself: for those,
without an entry, the answer is the URL the caller reached it at.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from .. import uuids
from .._domain import configs
from .._domain.errors import NotFound
from .auth import store

bp = Blueprint("directory", __name__)

OWN = frozenset({uuids.Service.ConfigDB, uuids.Service.Auth, uuids.Service.Directory})
"""The services this process provides."""


def service_url(service: str) -> str | None:
    """The URL ``service`` advertised, an own service's as reached, else None."""
    found = configs.get(store().core, uuids.App.ServiceUrl, service)
    url = found[0].get("url") if found and isinstance(found[0], dict) else None
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        return url.rstrip("/")
    return request.host_url.rstrip("/") if service in OWN else None


@bp.get("/v1/service/<uuid:service>")
def lookup(service: str) -> Response:
    """Who provides ``service``, for any authenticated caller (URLs are no secret)."""
    url = service_url(service)
    if url is None:
        raise NotFound(f"no provider of service {service} is known")
    return jsonify([{"service": service, "url": url}])
