"""Words both wings of the Cluster Manager use: the edge roles, their Secret names, the apps.

The reconcile wing creates one principal per :class:`Role` for every cluster; the API wing
puts their passwords into the named edge Secrets of the bootstrap script. Neither wing
imports the other: what they share is here and in :mod:`fplus.cluster_manager.model.setup_status`.
"""

from __future__ import annotations

from dataclasses import dataclass

from fplus.config_store import uuids

FLUX_VERSION = "2.7.5"
"""The Flux release the repos are rendered for and the bootstrap script installs."""

CONFIG_APP = uuids.App.EdgeClusterConfiguration
"""What users write per cluster: ``{name, namespace, chart?, bare?, sealedSecrets?,
fluxVersion?, values?, labels?}``."""
STATUS_APP = uuids.App.EdgeClusterSetupStatus
"""What the reconciler writes: :class:`~fplus.cluster_manager.model.setup_status.SetupStatus`."""
EDGE_APP = uuids.App.EdgeClusterStatus
"""What Edge Sync writes from the edge: hosts, sealing certificate, heartbeat."""
REQUEST_APP = uuids.App.EdgeClusterRequest
"""What the cluster API asks the reconciler to do: ``{redeploy?: time, forceDelete?}``."""

FLUX_SECRET = "flux-secrets"  # noqa: S105 - a Secret's name
"""The edge Secret holding the Flux pull credentials (created by the bootstrap script)."""
EDGE_SYNC_SECRET = "edge-sync-credentials"  # noqa: S105 - a Secret's name
"""The edge Secret holding Edge Sync's Config Store credentials."""


@dataclass(frozen=True)
class Role:
    """One kind of edge principal: its key in the setup status and its edge Secret."""

    key: str
    prefix: str
    label: str
    secret: str

    def principal_name(self, cluster_name: str) -> str:
        """The principal's name, e.g. ``op1flux/line-1`` (as ACS names Kerberos principals)."""
        return f"{self.prefix}/{cluster_name}"


FLUX = Role("flux", "op1flux", "Edge flux", FLUX_SECRET)
SYNC = Role("sync", "op1sync", "Edge sync", EDGE_SYNC_SECRET)
ROLES = (FLUX, SYNC)

AFTER_IMPORT = "then redeploy the cluster"
"""How a refusal for want of an imported chart or Flux version ends; an import retries the
clusters whose error says so."""
