"""Entries that belong to an object named in their value (ours, not in ACS).

An *Edge deployment* entry is keyed by the deployment's own object but belongs to the
cluster its ``cluster`` field names: a ReadApp grant on the app restricted to that cluster
(what an edge's Edge Sync account holds) reads it, finds it by search and follows it over
notify, and stops reading it once the entry names another cluster. Only reading follows the
field: writing an entry still needs a grant for the entry's own object (or the app).
"""

from __future__ import annotations

from ... import uuids
from ..core.acl import Acl

SCOPE_FIELDS = {uuids.App.EdgeDeployment: "cluster"}
"""App -> the field of its entries naming the object an entry belongs to."""


def scoped(app: str) -> bool:
    """True if ``app``'s entries belong to an object named in their value."""
    return app.lower() in SCOPE_FIELDS


def scope_of(app: str, value: object) -> str | None:
    """The object ``value`` (an entry of ``app``) belongs to, lower-cased; None if the app
    has no such field or the entry names none."""
    field = SCOPE_FIELDS.get(app.lower())
    found = value.get(field) if field is not None and isinstance(value, dict) else None
    return found.lower() if isinstance(found, str) else None


def may_read(acl: Acl, principal: str | None, app: str, obj: str, value: object) -> bool:
    """May ``principal`` read ``app``'s entry of ``obj``, which holds ``value``?"""
    return acl.check(principal, uuids.ConfigDBPerm.ReadApp, app, obj=obj,
                     scope=scope_of(app, value))


def may_search(acl: Acl, principal: str | None, app: str) -> bool:
    """May ``principal`` read some entry of ``app`` at least? A search then answers those it
    may read (:func:`may_read`), none perhaps."""
    return acl.check(principal, uuids.ConfigDBPerm.ReadApp, app, any_object=True)


def refusal(app: str, obj: str) -> str:
    """What a refused read of ``app``'s entry of ``obj`` says is missing."""
    field = SCOPE_FIELDS.get(app.lower())
    named = f", or on the object its `{field}` field names" if field else ""
    return (f"permission denied: reading this entry needs ReadApp on app {app} (or on its "
            f"entry of object {obj}{named})")
