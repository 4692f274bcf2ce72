"""The Cluster Manager's own principal: exactly the grants it needs, and its password file.

Made by ``cluster-manager seed`` with administrator credentials; ``serve`` then logs in as
``cluster-manager`` with the password kept in its data dir (mode 0600) and never needs the
administrator's. What it may hand out is what it holds: it grants an edge's Flux account Git
Pull on the cluster's repo (it holds plural Pull on Edge clusters, whose uuids are the repos')
and Edge Sync ReadApp/WriteApp on its cluster's Edge cluster status entry (it holds both on
that app) and ReadApp on its cluster's Edge deployments (it holds ReadApp on that app), so it
keeps WriteACL on those three permissions only, and holds no write access to
the Bootstrap script, Flux template, schema or any other app whose entries edges execute or
that decides access.
"""

from __future__ import annotations

from pathlib import Path

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, Grant, ensure_service_principal
from fplus.jsontypes import Doc, as_object

A, C, P, AUTH, GIT = (uuids.App, uuids.Class, uuids.ConfigDBPerm, uuids.AuthPerm,
                      uuids.GitPerm)
PRINCIPAL_NAME = "cluster-manager"
LABEL = "Cluster Manager"
PASSWORD_FILE = "cluster-manager-password"  # noqa: S105 - a file name

READS = (A.EdgeClusterConfiguration, A.EdgeClusterSetupStatus, A.EdgeClusterStatus,
         A.EdgeClusterRequest, A.EdgeClusterNameClaim,
         A.FluxTemplate, A.HelmChartTemplate, A.K8sResourceTemplate, A.BootstrapScript,
         A.EdgeDeployment, A.FleetDeployment, A.FleetRolloutStatus, A.ClusterRollout,
         A.MaintenanceWindow)
"""Apps whose entries it reads (templates and the script only to render them)."""
WRITES = (A.EdgeClusterConfiguration, A.EdgeClusterSetupStatus, A.EdgeClusterStatus,
          A.EdgeClusterRequest, A.EdgeClusterNameClaim,
          A.GitRepoConfig, A.SparkplugAddress, A.EdgeDeployment, A.FleetDeployment,
          A.FleetRolloutStatus, A.ClusterRollout, A.MaintenanceWindow)
"""Apps whose entries it writes: the cluster API's, its own status, an edge's entries it
creates at commissioning and removes at teardown, the Edge deployments of the deployment API
and of the fleet deployments' expansion (each names a Helm chart template, which it cannot
write; the expansion checks an entry's owner before it writes), the fleet deployments, the
cluster rollouts, and their rollouts' progress (the leader's fleet loop), the maintenance
windows (API)."""
DELEGATED = (GIT.Pull, P.ReadApp, P.WriteApp)
"""The permissions of the grants it gives edge accounts (:mod:`.accounts`)."""

def grants(groups: Doc) -> list[Grant]:
    """Every grant the Cluster Manager holds, given its ServiceConfig ``group`` entry."""
    repos, flux, sync = (str(as_object(groups[k])["uuid"]) for k in ("cluster", "flux", "sync"))
    held: list[tuple[str, str, bool, str | None]] = [
        (P.ReadApp, app, False, None) for app in READS]
    held += [(P.WriteApp, app, False, None) for app in WRITES]
    held += [
        # its own configuration, and nobody else's
        (P.ReadApp, A.ServiceConfig, False, uuids.Service.Clusters),
        # where it is reached, for the Directory: its own Service URL entry
        (P.WriteApp, A.ServiceUrl, False, uuids.Service.Clusters),
        # edge accounts: created with a password, grouped, re-passworded, removed
        (P.CreateObj, C.EdgeAccount, False, None),
        (AUTH.WriteKerberos, C.EdgeAccount, False, None),
        (AUTH.WriteKerberos, C.EdgeAccount, True, None),
        (P.WriteMemberships, C.EdgeAccount, True, None),
        (P.DeleteObj, C.EdgeAccount, True, None),
        (AUTH.ReadKerberos, uuids.NULL, False, None),  # finds accounts by name
        (P.WriteMembers, flux, False, None),
        (P.WriteMembers, sync, False, None),
        # clusters made by the cluster API, their repo group, their name claims
        (P.CreateSpecificObj, C.EdgeCluster, False, None),
        (P.DeleteObj, C.EdgeCluster, True, None),
        (P.WriteMemberships, C.EdgeCluster, True, None),
        (P.ReadMembers, repos, False, None),
        (P.WriteMembers, repos, False, None),
        (P.CreateSpecificObj, C.EdgeClusterName, False, None),
        # Edge deployments made and deleted by the deployment API and the fleet expansion;
        # fleet deployments (API); which charts are system's
        (P.CreateSpecificObj, C.EdgeDeployment, False, None),
        (P.DeleteObj, C.EdgeDeployment, True, None),
        (P.CreateSpecificObj, C.FleetDeployment, False, None),
        (P.DeleteObj, C.FleetDeployment, True, None),
        (P.CreateSpecificObj, C.ClusterRollout, False, None),
        (P.DeleteObj, C.ClusterRollout, True, None),
        (P.CreateSpecificObj, C.MaintenanceWindow, False, None),
        (P.DeleteObj, C.MaintenanceWindow, True, None),
        # a template rollout's candidate, under the rollout's object (which it made): never
        # the default template, nor any entry under an object it does not own
        (P.WriteApp, A.FluxTemplate, False, uuids.Special.Mine),
        (P.ReadMembers, C.SystemHelmChart, False, None),
        (P.ReadApp, A.Info, False, None),  # the names of chart templates
        # the repos it writes (a cluster's repo uuid is the cluster's), and archives
        (GIT.Pull, C.EdgeCluster, True, None),
        (GIT.Push, C.EdgeCluster, True, None),
        # the shared repos it imports charts and Flux versions into
        (GIT.Pull, uuids.Shared.HelmChartsRepo, False, None),
        (GIT.Push, uuids.Shared.HelmChartsRepo, False, None),
        (GIT.Pull, uuids.Shared.FluxSystemRepo, False, None),
        (GIT.Push, uuids.Shared.FluxSystemRepo, False, None),
        # a torn-down cluster's repo archived (teardown); never a shared repo or any other
        (GIT.ManageStorage, C.EdgeCluster, True, None),
        # the labels of the accounts and deployments it makes (Info of the objects it owns,
        # no other's)
        (P.WriteApp, A.Info, False, uuids.Special.Mine),
        # its API checks its callers' grants of its permissions (the Kubernetes proxy: the
        # level it tells the edge is the highest of the three its caller holds)
        (AUTH.ReadACL, uuids.EdgePerm.Clusters, False, None),
        (AUTH.ReadACL, uuids.EdgePerm.Secrets, False, None),
        (AUTH.ReadACL, uuids.EdgePerm.Audit, False, None),
        (AUTH.ReadACL, uuids.EdgePerm.Imports, False, None),
        (AUTH.ReadACL, uuids.EdgePerm.KubeView, False, None),
        (AUTH.ReadACL, uuids.EdgePerm.KubeEdit, False, None),
        (AUTH.ReadACL, uuids.EdgePerm.KubeAdmin, False, None),
    ]
    for permission in DELEGATED:
        held += [(AUTH.WriteACL, permission, False, None),
                 (AUTH.ReadACL, permission, False, None)]
    return [Grant(*grant) for grant in held]


def ensure(admin: ConfigStoreClient, groups: Doc, data_dir: Path, *,
           rotate: bool = False) -> Path:
    """Create or update the principal with exactly :func:`grants`; return its password file
    (see :func:`fplus.config_store.client.ensure_service_principal`)."""
    path = password_file(data_dir)
    ensure_service_principal(admin, PRINCIPAL_NAME, LABEL, grants(groups), path, rotate=rotate)
    return path


def password_file(data_dir: Path) -> Path:
    """Where ``seed`` keeps the Cluster Manager's password and ``serve`` reads it."""
    return data_dir / PASSWORD_FILE
