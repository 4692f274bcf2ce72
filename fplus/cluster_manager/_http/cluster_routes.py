"""``/v1/cluster/<c>/status``, ``…/bootstrap-url`` and ``…/bootstrap`` (ACS §3.7), and
``…/sealing-key/approve`` (ours: the pinned sealing key, :mod:`..services.secrets.sealing_keys`)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from urllib.parse import quote

from flask import Blueprint, Response, current_app, jsonify, make_response, request

from fplus.config_store import uuids
from fplus.serving import JSONRejected, loads_checked
from fplus.serving.http.addresses import is_loopback_url
from fplus.serving.startup.logs import Throttle

from ..model.apps_and_roles import CONFIG_APP, STATUS_APP, SYNC
from ..model.setup_status import DELETING, FAILED, SetupStatus
from ..model.sync_state import NOT_COMMISSIONED, UNKNOWN
from ..services.bootstrap.scripts import refusal_script
from ..services.bootstrap.tokens import BootstrapTokens
from ..services.clusters.edge_status import read_edge_status
from ..services.clusters.status_view import cluster_status
from ..services.errors import ApiError, BadRequest, Conflict, Gone, NotFound
from ..services.secrets.sealing_keys import SealingKeys, approved
from .context import (
    note_bootstrap_token,
    note_cluster_name,
    repo_head,
    require,
    require_view,
    services,
)
from .params import only_query

bp = Blueprint("clusters", __name__)
log = logging.getLogger(__name__)
_REFUSALS = Throttle()
"""The bootstrap script's refusals logged, by kind: anyone can cause them."""


def _setup(cluster: str) -> SetupStatus:
    return SetupStatus.parse(services().cs.get_config(STATUS_APP, cluster))


def _ready_setup(cluster: str) -> SetupStatus:
    setup = _setup(cluster)
    if not setup.exists:
        raise NotFound(f"unknown cluster {cluster}")
    if setup.phase == FAILED:
        raise Conflict(f"cluster {cluster} failed: {setup.error}; fix its configuration "
                       "entry, then ask again")
    if setup.phase == DELETING:
        raise Conflict(f"cluster {cluster} is being deleted")
    if not setup.ready:
        raise NotFound(f"cluster {cluster} is not ready yet (phase "
                       f"{setup.phase}); try again when it is")
    note_cluster_name(cluster, setup.name)
    return setup


def status_view(cluster: str) -> dict[str, object]:
    """The cluster's status with its derived phase (404 for an unknown cluster)."""
    api = services()
    setup = _setup(cluster)
    if not setup.exists:
        if api.cs.get_config(CONFIG_APP, cluster) is None:
            raise NotFound(f"unknown cluster {cluster}")
        return {"phase": "Pending", "ready": False, "syncState": UNKNOWN,
                "syncReason": NOT_COMMISSIONED}
    edge = read_edge_status(api.cs, cluster)
    view = cluster_status(setup, edge, datetime.now(UTC), api.liveness,
                          head=repo_head(cluster) if setup.ready else None)
    if api.tunnels is not None:
        view["tunnel"] = api.tunnels.state(cluster)
    if not setup.ready:
        return view
    keys = api.secrets.keys.state(cluster, edge)
    reporter = SYNC.principal_name(setup.name) if setup.name else None
    view.update(SealingKeys.view(cluster, keys, reporter))
    secrets = api.secrets.summary(cluster, keys)
    if secrets is not None:
        view["secrets"] = secrets
    return view


@bp.get("/v1/cluster/<cluster:cluster>/status")
def status(cluster: str) -> Response:
    require_view(cluster)
    return jsonify(status_view(cluster))


def approve_sealing_key(cluster: str, fingerprint: object, by: str) -> dict[str, object]:
    """Pin the sealing key waiting for approval if it is ``fingerprint`` (404: unknown
    cluster; 409: none waits, or another one does; nothing is written on a refusal)."""
    api = services()
    _ready_setup(cluster)
    pin = api.secrets.keys.approve(cluster, fingerprint, by, read_edge_status(api.cs, cluster))
    log.info("cluster %s: sealing key %s approved by %s", cluster, pin.fingerprint, by)
    return approved(cluster, pin)


@bp.post("/v1/cluster/<cluster:cluster>/sealing-key/approve")
def approve_key(cluster: str) -> Response:
    who = require(uuids.EdgePerm.Clusters, cluster)
    only_query()
    shape = ('the body must be a JSON object {"fingerprint": "SHA256:…"} naming the key '
             "waiting for approval (the status's pendingKey), sent as application/json")
    try:
        body = loads_checked(request.get_data(cache=False)) if request.is_json else None
    except JSONRejected as exc:
        raise BadRequest(f"{shape}: {exc}") from None
    fingerprint = body.get("fingerprint") if isinstance(body, dict) else None
    if not isinstance(fingerprint, str) or not fingerprint:
        raise BadRequest(shape)
    return jsonify(approve_sealing_key(cluster, fingerprint, who.uuid))


LOOPBACK_WARNING = ('199 cluster-manager "the bootstrap URL names a loopback address: only this '
                    'machine can use it; start the Cluster Manager with --external-url (up: '
                    '--advertise) naming an address edges reach"')
"""The ``Warning`` header field of a bootstrap-URL answer whose URL is loopback (the body
stays the URL as a JSON string, as in ACS)."""
PLAIN_HTTP_WARNING = ('199 cluster-manager "the bootstrap URL is plain HTTP: the script and the '
                      'credentials in it cross the network unencrypted; serve HTTPS '
                      '(--tls-cert/--tls-key, up: --tls) and give an https --external-url"')
"""The ``Warning`` header field of a bootstrap-URL answer whose URL is ``http://``."""


def url_warnings(url: str) -> list[str]:
    """The ``Warning`` fields a bootstrap URL earns."""
    warnings = [LOOPBACK_WARNING] if is_loopback_url(url) else []
    if url.lower().startswith("http://"):
        warnings.append(PLAIN_HTTP_WARNING)
    return warnings


def issue_bootstrap_url(cluster: str) -> str:
    """A new bootstrap URL for a ready cluster (one-time unless bootstrap is public)."""
    api = services()
    _ready_setup(cluster)
    url = f"{api.external_url.rstrip('/')}/v1/cluster/{cluster}/bootstrap"
    if not api.public_bootstrap:
        url += "?token=" + quote(api.tokens.issue(cluster), safe="")
    api.metrics.bootstrap.labels("url", "issued").inc()
    log.info("cluster %s: bootstrap URL issued", cluster)
    return url


@bp.post("/v1/cluster/<cluster:cluster>/bootstrap-url")
def bootstrap_url(cluster: str) -> Response:
    require(uuids.EdgePerm.Clusters, cluster)
    url = issue_bootstrap_url(cluster)
    response = jsonify(url)
    for warning in url_warnings(url):
        response.headers.add("Warning", warning)
    return response


@bp.get("/v1/edge-ca")
def edge_ca() -> Response:
    """The CA edges are given (PEM; public, no credentials): what a bootstrap command for a
    private CA fetches, checks against the SHA-256 it names, then passes to ``curl
    --cacert``. 404 when edges trust their system CAs."""
    only_query()
    ca = services().scripts.edge_ca
    if not ca:
        raise NotFound("this Cluster Manager gives edges no CA of its own: they trust their "
                       "system CAs")
    resp = Response(ca, mimetype="application/x-pem-file")
    resp.headers["Cache-Control"] = "no-cache"
    return resp


@bp.get("/v1/cluster/<cluster:cluster>/bootstrap")
def bootstrap(cluster: str) -> Response:
    """The script. HEAD checks the URL without using it up or rotating anything."""
    api = services()
    token = request.args.get("token")
    tokens = None if api.public_bootstrap else api.tokens
    try:
        if tokens is not None:
            _check_token(tokens, cluster, token)  # first: no probing without one
        setup = _ready_setup(cluster)
        if request.method == "HEAD":
            return _script_response("")
        script = api.scripts.build(
            cluster, setup,
            redeem=None if tokens is None else lambda: tokens.redeem(cluster, token),
            release=None if tokens is None else lambda: tokens.release(cluster, token))
        if tokens is not None:  # only a script the operator handed over proves the edge
            api.secrets.keys.arm(cluster)
    except Exception as exc:
        api.metrics.bootstrap.labels("script", "refused").inc()
        _log_refusal(cluster, exc)
        if isinstance(exc, ApiError) and _wants_script():
            return _refusal(exc)
        raise
    api.metrics.bootstrap.labels("script", "served").inc()
    log.info("cluster %s: bootstrap script served", cluster)
    return _script_response(script)


def _check_token(tokens: BootstrapTokens, cluster: str, token: str | None) -> None:
    """``tokens.check``, noting for the audit row when ``token`` is the cluster's, even used
    or expired (a junk token proves nothing: its refusal is not recorded)."""
    try:
        tokens.check(cluster, token)
    except Gone:
        note_bootstrap_token()
        raise
    note_bootstrap_token()


def _log_refusal(cluster: str, exc: Exception) -> None:
    """The refusal's INFO line, at most one a minute per kind of refusal, saying how many
    like it went unlogged since the last."""
    held = _REFUSALS.allow(type(exc).__name__)
    if held is None:
        return
    since = f" ({held} more like it since the last such line)" if held else ""
    log.info("cluster %s: bootstrap script refused: %s%s", cluster,
             getattr(exc, "message", type(exc).__name__), since)


def _wants_script() -> bool:
    """Whether a refusal goes to a shell (``curl URL | sh``): a GET that does not prefer
    JSON (``fplus`` asks for JSON; ``curl`` sends ``*/*``)."""
    accept = request.accept_mimetypes
    return (request.method == "GET"
            and accept.best_match(["text/plain", "application/json"]) != "application/json")


def _refusal(exc: ApiError) -> Response:
    """The API's answer to ``exc`` (its status and headers: Retry-After, WWW-Authenticate),
    with a script that says why and exits 1 for its body."""
    resp = make_response(current_app.handle_user_exception(exc))
    resp.set_data(refusal_script(exc.status, exc.message))
    resp.mimetype = "text/plain"
    resp.headers["Cache-Control"] = "no-store"
    return resp


def _script_response(script: str) -> Response:
    resp = Response(script, mimetype="text/plain")
    resp.headers["Cache-Control"] = "no-store"
    return resp
