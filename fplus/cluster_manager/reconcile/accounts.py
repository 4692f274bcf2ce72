"""The principals an edge cluster gets, with exactly the grants it needs.

``flux``: pulls the cluster's repo (Git Pull on the cluster's repo UUID, which is the
cluster UUID). ``sync``: Edge Sync's principal, which may read and write its own cluster's
Edge cluster status entry and nothing else (an object-restricted grant, our extension).
Principals are created without a password; the bootstrap script mints one.

The Config Store lets a principal grant only what it holds itself, so each grant here
must be covered by one of the Cluster Manager's own (:mod:`.manager_account`): plural
Pull on Edge clusters, ReadApp and WriteApp on the Edge cluster status app.
"""

from __future__ import annotations

from fplus.config_store import uuids

from ..vocabulary import EDGE_APP, FLUX, Role
from .configdb import ConfigDB


def grants(role: Role, cluster: str) -> list[dict[str, str]]:
    """The grants ``role`` holds for ``cluster``."""
    if role == FLUX:
        return [{"permission": uuids.GitPerm.Pull, "target": cluster}]
    return [{"permission": uuids.ConfigDBPerm.ReadApp, "target": EDGE_APP, "object": cluster},
            {"permission": uuids.ConfigDBPerm.WriteApp, "target": EDGE_APP, "object": cluster}]


def ensure_account(cs: ConfigDB, role: Role, cluster: str, cluster_name: str,
                   group: str) -> str:
    """Create (or find) the role's principal for a cluster, name it, group it, grant it.

    One request (the Config Store's principal extension). Idempotent: the principal is found
    by name, grants and memberships are set-like, so a crash at any point is mended by
    running this again.
    """
    return cs.create_principal(role.principal_name(cluster_name), klass=uuids.Class.EdgeAccount,
                               label=f"{role.label}: {cluster_name}", groups=[group],
                               grants=grants(role, cluster))


def remove_account(cs: ConfigDB, principal: str) -> None:
    """Drop the principal's credentials and grants, then its object (entries, memberships).

    Both calls ignore an already-missing principal, so this too can be repeated.
    """
    cs.delete_principal(principal)
    cs.delete_object(principal)


def serves(cs: ConfigDB, principal: str, cluster: str) -> bool:
    """True if one of the principal's grants is for ``cluster``."""
    for grant in cs.find_grants(principal=principal):
        found = cs.get_grant(grant)
        if cluster in (found.get("target"), found.get("object")):
            return True
    return False
