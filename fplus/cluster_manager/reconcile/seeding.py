"""Seeding the Config Store for the Cluster Manager (what ACS service-setup does).

``cluster-manager seed`` runs this with administrator credentials, once per install or
upgrade (``up`` at every start); it is idempotent: apps and classes are created if missing,
schemas are brought up to date, default templates and the ServiceConfig entry are written
only if absent (operators may change them), and the Cluster Manager's own principal gets
exactly the grants it needs (:mod:`.manager_account`).
"""

from __future__ import annotations

import contextlib
import uuid as uuidlib
from pathlib import Path
from typing import Any

from fplus import manifests
from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, PreconditionFailed

from . import manager_account

A, C, P, S = uuids.App, uuids.Class, uuids.ConfigDBPerm, uuids.Shared

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
    A.FleetDeployment: "Fleet deployment",
    A.FleetRolloutStatus: "Fleet rollout status",
    A.ClusterRollout: "Cluster rollout",
    A.MaintenanceWindow: "Maintenance window",
}
SCHEMAS = {  # fplus/manifests/schemas.yaml key -> app
    "edge-cluster-configuration": A.EdgeClusterConfiguration,
    "edge-cluster-setup-status": A.EdgeClusterSetupStatus,
    "edge-cluster-status": A.EdgeClusterStatus,
    "flux-template": A.FluxTemplate,
    "helm-chart-template": A.HelmChartTemplate,
    "edge-deployment": A.EdgeDeployment,
    "k8s-resource-template": A.K8sResourceTemplate,
    "bootstrap-script": A.BootstrapScript,
    "edge-cluster-name-claim": A.EdgeClusterNameClaim,
    "edge-cluster-request": A.EdgeClusterRequest,
    "fleet-deployment": A.FleetDeployment,
    "fleet-rollout-status": A.FleetRolloutStatus,
    "cluster-rollout": A.ClusterRollout,
    "maintenance-window": A.MaintenanceWindow,
}
SYNC_READS = (A.HelmChartTemplate, A.K8sResourceTemplate)
"""Apps every Edge Sync reads to turn Edge deployments into HelmReleases (the deployments
themselves each reads only for its own cluster: :mod:`.accounts`)."""
SYNC_NO_LONGER = (A.EdgeDeployment,)
"""Apps the Edge Sync accounts' group once read whole: the grant is removed."""
RESOURCES = {"HelmRelease": uuids.K8sResource.HelmRelease,
             "GitRepository": uuids.K8sResource.GitRepository}
SHARED_REPOS = {S.HelmChartsRepo: ("shared/helm-charts", "Shared Helm charts"),
                S.FluxSystemRepo: ("shared/flux-system", "Central Flux")}
"""The repos every edge's Flux account pulls: uuid -> (path, name)."""
EDGE_CLUSTER_CHART = {"chart": "edge-cluster",
                      "values": {"cluster": {"name": "{{name}}", "uuid": "{{uuid}}"}}}
"""The default Helm chart template entry (as ACS's): chart ``edge-cluster`` from the
charts repo, told the cluster's name and uuid."""


def _service_config(cs: ConfigStoreClient) -> dict[str, Any]:
    existing = cs.get_config(A.ServiceConfig, uuids.Service.Clusters)
    if isinstance(existing, dict):
        return existing
    return {"group": {"cluster": {"path": "cluster", "uuid": str(uuidlib.uuid4())},
                      "flux": {"uuid": str(uuidlib.uuid4())},
                      "sync": {"uuid": str(uuidlib.uuid4())}}}


def _put_if_absent(cs: ConfigStoreClient, app: str, obj: str, value: object) -> None:
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
                C.SystemHelmChart: {"name": "System Helm chart", "subclassOf": [C.HelmChart]},
                C.GitRepo: {"name": "Git repository"},
                C.EdgeDeployment: {"name": "Edge deployment"},
                C.EdgeClusterName: {"name": "Edge cluster name"},
                C.FleetDeployment: {"name": "Fleet deployment"},
                C.ClusterRollout: {"name": "Cluster rollout"},
                C.MaintenanceWindow: {"name": "Maintenance window"},
            },
            C.App: {app: {"name": name} for app, name in APPS.items()},
            C.GitRepo: {repo: {"name": name} for repo, (_, name) in SHARED_REPOS.items()},
            C.HelmChart: {S.EdgeClusterChart: {"name": "Edge cluster chart",
                                               "memberOf": [C.SystemHelmChart]}},
            C.K8sResourceKind: {obj: {"name": kind} for kind, obj in RESOURCES.items()},
        },
    })
    for app in SYNC_READS:  # idempotent: an identical grant is not added twice
        cs.add_grant(groups["sync"]["uuid"], P.ReadApp, app)
    for app in SYNC_NO_LONGER:
        for grant in cs.find_grants(principal=groups["sync"]["uuid"], permission=P.ReadApp,
                                    target=app):
            cs.delete_grant(grant)
    # every edge's Flux account (a member of the group) pulls the shared repos; nobody else
    for repo in SHARED_REPOS:
        cs.add_grant(groups["flux"]["uuid"], uuids.GitPerm.Pull, repo)
    for key, schema in manifests.load("schemas").items():
        if key in SCHEMAS:
            cs.put_config(A.ConfigSchema, SCHEMAS[key], schema)
    _put_if_absent(cs, A.ServiceConfig, uuids.Service.Clusters, service)
    _put_if_absent(cs, A.FluxTemplate, A.FluxTemplate, manifests.load("flux-template"))
    _put_if_absent(cs, A.BootstrapScript, A.BootstrapScript, manifests.load("bootstrap-script"))
    for repo, (path, _) in SHARED_REPOS.items():
        _put_if_absent(cs, A.GitRepoConfig, repo, {"path": path})
    _put_if_absent(cs, A.HelmChartTemplate, S.EdgeClusterChart, EDGE_CLUSTER_CHART)
    for kind, entry in manifests.load("k8s-resource-templates").items():
        _put_if_absent(cs, A.K8sResourceTemplate, RESOURCES[kind], entry)
    return service_config(cs)


def seed_with_account(admin: ConfigStoreClient, data_dir: Path, *,
                      rotate: bool = False) -> Path:
    """:func:`seed`, then the Cluster Manager's own principal (a new password only if
    ``rotate``); returns its password file."""
    service = seed(admin)
    return manager_account.ensure(admin, service["group"], data_dir, rotate=rotate)


class NotSeeded(RuntimeError):
    """The Config Store holds no ServiceConfig entry for the Cluster Manager."""


def service_config(cs: ConfigStoreClient) -> dict[str, Any]:
    """The Cluster Manager's ServiceConfig entry, as its own principal reads it.

    Raises :class:`NotSeeded` if ``cluster-manager seed`` never ran against this store.
    """
    found = cs.get_config(A.ServiceConfig, uuids.Service.Clusters)
    if not isinstance(found, dict) or not isinstance(found.get("group"), dict):
        raise NotSeeded("the Config Store is not seeded for the Cluster Manager")
    return found
