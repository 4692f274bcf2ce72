"""The Config Store part of a backup: the two dumps, and loading them into a target.

A target is a fresh stack: its own root principal and, once its services were seeded, its
own ``cluster-manager`` and ``git-server`` principals (new uuids, their passwords in the new
data dirs) and its own Cluster Manager groups. Restoring keeps those: every uuid of the
backup that the target already has under another uuid (a principal of the same name, a
group of the same role in the Cluster Manager's ServiceConfig) is renamed to the target's,
and the target's principals keep their passwords. The backup's Service URL entries are left
out (each service advertises where the target's runs when it starts). Another principal
in the target, or an Edge cluster, makes it not empty: nothing is written then.
"""

from __future__ import annotations

import json
from typing import TypeAlias

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.jsontypes import Doc, JsonObject, as_object, is_object

from .directory import BackupError

Dump: TypeAlias = "dict[str, object]"
"""A ConfigDB or Auth dump (``GET /v2/dump``; ``POST /load`` takes it)."""

CONFIGDB, AUTH = "configdb", "auth"
_SERVICE_CONFIG = (uuids.App.ServiceConfig, uuids.Service.Clusters)


def export(cs: ConfigStoreClient) -> tuple[JsonObject, JsonObject]:
    """The ConfigDB and Auth dumps (``GET /v2/dump``)."""
    return cs.export_dump(CONFIGDB), cs.export_dump(AUTH)


def _names(auth: Doc) -> dict[str, str]:
    return {str(as_object(spec)["name"]): uuid
            for uuid, spec in as_object(auth.get("principals", {})).items()}


def _groups(configdb: Doc) -> dict[str, str]:
    app, obj = _SERVICE_CONFIG
    service = as_object(as_object(configdb.get("configs", {})).get(app, {})).get(obj)
    groups = service.get("group") if is_object(service) else None
    if not is_object(groups):
        return {}
    return {role: uuid for role, g in groups.items()
            if is_object(g) and uuids.is_uuid(uuid := g.get("uuid"))}


def edge_clusters(configdb: Doc) -> list[str]:
    """The Edge clusters a ConfigDB dump holds."""
    return sorted(as_object(as_object(configdb.get("objects", {})).get(
        uuids.Class.EdgeCluster, {})))


def principals(auth: Doc) -> int:
    """How many principals an Auth dump holds."""
    return len(as_object(auth.get("principals")))


def plan(configdb: object, auth: object, target: tuple[Doc, Doc]) -> tuple[Dump, Dump]:
    """The dumps to load into ``target`` (its own dumps): BackupError if it is not empty."""
    if not is_object(configdb) or not is_object(auth):
        raise BackupError("the backup's Config Store dumps are not JSON objects")
    target_configdb, target_auth = target
    clusters = edge_clusters(target_configdb)
    if clusters:
        raise BackupError(f"the target Config Store is not empty: it has {len(clusters)} Edge "
                          "cluster(s); restore into a fresh stack")
    ours, theirs = _names(auth), _names(target_auth)
    strangers = sorted(set(theirs) - set(ours))
    if strangers:
        raise BackupError("the target Config Store is not empty: it has principals the backup "
                          f"does not: {', '.join(strangers)}; restore into a fresh stack")
    renames = {ours[name]: uuid for name, uuid in theirs.items() if ours[name] != uuid}
    target_groups = _groups(target_configdb)
    renames |= {old: target_groups[role] for role, old in _groups(configdb).items()
                if role in target_groups and target_groups[role] != old}
    renamed_configdb, renamed_auth = (_renamed(d, renames) for d in (configdb, auth))
    kept = set(theirs.values())
    return ({**renamed_configdb, "configs": {
                app: entries for app, entries
                in as_object(renamed_configdb.get("configs", {})).items()
                if app != uuids.App.ServiceUrl}},
            {**renamed_auth, "principals": {
                u: p for u, p in as_object(renamed_auth.get("principals", {})).items()
                if u not in kept}})


def _renamed(dump: Doc, renames: dict[str, str]) -> Dump:
    """``dump`` with every occurrence of each old uuid (keys, lists, entry values) replaced:
    uuids are unique strings, so replacing them in the JSON text is exact."""
    text = json.dumps(dump)
    for old, new in renames.items():
        text = text.replace(old, new)
    renamed: Dump = json.loads(text)
    return renamed


def load(cs: ConfigStoreClient, configdb: Doc, auth: Doc) -> None:
    """Load the ConfigDB dump (objects, then entries), then the Auth one (principals'
    objects exist by then)."""
    cs.load_dump(configdb)
    cs.load_dump(auth)
