"""Building blocks for Edge Sync tests: edges, key Secrets, Config Store entries."""

from __future__ import annotations

import base64
import secrets
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any

from fplus.cluster_manager.model.apps_and_roles import SYNC
from fplus.cluster_manager.reconcile import accounts
from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from harness.stack import wait_for

NAMESPACE = "fplus-edge"
SS_NAMESPACE = "sealed-secrets"
CONTROLLER = "sealed-secrets-controller"
STATUS = uuids.App.EdgeClusterStatus

__all__ = ["wait_for"]


@dataclass(frozen=True)
class Edge:
    """An edge cluster and its Edge Sync principal."""

    uuid: str
    name: str
    principal: str
    username: str
    password: str


def make_edge(cs: ConfigStoreClient, name: str | None = None) -> Edge:
    """An Edge cluster object and its ``op1sync/<name>`` principal with a password."""
    name = name or f"edge-{secrets.token_hex(4)}"
    cluster = cs.create_object(uuids.Class.EdgeCluster)
    service = cs.get_config(uuids.App.ServiceConfig, uuids.Service.Clusters)
    [made] = cs.batch([accounts.account_op(SYNC, cluster, name,
                                           service["group"]["sync"]["uuid"])])
    principal = made.body["uuid"]
    password = secrets.token_urlsafe(12)
    cs.set_password(principal, password)
    return Edge(cluster, name, principal, SYNC.principal_name(name), password)


def agent_env(edge: Edge, store_url: str, **overrides: str) -> dict[str, str]:
    """Environment for an agent with test-sized intervals."""
    env = {
        "CLUSTER_UUID": edge.uuid, "CLUSTER_NAME": edge.name, "CONFIG_STORE_URL": store_url,
        "FPLUS_USER": edge.username, "FPLUS_PASSWORD": edge.password,
        "POD_NAMESPACE": NAMESPACE, "SEALED_SECRETS_NAMESPACE": SS_NAMESPACE,
        "SEALED_SECRETS_CONTROLLER": CONTROLLER, "REALM": "EXAMPLE.COM",
        "DIRECTORY_URL": "https://directory.example.com",
        "HEARTBEAT_INTERVAL": "0.5", "CERT_INTERVAL": "0.5", "CERT_RETRY": "0.3",
        "RESYNC_INTERVAL": "30", "WATCH_TIMEOUT": "2", "RETRY_INITIAL": "0.2",
        "RETRY_MAX": "1",
    }
    env.update(overrides)
    return env


def status(cs: ConfigStoreClient, edge: Edge) -> dict[str, Any]:
    """The edge's status entry ({} while absent)."""
    return cs.get_config(STATUS, edge.uuid) or {}


# -- Kubernetes objects -----------------------------------------------------------------
def key_secret(name: str, cert_pem: str, *, active: bool = True) -> dict[str, Any]:
    """A Sealed Secrets key Secret (``tls.key`` is a placeholder: never read)."""
    labels = {"sealedsecrets.bitnami.com/sealed-secrets-key": "active" if active else "old"}
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": SS_NAMESPACE, "labels": labels},
            "data": {"tls.crt": base64.b64encode(cert_pem.encode()).decode(),
                     "tls.key": base64.b64encode(b"not-a-key").decode()}}


def controller_service() -> dict[str, Any]:
    """The controller's Service as the upstream chart makes it."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": CONTROLLER, "namespace": SS_NAMESPACE},
            "spec": {"ports": [{"name": "http", "port": 8080, "targetPort": "http"}]}}


# -- Config Store entries ---------------------------------------------------------------
def chart_template(cs: ConfigStoreClient, chart: str = "edge-agent", *,
                   source: str | None = None, prefix: str | None = None,
                   values: dict[str, Any] | None = None) -> str:
    """A Helm chart template entry (as ACS's edge-agent one); returns its object uuid."""
    obj = cs.create_object(uuids.Class.HelmChart)
    entry: dict[str, Any] = {"chart": chart, "values": values if values is not None else {
        "name": "{{name}}", "uuid": "{{uuid}}", "hostname": "{{hostname}}",
        "authGroup": {"edgeAgent": "6b5c7c8e-0000-4000-8000-000000000001"}}}
    if source is not None:
        entry["source"] = source
    if prefix is not None:
        entry["prefix"] = prefix
    cs.put_config(uuids.App.HelmChartTemplate, obj, entry)
    return obj


def deployment(cs: ConfigStoreClient, edge: Edge, chart: str, name: str = "Machine1",
               **extra: Any) -> str:
    """An Edge deployment entry for the edge; returns its object uuid."""
    obj = cs.create_object(uuids.Class.EdgeDeployment)
    cs.put_config(uuids.App.EdgeDeployment, obj,
                  {"name": name, "cluster": edge.uuid, "chart": chart, **extra})
    return obj


def new_uuid() -> str:
    return str(uuidlib.uuid4())
