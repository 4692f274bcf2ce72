"""What the routes work with: the services, the settings, and the calling principal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flask import current_app, request

from config_store.client import Access, ConfigStoreClient

from ..api.bootstrap_scripts import ScriptBuilder
from ..api.bootstrap_tokens import BootstrapTokens
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
    tokens: BootstrapTokens
    scripts: ScriptBuilder
    metrics: Metrics
    external_url: str
    public_bootstrap: bool = False
    liveness: Liveness = field(default_factory=Liveness)
    reconciler: Any = None
    """The running reconciler (for ``/healthz``), if any."""


def services() -> ApiServices:
    """The current app's services."""
    return current_app.extensions["cluster_manager"]


def require(permission: str, cluster: str) -> None:
    """401 without valid credentials, 403 without ``permission`` on ``cluster`` (or wild)."""
    api = services()
    caller = api.access.principal(request.headers.get("Authorization"))
    if caller is None:
        raise Unauthorized("valid credentials are required (HTTP Basic or a Config Store "
                           "Bearer token)")
    if not api.access.allowed(caller, permission, cluster):
        raise Forbidden("you lack the permission for this on this cluster")
