"""Who may call what: Edge.Perm.Clusters for status and bootstrap URLs, Edge.Perm.Secrets for
secrets, on the cluster or the wildcard; 401 without valid credentials, 403 without a grant."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
import requests

from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack
from tests.cluster_manager.api.conftest import Cluster

CLUSTERS, SECRETS = uuids.EdgePerm.Clusters, uuids.EdgePerm.Secrets
OTHER = str(uuid.uuid4())


def calls(cluster: str) -> dict[str, tuple[str, str, str]]:
    """Route name → (method, path, permission needed)."""
    secret = f"/v1/cluster/{cluster}/secret/app/creds/password?dryrun=true"
    return {
        "status": ("GET", f"/v1/cluster/{cluster}/status", CLUSTERS),
        "bootstrap-url": ("POST", f"/v1/cluster/{cluster}/bootstrap-url", CLUSTERS),
        "put-secret": ("PUT", secret, SECRETS),
        "delete-secret": ("DELETE", secret, SECRETS),
        "list-secrets": ("GET", f"/v1/cluster/{cluster}/secret", SECRETS),
    }


ROUTES = list(calls("x"))


def call(api: Api, route: str, cluster: str) -> requests.Response:
    method, path, _ = calls(cluster)[route]
    return api.request(method, path, data=b"value" if method == "PUT" else None)


@pytest.mark.parametrize("route", ROUTES)
def test_without_credentials_401(manager: Api, bootstrapped: Cluster, route: str) -> None:
    r = call(manager, route, bootstrapped.uuid)
    assert r.status_code == 401, r.text
    assert "Basic" in r.headers["WWW-Authenticate"]


@pytest.mark.parametrize("route", ROUTES)
def test_wrong_password_401(stack: Stack, bootstrapped: Cluster, route: str) -> None:
    api = Api(stack.manager.url, ("admin", "not-the-password"))
    assert call(api, route, bootstrapped.uuid).status_code == 401


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("grant", "expected"), [
    ("none", 403), ("right-on-cluster", 2), ("right-on-wildcard", 2),
    ("right-on-other-cluster", 403), ("other-permission", 403), ("bearer-token", 2),
])
def test_grant_matrix(stack: Stack, bootstrapped: Cluster, user_with: Callable[..., Api],
                      route: str, grant: str, expected: int) -> None:
    needed = calls(bootstrapped.uuid)[route][2]
    other = SECRETS if needed == CLUSTERS else CLUSTERS
    grants = {"none": [], "right-on-cluster": [(needed, bootstrapped.uuid)],
              "right-on-wildcard": [(needed, uuids.NULL)],
              "right-on-other-cluster": [(needed, OTHER)],
              "other-permission": [(other, uuids.NULL)],
              "bearer-token": [(needed, bootstrapped.uuid)]}[grant]
    api = user_with(*grants)
    if grant == "bearer-token":
        token = Api(stack.store.url, api.auth).post("/token").json()["token"]
        api = Api(stack.manager.url)
        api.headers["Authorization"] = f"Bearer {token}"
    r = call(api, route, bootstrapped.uuid)
    if expected == 2 and route == "delete-secret":  # allowed; there is no such secret to remove
        assert (r.status_code, "nothing removed" in r.text) == (404, True), r.text
    elif expected == 2:
        assert 200 <= r.status_code < 300, r.text
    else:
        assert r.status_code == expected, r.text


def test_ping_metrics_and_health_are_public(manager: Api) -> None:
    ping = manager.get("/ping")
    assert ping.status_code == 200
    assert ping.json()["service"] == uuids.Service.Clusters
    assert manager.get("/metrics").status_code == 200
    assert manager.get("/healthz").json()["synced"] is True


@pytest.mark.parametrize("bad", ["not-a-uuid", "C1D2E3F4-0000-0000-0000-00000000000G",
                                 "00000000-0000-0000-0000-00000000000", "%2e%2e"])
def test_cluster_must_be_a_uuid(root: Api, bad: str) -> None:
    for method, path in [("GET", f"/v1/cluster/{bad}/status"),
                         ("PUT", f"/v1/cluster/{bad}/secret/ns/name/key"),
                         ("GET", f"/v1/cluster/{bad}/bootstrap?token=x")]:
        r = root.request(method, path, data=b"x")
        assert r.status_code == 400, (path, r.status_code, r.text)
        assert "UUID" in r.json()["error"]


def test_a_cluster_uuid_in_upper_case_is_the_same_cluster(root: Api,
                                                        bootstrapped: Cluster) -> None:
    lower = root.get(f"/v1/cluster/{bootstrapped.uuid}/status")
    upper = root.get(f"/v1/cluster/{bootstrapped.uuid.upper()}/status")
    assert upper.status_code == lower.status_code == 200
    assert upper.json()["spec"] == lower.json()["spec"]


def test_wrong_method_is_405_with_allow(root: Api, bootstrapped: Cluster) -> None:
    r = root.post(f"/v1/cluster/{bootstrapped.uuid}/status")
    assert r.status_code == 405 and r.json()["error"]
    assert "GET" in {m.strip() for m in r.headers["Allow"].split(",")}
