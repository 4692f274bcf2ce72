"""Seeding the Config Store for the Cluster Manager (what ACS service-setup does).

Runs at every start with administrator credentials and is idempotent: apps and classes
are created if missing, schemas are brought up to date, default templates and the
ServiceConfig entry are written only if absent (operators may change them), and the
Cluster Manager's own principal gets exactly the grants it needs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import uuid as uuidlib
from pathlib import Path
from typing import Any

import manifests
from config_store import uuids
from config_store.client import ConfigStoreClient, PreconditionFailed

A, C, P = uuids.App, uuids.Class, uuids.ConfigDBPerm
PRINCIPAL_NAME = "cluster-manager"
PASSWORD_FILE = "cluster-manager-password"  # noqa: S105 - a file name

APPS = {
    A.EdgeClusterConfiguration: "Edge cluster configuration",
    A.EdgeClusterSetupStatus: "Edge cluster setup status",
    A.EdgeClusterStatus: "Edge cluster status",
    A.FluxTemplate: "Flux template",
    A.HelmChartTemplate: "Helm chart template",
    A.K8sResourceTemplate: "K8s resource template",
    A.BootstrapScript: "Bootstrap script",
    A.EdgeDeployment: "Edge deployment",
    A.EdgeAgentConfig: "Edge Agent config",
    A.GitRepoConfig: "Git repository configuration",
    A.EdgeClusterNameClaim: "Edge cluster name claim",
    A.EdgeClusterRequest: "Edge cluster request",
}
SCHEMAS = {  # manifests/schemas.yaml key -> app
    "edge-cluster-configuration": A.EdgeClusterConfiguration,
    "edge-cluster-setup-status": A.EdgeClusterSetupStatus,
    "edge-cluster-status": A.EdgeClusterStatus,
    "flux-template": A.FluxTemplate,
    "helm-chart-template": A.HelmChartTemplate,
    "k8s-resource-template": A.K8sResourceTemplate,
    "bootstrap-script": A.BootstrapScript,
    "edge-cluster-name-claim": A.EdgeClusterNameClaim,
    "edge-cluster-request": A.EdgeClusterRequest,
}
SYNC_READS = (A.EdgeDeployment, A.HelmChartTemplate, A.K8sResourceTemplate)
"""Apps every Edge Sync reads to turn Edge deployments into HelmReleases."""
RESOURCES = {"HelmRelease": uuids.K8sResource.HelmRelease,
             "GitRepository": uuids.K8sResource.GitRepository}


def _service_config(cs: ConfigStoreClient) -> dict[str, Any]:
    existing = cs.get_config(A.ServiceConfig, uuids.Service.Clusters)
    if isinstance(existing, dict):
        return existing
    return {"group": {"cluster": {"path": "cluster", "uuid": str(uuidlib.uuid4())},
                      "flux": {"uuid": str(uuidlib.uuid4())},
                      "sync": {"uuid": str(uuidlib.uuid4())}}}


def _put_if_absent(cs: ConfigStoreClient, app: str, obj: str, value: Any) -> None:
    with contextlib.suppress(PreconditionFailed):
        cs.put_config(app, obj, value, if_none_match="*")


def seed(cs: ConfigStoreClient) -> dict[str, Any]:
    """Ensure everything the Cluster Manager needs; returns its ServiceConfig entry."""
    service = _service_config(cs)
    groups = service["group"]
    cs.load_dump({
        "service": uuids.Service.ConfigDB, "version": 2,
        "objects": {
            C.R1Class: {
                C.EdgeCluster: {"name": "Edge cluster"},
                C.EdgeAccount: {"name": "Edge account", "subclassOf": [C.Principal]},
                C.K8sResourceKind: {"name": "K8s resource kind"},
                groups["cluster"]["uuid"]: {"name": "Edge cluster repositories"},
                groups["flux"]["uuid"]: {"name": "Edge Flux accounts"},
                groups["sync"]["uuid"]: {"name": "Edge Sync accounts"},
                C.HelmChart: {"name": "Helm chart"},
                C.EdgeDeployment: {"name": "Edge deployment"},
                C.EdgeClusterName: {"name": "Edge cluster name"},
            },
            C.App: {app: {"name": name} for app, name in APPS.items()},
            C.K8sResourceKind: {obj: {"name": kind} for kind, obj in RESOURCES.items()},
        },
    })
    for app in SYNC_READS:  # idempotent: an identical grant is not added twice
        cs.add_grant(groups["sync"]["uuid"], P.ReadApp, app)
    for key, schema in manifests.load("schemas").items():
        if key in SCHEMAS:
            cs.put_config(A.ConfigSchema, SCHEMAS[key], schema)
    _put_if_absent(cs, A.ServiceConfig, uuids.Service.Clusters, service)
    _put_if_absent(cs, A.FluxTemplate, A.FluxTemplate, manifests.load("flux-template"))
    _put_if_absent(cs, A.BootstrapScript, A.BootstrapScript, manifests.load("bootstrap-script"))
    for kind, entry in manifests.load("k8s-resource-templates").items():
        _put_if_absent(cs, A.K8sResourceTemplate, RESOURCES[kind], entry)
    return cs.get_config(A.ServiceConfig, uuids.Service.Clusters)


def own_principal(cs: ConfigStoreClient, service: dict[str, Any],
                  data_dir: Path) -> tuple[str, str]:
    """The Cluster Manager's principal, its password (kept in ``data_dir``) and grants."""
    path = data_dir / PASSWORD_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(24) + "\n")
    password = path.read_text().strip()
    principal = cs.create_principal(PRINCIPAL_NAME, password)
    cs.set_name(principal, "Cluster Manager")
    for permission, target, plural in _grants(service["group"]):
        cs.add_grant(principal, permission, target, plural)
    return PRINCIPAL_NAME, password


def _grants(groups: dict[str, Any]) -> list[tuple[str, str, bool]]:
    read = [A.EdgeClusterConfiguration, A.EdgeClusterSetupStatus, A.EdgeClusterStatus,
            A.FluxTemplate, A.HelmChartTemplate, A.K8sResourceTemplate, A.BootstrapScript,
            A.ServiceConfig, A.GitRepoConfig, A.SparkplugAddress, A.Info,
            A.EdgeClusterNameClaim, A.EdgeClusterRequest]
    write = [A.EdgeClusterConfiguration, A.EdgeClusterSetupStatus, A.EdgeClusterStatus,
             A.GitRepoConfig, A.SparkplugAddress, A.Info, A.EdgeClusterNameClaim,
             A.EdgeClusterRequest]
    group_uuids = [g["uuid"] for g in groups.values()]
    grants = [(P.ReadApp, app, False) for app in read]
    grants += [(P.WriteApp, app, False) for app in write]
    grants += [(P.CreateObj, C.EdgeAccount, False), (P.DeleteObj, C.EdgeAccount, True),
               # the cluster API creates and removes Edge cluster objects; claims need
               # objects of a chosen uuid
               (P.CreateSpecificObj, C.EdgeCluster, False),
               (P.DeleteObj, C.EdgeCluster, True),
               (P.CreateSpecificObj, C.EdgeClusterName, False),
               (P.WriteMemberships, C.EdgeAccount, True),
               (P.WriteMemberships, C.EdgeCluster, True),
               (uuids.AuthPerm.WriteKerberos, C.EdgeAccount, False),
               (uuids.AuthPerm.WriteKerberos, C.EdgeAccount, True),
               (uuids.AuthPerm.ReadKerberos, uuids.NULL, False),
               # to check its own API's callers: their grants of these two permissions
               (uuids.AuthPerm.ReadACL, uuids.EdgePerm.Clusters, False),
               (uuids.AuthPerm.ReadACL, uuids.EdgePerm.Secrets, False),
               (uuids.GitPerm.ManageStorage, uuids.NULL, False)]
    grants += [(perm, g, False) for g in group_uuids for perm in (P.WriteMembers, P.ReadMembers)]
    for delegated in (uuids.GitPerm.Pull, P.ReadApp, P.WriteApp):
        grants += [(uuids.AuthPerm.WriteACL, delegated, False),
                   (uuids.AuthPerm.ReadACL, delegated, False)]
    return grants
