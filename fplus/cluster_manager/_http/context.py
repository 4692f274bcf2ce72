"""What the routes work with: the services, the settings, and the calling principal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from flask import current_app, g, request

from fplus.config_store import uuids
from fplus.config_store.client import Access, Caller, ConfigStoreClient

from ..audit import AuditLog
from ..leader.elector import LeaderStatus
from ..metrics import Metrics
from ..model.apps_and_roles import STATUS_APP
from ..rollouts.fleet_service import FleetService
from ..services.bootstrap.scripts import ScriptBuilder
from ..services.bootstrap.tokens import BootstrapTokens
from ..services.charts.central_imports import ImportService
from ..services.clusters.cluster_api import ClusterService
from ..services.clusters.grants import Acting
from ..services.clusters.status_view import Liveness
from ..services.errors import Forbidden, Unauthorized
from ..services.fleet.repo_heads import RepoHeads
from ..services.fleet.rows import FleetRows
from ..services.secrets.sealed_secrets import SecretService
from ..tunnel.routing import TunnelService


class QueueDepth(Protocol):
    """A work queue's length."""

    def depth(self) -> int:
        """The keys waiting."""


class Reconciling(Protocol):
    """What ``/healthz`` reads of the reconciler."""

    @property
    def queue(self) -> QueueDepth:
        """Its work queue."""

    def health(self) -> tuple[bool, str | None]:
        """``(synced, reason)``."""


class Leadership(Protocol):
    """What ``/healthz`` reads of the leader election."""

    def status(self) -> LeaderStatus:
        """Whose the lease is, and this replica's role."""


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
    reconciler: Reconciling | None = None
    """The running reconciler (for ``/healthz``), if any."""
    leadership: Leadership | None = None
    """Whose the leader lease is (``status() -> LeaderStatus``, for ``/healthz``), if any."""
    heads: RepoHeads | None = None
    """The commit each cluster's repo is at (``syncState`` in statuses); None: never known."""
    fleet: FleetService | None = None
    """Fleet deployments (``/v1/fleet-deployment``); None: not served."""
    config_store_url: str | None = None
    """The Config Store as users and edges reach it, named by ``/ping`` for clients that
    find it from the Cluster Manager (``fplus login``); None: not said."""
    audit: AuditLog | None = None
    """Where changes are recorded (``_http.audit_routes``); None: not recorded."""
    fleet_rows: FleetRows | None = None
    """Every cluster's list row, shared between requests in a large fleet; None: read per
    request."""
    imports: ImportService | None = None
    """Chart and Flux imports into the central repos (``POST /v1/chart``, ``/v1/flux-version``);
    None: not served."""
    tunnels: TunnelService | None = None
    """The edges' tunnels and the Kubernetes API proxy (``_http.kube_routes``); None: not
    served."""


def services() -> ApiServices:
    """The current app's services."""
    return current_app.extensions["cluster_manager"]


def note_cluster_name(cluster: str, name: str | None) -> None:
    """Keep the cluster's name as the route read it (its setup status), for the request's
    audit row: the row then needs no read of its own."""
    if name is not None:
        g.cluster_names = {**g.get("cluster_names", {}), cluster: name}


def noted_cluster_name(cluster: str) -> str | None:
    """The cluster's name if the route noted it (:func:`note_cluster_name`)."""
    name: str | None = g.get("cluster_names", {}).get(cluster)
    return name


def note_bootstrap_token() -> None:
    """The request's bootstrap token is its cluster's (current, used or expired): proof
    enough of the caller for the request's audit row."""
    g.bootstrap_token = True


def bootstrap_token_proved() -> bool:
    """Whether the request's bootstrap token was its cluster's (:func:`note_bootstrap_token`)."""
    return bool(g.get("bootstrap_token"))


def repo_head(cluster: str) -> str | None:
    """The commit the cluster's repo is at, if the app knows how to ask."""
    heads = services().heads
    return heads.get(cluster) if heads is not None else None


def caller(authorization: str | None = None) -> Caller:
    """The authenticated caller (``authorization``, default the request's header); 401
    without valid credentials."""
    found = services().access.principal(authorization or request.headers.get("Authorization"))
    if found is None:
        raise Unauthorized("valid credentials are required (HTTP Basic or a Config Store "
                           "Bearer token)")
    g.principal = found  # who the audit log names
    return found


def require(permission: str, cluster: str, authorization: str | None = None) -> Caller:
    """The caller, if it holds ``permission`` on ``cluster`` (or the wildcard); else 401/403.
    ``cluster`` may be the Null UUID: then only a wildcard grant will do."""
    who = caller(authorization)
    if not services().access.allowed(who, permission, cluster):
        raise Forbidden("you lack the permission for this on this cluster"
                        if cluster != uuids.NULL else
                        "you lack the permission for this on every cluster (a wildcard grant)")
    return who


def require_fleetwide_read(who: Caller, app: str, what: str) -> Caller:
    """``who`` if it may manage every cluster, or read ``app`` (the app of ``what``: fleet
    deployments, maintenance windows) in the Config Store; else 403."""
    access = services().access
    if not (access.allowed(who, uuids.EdgePerm.Clusters, uuids.NULL)
            or access.allowed(who, uuids.ConfigDBPerm.ReadApp, app)):
        raise Forbidden(f"you may neither manage every cluster nor read the {what} app")
    return who


def acting(who: Caller) -> Acting:
    """``who`` as the services' checks of further grants see it."""
    return Acting(who, services().access)


def can_view(who: Caller, cluster: str) -> bool:
    """Whether ``who`` may see ``cluster``'s status: it manages the cluster, or it may read
    the setup status app in the Config Store (where that status comes from)."""
    access = services().access
    return (access.allowed(who, uuids.EdgePerm.Clusters, cluster)
            or access.allowed(who, uuids.ConfigDBPerm.ReadApp, STATUS_APP))


def require_view(cluster: str, authorization: str | None = None) -> Caller:
    """The caller, if it may see ``cluster`` (:func:`can_view`); else 401/403."""
    who = caller(authorization)
    if not can_view(who, cluster):
        raise Forbidden("you may neither manage this cluster nor read the setup status app")
    return who
