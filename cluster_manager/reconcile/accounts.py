"""The principals an edge cluster gets, with exactly the grants it needs.

``flux``: pulls the cluster's repo (Git Pull on the cluster's repo UUID, which is the
cluster UUID). ``sync``: Edge Sync's principal, which may read and write its own cluster's
Edge cluster status entry and nothing else (an object-restricted grant, our extension).
Principals are created without a password; the bootstrap script mints one.
"""

from __future__ import annotations

from dataclasses import dataclass

from config_store import uuids
from config_store.client import ConfigStoreClient


@dataclass(frozen=True)
class Role:
    """One kind of edge principal."""

    key: str
    prefix: str
    label: str

    def principal_name(self, cluster_name: str) -> str:
        """The principal's name, e.g. ``op1flux/line-1`` (as ACS names Kerberos principals)."""
        return f"{self.prefix}/{cluster_name}"

    def grants(self, cluster: str) -> list[dict]:
        """The grants this role holds for ``cluster``."""
        if self.key == "flux":
            return [{"permission": uuids.GitPerm.Pull, "target": cluster}]
        status = uuids.App.EdgeClusterStatus
        return [{"permission": uuids.ConfigDBPerm.ReadApp, "target": status, "object": cluster},
                {"permission": uuids.ConfigDBPerm.WriteApp, "target": status, "object": cluster}]


FLUX = Role("flux", "op1flux", "Edge flux")
SYNC = Role("sync", "op1sync", "Edge sync")
ROLES = (FLUX, SYNC)


def ensure_account(cs: ConfigStoreClient, role: Role, cluster: str, cluster_name: str,
                   group: str) -> str:
    """Create (or find) the role's principal for a cluster, name it, group it, grant it.

    One request (the Config Store's principal extension). Idempotent: the principal is found
    by name, grants and memberships are set-like, so a crash at any point is mended by
    running this again.
    """
    return cs.create_principal(role.principal_name(cluster_name), klass=uuids.Class.EdgeAccount,
                               label=f"{role.label}: {cluster_name}", groups=[group],
                               grants=role.grants(cluster))


def remove_account(cs: ConfigStoreClient, principal: str) -> None:
    """Drop the principal's credentials and grants, then its object (entries, memberships).

    Both calls ignore an already-missing principal, so this too can be repeated.
    """
    cs.delete_principal(principal)
    cs.delete_object(principal)
