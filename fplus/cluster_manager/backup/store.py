"""The Config Store part of a backup: the two dumps, and loading them into a target.

A target is a fresh stack: its own root principal and, once its services were seeded, its
own ``cluster-manager`` and ``git-server`` principals (new uuids, their passwords in the new
data dirs) and its own Cluster Manager groups. Restoring keeps those: every uuid of the
backup that the target already has under another uuid (a principal of the same name, a
group of the same role in the Cluster Manager's ServiceConfig) is renamed to the target's,
and the target's principals keep their passwords. The backup's Service URL entries are left
out (each service advertises where the target's runs when it starts). Any other principal
in the target, or any Edge cluster, makes it not empty: nothing is written then.
"""

from __future__ import annotations

import json
from typing import Any

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient

from .directory import BackupError

CONFIGDB, AUTH = "configdb", "auth"
_SERVICE_CONFIG = (uuids.App.ServiceConfig, uuids.Service.Clusters)


def export(cs: ConfigStoreClient) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ConfigDB and Auth dumps (``GET /v2/dump``)."""
    return cs.export_dump(CONFIGDB), cs.export_dump(AUTH)


def _names(auth: dict[str, Any]) -> dict[str, str]:
    return {spec["name"]: uuid for uuid, spec in auth.get("principals", {}).items()}


def _groups(configdb: dict[str, Any]) -> dict[str, str]:
    app, obj = _SERVICE_CONFIG
    service = configdb.get("configs", {}).get(app, {}).get(obj)
    groups = service.get("group") if isinstance(service, dict) else None
    if not isinstance(groups, dict):
        return {}
    return {role: g["uuid"] for role, g in groups.items()
            if isinstance(g, dict) and uuids.is_uuid(g.get("uuid"))}


def _edge_clusters(configdb: dict[str, Any]) -> list[str]:
    return sorted(configdb.get("objects", {}).get(uuids.Class.EdgeCluster, {}))


def plan(configdb: dict[str, Any], auth: dict[str, Any],
         target: tuple[dict[str, Any], dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The dumps to load into ``target`` (its own dumps): BackupError if it is not empty."""
    target_configdb, target_auth = target
    clusters = _edge_clusters(target_configdb)
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
    configdb, auth = (_renamed(d, renames) for d in (configdb, auth))
    configdb = {**configdb, "configs": {app: entries for app, entries
                                        in configdb.get("configs", {}).items()
                                        if app != uuids.App.ServiceUrl}}
    kept = set(theirs.values())
    auth = {**auth, "principals": {u: p for u, p in auth.get("principals", {}).items()
                                   if u not in kept}}
    return configdb, auth


def _renamed(dump: dict[str, Any], renames: dict[str, str]) -> dict[str, Any]:
    """``dump`` with every occurrence of each old uuid (keys, lists, entry values) replaced:
    uuids are unique strings, so replacing them in the JSON text is exact."""
    text = json.dumps(dump)
    for old, new in renames.items():
        text = text.replace(old, new)
    return json.loads(text)


def load(cs: ConfigStoreClient, configdb: dict[str, Any], auth: dict[str, Any]) -> None:
    """Load the ConfigDB dump (objects, then entries), then the Auth one (principals'
    objects exist by then)."""
    cs.load_dump(configdb)
    cs.load_dump(auth)
