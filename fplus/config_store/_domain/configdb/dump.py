"""Loading v2 dumps (``POST /load``, reference §1.7): objects in one transaction, then configs.

A dump is authoritative for the memberships and superclasses of the objects it lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator

from ... import uuids
from ...uuids import UUID_PATTERN as _UUID
from ..common.errors import Conflict, Unprocessable
from ..common.jsonvalue import parse
from ..core.graph import Obj
from ..core.state import Core, Tx
from . import configs
from .schemas import SchemaCache, errors_of

_UUIDS = {"type": "array", "items": {"type": "string", "pattern": _UUID}}
_DUMP = Draft202012Validator({
    "type": "object",
    "required": ["service", "version"],
    "properties": {
        "service": {"const": uuids.Service.ConfigDB},
        "version": {"const": 2},
        "objects": {"type": "object", "propertyNames": {"pattern": _UUID},
                    "additionalProperties": {
                        "type": "object", "propertyNames": {"pattern": _UUID},
                        "additionalProperties": {"type": ["object", "null"], "properties": {
                            "name": {"type": "string"}, "iri": {"type": "string"},
                            "memberOf": _UUIDS, "subclassOf": _UUIDS, "enum": _UUIDS,
                            "powersetOf": {"type": "string", "pattern": _UUID}}}}},
        "configs": {"type": "object", "propertyNames": {"pattern": _UUID},
                    "not": {"required": [uuids.App.Registration]},
                    "additionalProperties": {"type": "object",
                                             "propertyNames": {"pattern": _UUID}}},
    },
})


def load(core: Core, schemas: SchemaCache, caller: str, dump: Any) -> None:
    """Apply a dump; 422 if malformed, 409 if it breaks the object model."""
    errors = errors_of(_DUMP, dump)
    if errors:
        raise Unprocessable("invalid dump: " + "; ".join(errors[:10]), body={"errors": errors})
    with core.transaction() as tx:
        for klass, objs in dump.get("objects", {}).items():
            for uuid, spec in objs.items():
                _load_object(core, tx, caller, klass, uuid, spec or {})
    for app, entries in dump.get("configs", {}).items():
        for obj, value in entries.items():
            try:
                configs.put(core, schemas, caller, app, obj, value)
            except Conflict:
                continue


def _load_object(core: Core, tx: Tx, caller: str, klass: str, uuid: str, spec: dict) -> None:
    graph = core.graph
    cls = graph.get(klass)
    if cls is None or cls.rank < 1:
        raise Conflict(f"dump names unknown class {klass}")
    obj = graph.get(uuid)
    if obj is None:
        owner = uuids.Special.Unowned if core.acl.is_root(caller) else caller
        obj = tx.put_object(Obj(uuid, cls.rank - 1, klass, owner, False, ""))
        tx.set_member(klass, uuid, True)
        if obj.rank >= 1:
            tx.set_subclass(uuids.RANK_ROOTS[obj.rank - 1], uuid, True)
    if "name" in spec:
        stored = tx.w.get_config(uuids.App.Info, uuid)
        info = parse(stored[0]) if stored else {}
        tx.put_config(uuids.App.Info, uuid, {**(info if isinstance(info, dict) else {}),
                                             "name": spec["name"]}, stored)
    if "memberOf" in spec:
        _replace(tx, set(spec["memberOf"]) | {obj.klass or klass},
                 graph.direct_classes(uuid), lambda c, on: tx.set_member(c, uuid, on),
                 lambda c: _rank_ok(core, c, obj.rank + 1))
    if "subclassOf" in spec and obj.rank == 0 and spec["subclassOf"]:
        raise Conflict(f"individual {uuid} cannot have superclasses")
    if "subclassOf" in spec and obj.rank >= 1:
        wanted = set(spec["subclassOf"]) or {uuids.RANK_ROOTS[obj.rank - 1]}
        _replace(tx, wanted, graph.direct_superclasses(uuid),
                 lambda c, on: tx.set_subclass(c, uuid, on),
                 lambda c: _rank_ok(core, c, obj.rank))
    if "enum" in spec:
        members = graph.direct_members(uuid)
        primary = {m for m in members if (o := graph.get(m)) is not None and o.klass == uuid}
        _replace(tx, set(spec["enum"]) | primary, members,
                 lambda m, on: tx.set_member(uuid, m, on),
                 lambda m: _rank_ok(core, m, obj.rank - 1))


def _rank_ok(core: Core, uuid: str, rank: int) -> None:
    found = core.graph.get(uuid)
    if found is None:
        raise Conflict(f"dump refers to unknown object {uuid}")
    if found.rank != rank:
        raise Conflict(f"dump relation with {uuid} breaks the rank rules")


def _replace(tx: Tx, wanted: set[str], current: set[str], setter: Callable[[str, bool], None],
             check: Callable[[str], None]) -> None:
    for other in wanted - current:
        check(other)
        setter(other, True)
    for other in current - wanted:
        setter(other, False)
