"""The objects every Config Store has: rank roots, core classes, apps, specials, permissions.

Seeding is idempotent and runs at every start, so an upgrade adds what a new version
needs without touching anything that exists.
"""

from __future__ import annotations

from ... import uuids as U  # noqa: N812 - the table below reads better short
from ..core.graph import Obj
from ..core.tx import Tx

_ROOTS = [  # (uuid, primary class, rank, name)
    (U.Class.R3Class, None, 4, "Rank 3 class"),
    (U.Class.R2Class, U.Class.R3Class, 3, "Rank 2 class"),
    (U.Class.R1Class, U.Class.R2Class, 2, "Class"),
    (U.Class.Individual, U.Class.R1Class, 1, "Individual"),
]
_CLASSES = {  # rank-1 classes: uuid -> (name, superclass)
    U.Class.App: ("Application", U.Class.Individual),
    U.Class.Special: ("Special object", U.Class.Individual),
    U.Class.Device: ("Sparkplug device", U.Class.Individual),
    U.Class.Schema: ("Metric schema", U.Class.Individual),
    U.Class.ServiceFunction: ("Service function", U.Class.Individual),
    U.Class.Principal: ("Principal", U.Class.Individual),
    U.Class.Permission: ("Permission", U.Class.Individual),
    U.ConfigDBPerm.All: ("ConfigDB permission", U.Class.Permission),
    U.EdgePerm.All: ("Cluster manager permission", U.Class.Permission),
    U.GitPerm.All: ("Git permission", U.Class.Permission),
}
_INDIVIDUALS = {  # class -> {uuid: name}
    U.Class.App: {
        U.App.Registration: "Object registration", U.App.Info: "General object information",
        U.App.ConfigSchema: "Application config schema",
        U.App.SparkplugAddress: "Sparkplug address information",
        U.App.ServiceConfig: "Service config", U.App.ServiceUrl: "Service URL",
    },
    U.Class.Special: {
        U.NULL: "Wildcard", U.Special.Unowned: "Unowned", U.Special.Self: "Self",
        U.Special.Mine: "Mine", U.Special.FactoryPlus: "FactoryPlus",
    },
    U.Class.ServiceFunction: {
        U.Service.ConfigDB: "ConfigDB", U.Service.Auth: "Authorisation",
        U.Service.Directory: "Directory", U.Service.Git: "Git server",
        U.Service.Clusters: "Cluster Manager",
    },
    U.ConfigDBPerm.All: {
        getattr(U.ConfigDBPerm, n): n for n in (
            "ReadApp", "WriteApp", "ListObj", "CreateObj", "CreateSpecificObj", "ReadMembers",
            "WriteMembers", "WriteMemberships", "ReadSubclasses", "WriteSubclasses",
            "WriteSuperclasses", "DeleteObj", "GiveTo", "TakeFrom")
    },
    U.Class.Permission: {
        U.AuthPerm.ReadACL: "ReadACL", U.AuthPerm.WriteACL: "WriteACL",
        U.AuthPerm.ReadKerberos: "ReadKerberos", U.AuthPerm.WriteKerberos: "WriteKerberos",
        U.AuthPerm.Grant: "Grant",
        U.AuthPerm.ReadAudit: "ReadAudit",
    },
    U.EdgePerm.All: {U.EdgePerm.Clusters: "Manage clusters", U.EdgePerm.Secrets: "Manage secrets",
                     U.EdgePerm.Audit: "Read the audit log",
                     U.EdgePerm.Imports: "Import charts and Flux versions",
                     U.EdgePerm.KubeView: "View the Kubernetes API",
                     U.EdgePerm.KubeEdit: "Edit through the Kubernetes API",
                     U.EdgePerm.KubeAdmin: "Administer through the Kubernetes API"},
    U.GitPerm.All: {
        U.GitPerm.Pull: "Pull", U.GitPerm.Push: "Push", U.GitPerm.ManageStorage: "Manage storage",
        U.GitPerm.Create: "Create", U.GitPerm.Delete: "Delete",
    },
}


def _ensure(tx: Tx, uuid: str, klass: str | None, rank: int, name: str) -> bool:
    if tx.graph.get(uuid) is not None:
        return False
    tx.put_object(Obj(uuid, rank, klass, U.Special.Unowned, False, ""))
    if klass is not None:
        tx.set_member(klass, uuid, True)
    tx.put_config(U.App.Info, uuid, {"name": name}, None)  # a new object has no entries
    return True


def seed(tx: Tx) -> None:
    """Create whatever core object is missing."""
    for uuid, klass, rank, name in _ROOTS:
        _ensure(tx, uuid, klass, rank, name)
    for uuid, (name, superclass) in _CLASSES.items():
        if _ensure(tx, uuid, U.Class.R1Class, 1, name):
            tx.set_subclass(superclass, uuid, True)
    for klass, members in _INDIVIDUALS.items():
        for uuid, name in members.items():
            _ensure(tx, uuid, klass, 0, name)
