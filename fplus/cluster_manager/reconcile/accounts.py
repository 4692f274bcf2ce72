"""The principals an edge cluster gets, with exactly the grants it needs.

``flux``: pulls the cluster's repo (Git Pull on the cluster's repo UUID, which is the
cluster UUID). ``sync``: Edge Sync's principal, which may read and write its own cluster's
Edge cluster status entry and read its own cluster's Edge deployments, nothing else
(object-restricted grants, our extension: an Edge deployment entry belongs to the cluster its
``cluster`` field names, so the grant follows deployments as they come, go and move). The
charts and resource templates it renders them with it reads through its group (seeding).
Principals are created without a password; the bootstrap script mints one.

The Config Store lets a principal grant only what it holds itself, so each grant here
must be covered by one of the Cluster Manager's own (:mod:`.manager_account`): plural
Pull on Edge clusters, ReadApp and WriteApp on the Edge cluster status app, ReadApp on the
Edge deployment app.

:data:`GRANTS` numbers the grant set: an account recorded with an older one (a cluster
commissioned before the set changed, or restored from a backup of then) is granted again
by the next reconcile (:func:`current`).
"""

from __future__ import annotations

from dataclasses import replace

from fplus.config_store import uuids
from fplus.config_store.client import BatchOp, batch

from ..model.apps_and_roles import EDGE_APP, FLUX, Role
from ..model.setup_status import Account
from .configdb import ConfigDB

GRANTS = 2
"""The grant set's number (2: Edge Sync reads its own cluster's Edge deployments only)."""


def grants(role: Role, cluster: str) -> list[dict[str, str]]:
    """The grants ``role`` holds for ``cluster``."""
    if role == FLUX:
        return [{"permission": uuids.GitPerm.Pull, "target": cluster}]
    read, write = uuids.ConfigDBPerm.ReadApp, uuids.ConfigDBPerm.WriteApp
    return [{"permission": read, "target": EDGE_APP, "object": cluster},
            {"permission": write, "target": EDGE_APP, "object": cluster},
            {"permission": read, "target": uuids.App.EdgeDeployment, "object": cluster}]


def current(account: Account) -> bool:
    """True once the account is made and holds the grants of :data:`GRANTS`."""
    return account.done and account.grants >= GRANTS


def account_op(role: Role, cluster: str, cluster_name: str, group: str) -> BatchOp:
    """The batch operation creating (or finding) the role's principal for a cluster, named,
    grouped and granted; its result's body carries the principal's ``uuid``.

    One operation (the Config Store's principal extension). Idempotent: the principal is
    found by name, grants and memberships are set-like, so a crash at any point is mended by
    running it again.
    """
    return batch.create_principal(role.principal_name(cluster_name),
                                  klass=uuids.Class.EdgeAccount,
                                  label=f"{role.label}: {cluster_name}", groups=[group],
                                  grants=grants(role, cluster))


def removal_ops(principal: str, *, gone_ok: bool = False) -> list[BatchOp]:
    """Batch operations dropping the principal's credentials and grants, then its object
    (entries, memberships); an already-missing principal is fine. ``gone_ok``: its object may
    be gone already too (then it is no Edge account any more, and the Config Store refuses
    to delete either with 403, not 404)."""
    ops = [batch.delete_principal(principal), batch.delete_object(principal)]
    return [replace(op, accept=(*op.accept, 403)) for op in ops] if gone_ok else ops


def named_op(role: Role, cluster_name: str) -> BatchOp:
    """A batch operation finding the principal with the role's name for a cluster (its
    result's body is the uuid; 404: none)."""
    return batch.find_principal(role.principal_name(cluster_name))


def serves(cs: ConfigDB, principal: str, cluster: str) -> bool:
    """True if one of the principal's grants is for ``cluster``."""
    for grant in cs.find_grants(principal=principal):
        found = cs.get_grant(grant)
        if cluster in (found.get("target"), found.get("object")):
            return True
    return False
