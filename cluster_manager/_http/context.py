"""What the routes work with: the services, the settings, and the calling principal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flask import current_app, request

from config_store import uuids
from config_store.client import Access, Caller, ConfigStoreClient

from ..api.bootstrap_scripts import ScriptBuilder
from ..api.bootstrap_tokens import BootstrapTokens
from ..api.clusters import ClusterService
from ..api.errors import Forbidden, Unauthorized
from ..api.secrets import SecretService
from ..api.status_view import Liveness
from ..metrics import Metrics


@dataclass
class ApiServices:
    """Everything the HTTP API needs; one per app."""

    cs: ConfigStoreClient
    access: Access
    secrets: SecretService
    clusters: ClusterService
    tokens: BootstrapTokens
    scripts: ScriptBuilder
    metrics: Metrics
    external_url: str
    public_bootstrap: bool = False
    liveness: Liveness = field(default_factory=Liveness)
    reconciler: Any = None
    """The running reconciler (for ``/healthz``), if any."""
    leadership: Any = None
    """Whose the leader lease is (``status() -> LeaderStatus``, for ``/healthz``), if any."""


def services() -> ApiServices:
    """The current app's services."""
    return current_app.extensions["cluster_manager"]


def caller() -> Caller:
    """The authenticated caller; 401 without valid credentials."""
    found = services().access.principal(request.headers.get("Authorization"))
    if found is None:
        raise Unauthorized("valid credentials are required (HTTP Basic or a Config Store "
                           "Bearer token)")
    return found


def require(permission: str, cluster: str) -> Caller:
    """The caller, if it holds ``permission`` on ``cluster`` (or the wildcard); else 401/403.
    ``cluster`` may be the Null UUID: then only a wildcard grant will do."""
    who = caller()
    if not services().access.allowed(who, permission, cluster):
        raise Forbidden("you lack the permission for this on this cluster"
                        if cluster != uuids.NULL else
                        "you lack the permission for this on every cluster (a wildcard grant)")
    return who
